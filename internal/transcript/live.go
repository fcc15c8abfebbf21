package transcript

import (
	"bytes"
	"io"
)

// LiveRecords stands between Stream and a callback (Fn) that only cares about the records
// of the conversation as it ends: it does not pass on a record that a later record drops
// from it (a Codex compaction: Transcript.Compacts). Stream cannot know that of a record
// when it reads it, so the newest records are held, up to Max bytes of their lines, and
// those a compaction drops are forgotten unseen; past Max the oldest go on to Fn anyway.
// Records of a format that does not compact go straight on. The records Fn gets are in
// Stream's order. Call Flush once Stream has returned.
//
// Half of a long Codex rollout commonly lies before its last compaction, and every tier
// counted it and read its results in its first pass for nothing.
type LiveRecords struct {
	Fn  func(seq int, rec *Transcript) error
	Max int // bytes of lines held; 0 means MaxHeld
	// Compaction, when positive, is the offset of a record known to compact
	// (LastCompaction, read ahead in a file): the records before it that it drops are
	// forgotten as they come, not held. The caller checks that the record there does
	// compact (the file may have changed since).
	Compaction int
	// Known says the rollout was looked at from its end before its first record
	// (LastCompaction): its last compaction is Compaction, or there is none when that is
	// 0. Records are then passed on as they come, not held: those before Compaction that
	// it drops are forgotten, and no other record can be dropped unless the file grew a
	// compaction after it was looked at, in which case the records before that one have
	// been passed on already. So Known is for a caller that only needs the records of the
	// conversation among those it gets (measure.Streamed, whose tally reads the records
	// the outline keeps; a tier's Record, cli.Filter.LiveRecords, whose plan looks up the
	// conversation's blocks), and it lets that caller work on each record while the
	// reading goes on, instead of holding them all to the end.
	Known bool
	// Reread, when set, reads a record's line again once Stream has returned (from the
	// file, or the spool of stdin): a record held past Max then waits without its line
	// instead of going on to Fn, and Flush reads its line again only if it is still part of
	// the conversation. Fn then gets the records that waited first, in order, and the
	// others in order after them.
	Reread func(line Span) (string, error)
	// KeepPrior passes on, besides, the records of the conversation the last compaction
	// replaced (those since the compaction before it): the conversation up to the newest
	// usage figure before the compaction (Outline.Prior) tells the part of the prompt no
	// record holds until a figure comes after it (measure.Streamed). They are held until
	// the next compaction (which forgets them) or the last (which passes them on).
	KeepPrior bool

	held    []heldRecord // oldest first
	heldLen int
	waiting []heldRecord // held past Max, without their lines (Reread)
	prior   []heldRecord // KeepPrior: the records the newest compaction so far dropped
	figure  bool         // KeepPrior: a usage figure came since the newest compaction so far
}

type heldRecord struct {
	seq  int
	rec  *Transcript
	line Span
}

// Record is the Stream callback.
func (l *LiveRecords) Record(seq int, rec *Transcript) error {
	if !rec.Format.Compacts() {
		return l.Fn(seq, rec)
	}
	if l.KeepPrior && l.Compaction > 0 && rec.Compacts() {
		if rec.Base < l.Compaction || !l.figure {
			l.prior = l.prior[:0] // a later compaction replaces what this one kept
		} else if err := l.passPrior(); err != nil {
			return err
		}
		l.figure = false
	}
	if l.KeepPrior && !l.figure && len(rec.Records) == 1 && rec.Records[0].Type == "event_msg" {
		_, _, l.figure = RecordUsage(rec.Format, rec.Doc)
	}
	if rec.Base < l.Compaction && dropped(rec.Messages) {
		if l.KeepPrior {
			l.prior = append(l.prior, heldRecord{seq, rec, Span{rec.Base, rec.Base + len(rec.Doc)}})
		}
		return nil
	}
	if l.Known {
		return l.Fn(seq, rec)
	}
	if rec.Compacts() {
		if err := l.compact(); err != nil {
			return err
		}
	}
	l.held = append(l.held, heldRecord{seq, rec, Span{rec.Base, rec.Base + len(rec.Doc)}})
	l.heldLen += len(rec.Doc)
	max := l.Max
	if max == 0 {
		max = MaxHeld
	}
	for l.heldLen > max {
		if l.Reread == nil {
			if err := l.pass(1); err != nil {
				return err
			}
			continue
		}
		h := l.held[0]
		l.held[0] = heldRecord{}
		l.held = l.held[1:]
		l.heldLen -= len(h.rec.Doc)
		lineless := *h.rec // (another LiveRecords may hold the same record, with its line)
		lineless.Doc = ""
		l.waiting = append(l.waiting, heldRecord{h.seq, &lineless, h.line})
	}
	return nil
}

// passPrior passes on the records kept of the conversation the last compaction replaced
// (KeepPrior), reading those held without their lines again.
func (l *LiveRecords) passPrior() error {
	for i, h := range l.prior {
		l.prior[i] = heldRecord{}
		if h.rec.Doc == "" && h.line.Len() > 0 {
			doc, err := l.Reread(h.line)
			if err == nil && len(doc) != h.line.Len() {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				return err
			}
			h.rec.Doc = doc
		}
		if err := l.Fn(h.seq, h.rec); err != nil {
			return err
		}
	}
	l.prior = nil
	return nil
}

