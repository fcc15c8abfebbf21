package transcript

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
	Max int // bytes of lines held; 0 means 16 MB

	held    []heldRecord // oldest first
	heldLen int
}

type heldRecord struct {
	seq int
	rec *Transcript
}

// Record is the Stream callback.
func (l *LiveRecords) Record(seq int, rec *Transcript) error {
	if !rec.Format.Compacts() {
		return l.Fn(seq, rec)
	}
	if rec.Compacts() {
		if err := l.compact(); err != nil {
			return err
		}
	}
	l.held = append(l.held, heldRecord{seq, rec})
	l.heldLen += len(rec.Doc)
	max := l.Max
	if max == 0 {
		max = 16 << 20
	}
	for l.heldLen > max {
		if err := l.pass(1); err != nil {
			return err
		}
	}
	return nil
}

// Flush passes on the records still held.
func (l *LiveRecords) Flush() error { return l.pass(len(l.held)) }

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
// The others go on to Fn.
func (l *LiveRecords) compact() error {
	for i, h := range l.held {
		l.held[i] = heldRecord{}
		if dropped(h.rec.Messages) {
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