// Flush passes on the records still held, and those that waited (Reread).
func (l *LiveRecords) Flush() error {
	if err := l.passPrior(); err != nil {
		return err
	}
	for i, w := range l.waiting {
		doc, err := l.Reread(w.line)
		if err == nil && len(doc) != w.line.Len() {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		w.rec.Doc = doc
		l.waiting[i] = heldRecord{}
		if err := l.Fn(w.seq, w.rec); err != nil {
			return err
		}
	}
	l.waiting = nil
	return l.pass(len(l.held))
}

// pass passes the n oldest records held on to Fn.
func (l *LiveRecords) pass(n int) error {
	for i := range n {
		h := l.held[i]
		l.held[i] = heldRecord{} // let go of the line
		l.heldLen -= len(h.rec.Doc)
		if err := l.Fn(h.seq, h.rec); err != nil {
			l.held = l.held[i+1:]
			return err
		}
	}
	l.held = l.held[n:]
	return nil
}

// compact forgets the records held that a compaction drops from the conversation: those
// carrying a message, none of them a header message (codexParser.compact keeps those).
// The others go on to Fn, or wait on.
func (l *LiveRecords) compact() error {
	keep := l.KeepPrior && l.figure // the records dropped make up the prior conversation
	l.prior, l.figure = l.prior[:0], false
	live := l.waiting[:0]
	for _, w := range l.waiting {
		if !dropped(w.rec.Messages) {
			live = append(live, w)
		} else if keep {
			l.prior = append(l.prior, w)
		}
	}
	clear(l.waiting[len(live):])
	l.waiting = live
	for i, h := range l.held {
		l.held[i] = heldRecord{}
		if dropped(h.rec.Messages) {
			if keep {
				l.prior = append(l.prior, h)
			}
			continue
		}
		if err := l.Fn(h.seq, h.rec); err != nil {
			l.held = l.held[i+1:]
			return err
		}
	}
	l.held, l.heldLen = l.held[:0], 0
	return nil
}

func dropped(ms []Message) bool {
	for _, m := range ms {
		if m.Header {
			return false
		}
	}
	return len(ms) > 0
}

// MaxHeld is how many bytes of lines LiveRecords holds by default: a document no larger
// needs no LastCompaction.
const MaxHeld = 16 << 20

// LastCompaction finds the last record of a Codex rollout, the size bytes of r, that
// compacts (Transcript.Compacts) and returns its offset, or -1 when there is none. It reads
// r backwards from the end for a record whose type is spelled "compacted" without spaces
// (Codex writes it so; one spelled otherwise is not found, which only costs counting) and
// reads that line as Stream would. A large rollout commonly has most of its bytes before
// its last compaction: more than LiveRecords holds.
func LastCompaction(r io.ReaderAt, size int64) (int64, error) {
	// Small chunks: the buffer is new memory, and each page of it a page fault, where
	// a read costs a few microseconds.
	const chunk = 64 << 10
	pattern := []byte(`"compacted"`)
	buf := make([]byte, chunk+len(pattern))
	var found []int64
	for end := size; end > 0; {
		start := max(0, end-chunk)
		n := int(min(size, end+int64(len(pattern)-1)) - start) // overlap the next chunk
		b := buf[:n]
		if _, err := r.ReadAt(b, start); err != nil && err != io.EOF {
			return -1, err
		}
		// Forwards within the chunk (bytes.Index is the fast one), the last first.
		found = found[:0]
		for i := 0; ; {
			j := bytes.Index(b[i:], pattern)
			if j < 0 {
				break
			}
			found = append(found, start+int64(i+j))
			i += j + 1
		}
		for k := len(found) - 1; k >= 0; k-- {
			if at, ok, err := compactsAt(r, size, found[k]); err != nil || ok {
				return at, err
			}
		}
		end = start
	}
	return -1, nil
}

// compactsAt reads the line holding offset at and reports where it starts, when it is a
// record of a Codex rollout that compacts, read as Stream reads it.
func compactsAt(r io.ReaderAt, size, at int64) (int64, bool, error) {
	start, end := at, at
	var b [4096]byte
	for start > 0 { // back to the line's start
		n := min(int64(len(b)), start)
		if _, err := r.ReadAt(b[:n], start-n); err != nil && err != io.EOF {
			return -1, false, err
		}
		if i := bytes.LastIndexByte(b[:n], '\n'); i >= 0 {
			start = start - n + int64(i) + 1
			break
		}
		start -= n
	}
	for end < size { // on to its end
		n := min(int64(len(b)), size-end)
		if _, err := r.ReadAt(b[:n], end); err != nil && err != io.EOF {
			return -1, false, err
		}
		if i := bytes.IndexByte(b[:n], '\n'); i >= 0 {
			end += int64(i)
			break
		}
		end += n
	}
	line := make([]byte, end-start)
	if _, err := r.ReadAt(line, start); err != nil && err != io.EOF {
		return -1, false, err
	}
	l := string(bytes.TrimSuffix(line, []byte{'\r'}))
	if firstNonSpace(l) < 0 || bytes.IndexByte(line, 0) >= 0 || !Valid(l) || l[firstNonSpace(l)] != '{' {
		return -1, false, nil
	}
	return start, recordValue(l, 0).get("type").str() == "compacted", nil
}
