// Package index owns ctx-recall's search index, kept beside the offload store
// (internal/store) in DIR/recall/: an inverted index of the words and identifiers of every
// stored text (terms.go), in immutable segment files (segment.go), each covering byte
// ranges of the store's index.jsonl, which stays the one record of what is stored.
//
// The index is derived data: it is brought up to date from index.jsonl whenever it is
// behind (Update, which the tiers call once they have appended their lines, and Open,
// which ctx-recall calls), rebuilt whole when index.jsonl is not the one it was made from,
// and a reader that cannot write it indexes what is missing in memory. Writers never
// change a file: each writes a new segment through safefile (temp file, rename), so
// several processes may update one index at once without a lock; two that index the same
// lines write two segments, of which readers take one. Small segments are merged (at most
// mergeBytes of text each) and the merged ones removed.
//
// Memory is bounded: a segment is built from at most flushBytes of text (its postings in
// memory, about 2-3 times that), and a search reads the term table a step at a time, the
// postings of the query's terms and the documents' lengths, never a whole segment.
package index

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/store"
)

// Dir is the index's folder inside the store.
const Dir = "recall"

const (
	segPrefix = "seg-"
	segSuffix = ".rix"
	// headSize is how much of the start of index.jsonl names it (headHash).
	headSize = 4096
	// flushBytes is the most text one segment is built from.
	flushBytes = 32 << 20
	// maxChunkPostings bounds the postings room made ready for one chunk before its texts
	// are read (more grows as it is filled): a chunk's text is under 2 × flushBytes, at
	// the 1 a 16 bytes assumed before any text is seen.
	maxChunkPostings = 2 * flushBytes / 16
	// mergeAt is how many small segments (under flushBytes of text) there may be before
	// they are merged.
	mergeAt = 8
)

// Index is a store's index, open for searching.
type Index struct {
	st    *store.Store
	jsonl *os.File // the store's index.jsonl; nil when there is none
	size  int64    // its size when the index was opened
	segs  []*segment
	// Built counts the bytes of text indexed while opening (catching up).
	Built int64
}

// Update brings the index of the store up to date with its index.jsonl, writing what it
// indexes. Tiers call it after they append lines.
func Update(st *store.Store) error { return UpdateCounted(st, nil) }

// Counted is one stored text's terms, counted from its bytes while the caller had them
// (Count), so that indexing it needs no reading back of the file: a first clear of a
// session stores hundreds of files, and reading each back (and hashing it to check it)
// was a third of ctx-snip's work on a store in memory.
type Counted struct {
	terms     []uint64 // each distinct term, in the order of its first use
	tf        []uint32 // its frequency
	length    int      // how many terms
	textBytes int
}

// Count counts the terms of a text about to be stored.
func Count(text []byte) *Counted {
	c := counters.Get().(*counter)
	defer counters.Put(c)
	n := c.count(text)
	k := &Counted{terms: make([]uint64, len(c.used)), tf: make([]uint32, len(c.used)), length: n, textBytes: len(text)}
	for j, i := range c.used {
		k.terms[j], k.tf[j] = c.keys[i], c.tf[i]
	}
	return k
}

// counters are Count's tables, kept between texts as build keeps one per worker.
var counters = sync.Pool{New: func() any { return newCounter() }}

// UpdateCounted is Update for a caller that counted the terms of the texts it stored
// (Count), by their hashes: a line of index.jsonl that names one of them is indexed from
// its count, the others from the file. The segments are the same bytes either way.
func UpdateCounted(st *store.Store, counted map[string]*Counted) error {
	ix, err := openCounted(st, true, counted)
	if err != nil {
		return err
	}
	return ix.Close()
}

// Open opens the store's index for searching, indexing first what index.jsonl has and
// the index lacks: written into the index when write is set and the folder can be
// written, else held in memory for this search.
func Open(st *store.Store, write bool) (*Index, error) { return openCounted(st, write, nil) }

// openCounted is Open, indexing the texts of counted from their counts.
func openCounted(st *store.Store, write bool, counted map[string]*Counted) (ix *Index, err error) {
	ix = &Index{st: st}
	defer func() {
		if err != nil {
			ix.Close()
		}
	}()
	f, err := safefile.Open(filepath.Join(st.Dir(), store.IndexName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ix, nil // nothing stored yet
	case err != nil:
		return nil, fmt.Errorf("store %q: %s: %w", st.Dir(), store.IndexName, err)
	}
	ix.jsonl = f
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ix.size = fi.Size()
	headLen := int(min(ix.size, headSize))
	head := make([]byte, headLen)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(headLen)), head); err != nil {
		return nil, fmt.Errorf("store %q: read %s: %w", st.Dir(), store.IndexName, err)
	}
	dir := filepath.Join(st.Dir(), Dir)
	for try := 0; ; try++ {
		segs, stale, err := loadSegments(dir, head, ix.size)
		if err != nil && try < 3 {
			continue // a segment merged away while it was listed: list again
		}
		if err != nil {
			return nil, err
		}
		ix.segs = segs
		if write {
			for _, name := range stale {
				os.Remove(filepath.Join(dir, name))
			}
		}
		break
	}
	gaps := uncovered(ix.segs, ix.size)
	if len(gaps) == 0 {
		if write {
			ix.merge(dir, head)
		}
		return ix, nil
	}
	canWrite := write && safefile.MkdirAll(dir) == nil
	for _, g := range gaps {
		err := ix.build(g, head, counted, func(data []byte) error {
			if canWrite {
				name, err := writeSegment(dir, data)
				if err == nil {
					seg, err := openFile(dir, name)
					if err == nil {
						ix.segs = append(ix.segs, seg)
						return nil
					}
				}
				canWrite = false // read-only, full: keep the rest in memory
			}
			seg, err := openSegment("", bytes.NewReader(data), int64(len(data)))
			if err != nil {
				return err
			}
			ix.segs = append(ix.segs, seg)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if canWrite {
		ix.merge(dir, head)
	}
	return ix, nil
}

// Close closes the index's files.
func (ix *Index) Close() error {
	for _, s := range ix.segs {
		if s.close != nil {
			s.close()
		}
	}
	ix.segs = nil
	if ix.jsonl != nil {
		ix.jsonl.Close()
		ix.jsonl = nil
	}
	return nil
}

func headHash(head []byte) uint64 {
	h := fnv.New64a()
	h.Write(head)
	return h.Sum64()
}

func isSegment(name string) bool {
	return strings.HasPrefix(name, segPrefix) && strings.HasSuffix(name, segSuffix)
}

// loadSegments opens the segments of dir that belong to index.jsonl as it is now (head,
// size), fewest first among those that cover the same lines; stale names those made from
// another index.jsonl.
func loadSegments(dir string, head []byte, size int64) (segs []*segment, stale []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var all []*segment
	for _, e := range entries {
		if !isSegment(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		s, err := openFile(dir, e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			for _, s := range all {
				s.close()
			}
			return nil, nil, err
		}
		if err != nil {
			stale = append(stale, e.Name()) // not one this version reads, or damaged
			continue
		}
		if s.headLen > len(head) || headHash(head[:s.headLen]) != s.headHash || spansEnd(s.spans) > size {
			stale = append(stale, e.Name())
			s.close()
			continue
		}
		all = append(all, s)
	}
	// The largest first, so that a merged segment is taken rather than the ones it merged;
	// a segment whose lines another already covers is left out.
	sort.SliceStable(all, func(i, j int) bool { return spansLen(all[i].spans) > spansLen(all[j].spans) })
	var covered []span
	for _, s := range all {
		if coveredAll(covered, s.spans) {
			s.close()
			stale = append(stale, s.name) // a copy of lines another covers
			continue
		}
		if overlaps(covered, s.spans) {
			// part of it is elsewhere: a merge raced another writer; the lines it alone
			// covers are indexed again rather than counted twice
			s.close()
			continue
		}
		covered = append(covered, s.spans...)
		segs = append(segs, s)
	}
	return segs, stale, nil
}

func openFile(dir, name string) (*segment, error) {
	f, err := safefile.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s, err := openSegment(name, f, fi.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	s.close = f.Close
	return s, nil
}

func spansLen(ss []span) int64 {
	n := int64(0)
	for _, s := range ss {
		n += s.end - s.start
	}
	return n
}

func spansEnd(ss []span) int64 {
	n := int64(0)
	for _, s := range ss {
		n = max(n, s.end)
	}
	return n
}

func normalize(ss []span) []span {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b span) int { return int(a.start - b.start) })
	var out []span
	for _, s := range ss {
		if s.end <= s.start {
			continue
		}
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

func coveredAll(have, want []span) bool {
	have = normalize(have)
	for _, w := range want {
		ok := false
		for _, h := range have {
			if h.start <= w.start && w.end <= h.end {
				ok = true
				break
			}
		}
		if !ok && w.end > w.start {
			return false
		}
	}
	return true
}

func overlaps(have, want []span) bool {
	for _, w := range want {
		for _, h := range have {
			if w.start < h.end && h.start < w.end {
				return true
			}
		}
	}
	return false
}

// uncovered is what of [0, size) no segment covers.
func uncovered(segs []*segment, size int64) []span {
	var all []span
	for _, s := range segs {
		all = append(all, s.spans...)
	}
	all = normalize(all)
	var gaps []span
	at := int64(0)
	for _, s := range all {
		if s.start > at {
			gaps = append(gaps, span{at, s.start})
		}
		at = max(at, s.end)
	}
	if at < size {
		gaps = append(gaps, span{at, size})
	}
	return gaps
}

// writeSegment writes a new segment file under a name no other writer uses.
func writeSegment(dir string, data []byte) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	name := segPrefix + hex.EncodeToString(rnd[:]) + segSuffix
	return name, safefile.WriteFile(filepath.Join(dir, name), data)
}

// chunk is lines of index.jsonl one segment is built from: their span and entries.
type chunk struct {
	sp      span
	entries []lineEntry
	text    int64 // the bytes of its stored texts, as their lines say
}

// lineEntry is one line of index.jsonl: where it is and the stored file it names ("" when
// it names none: a line cut short, edited, or of another kind).
type lineEntry struct {
	off  int64
	size uint32
	hash string
}

// build indexes the whole lines of index.jsonl in g, in chunks of about flushBytes of
// stored text, each chunk a segment built on a core of its own, handed to done as it is
// made (done is called by one goroutine at a time). A text in counted is not read.
func (ix *Index) build(g span, head []byte, counted map[string]*Counted, done func([]byte) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(ix.jsonl, g.start, g.end-g.start), 1<<16)
	workers := max(1, runtime.GOMAXPROCS(0))
	chunks := make(chan chunk)
	var mu sync.Mutex                 // done, ix.Built, firstErr, seenPostings, seenBytes
	var seenPostings, seenBytes int64 // postings and bytes of text of the segments made
	var firstErr error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	// The workers count their texts at once, and make their segments one at a time,
	// sharing the sort's room: a segment of flushBytes of text holds about 20 MB of
	// postings, and its sort as much again, which two workers at once added to a run
	// that holds its whole input (ctx-snip's), over the soft memory limit (cli.tuneGC),
	// where the collector runs without a pause.
	var encodeMu sync.Mutex
	var sortTmp []posting
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCounter()
			rd := ix.st.Reader() // (a text read is counted, then let go)
			defer rd.Close()
			var pairs []posting // a chunk's, reused by the next
			for ch := range chunks {
				if failed() {
					continue
				}
				b := newBuilder()
				b.spans = []span{ch.sp}
				// room for the postings: those of the texts counted, and of the others as
				// many a byte as in the texts seen so far (one a 16 bytes before any),
				// with a tenth more; past it, addCounted doubles it
				want, countedBytes := 0, int64(0)
				for _, e := range ch.entries {
					if k := counted[e.hash]; k != nil && e.hash != "" {
						want += len(k.terms)
						countedBytes += int64(k.textBytes)
					}
				}
				perByte := 1.0 / 16
				mu.Lock()
				if seenBytes > 0 {
					perByte = float64(seenPostings) / float64(seenBytes) * 1.1
				}
				mu.Unlock()
				// (ch.text is what the index's lines claim: a damaged line may claim
				// anything, so the estimate is held to what a chunk can need)
				guess := min(float64(max(0, ch.text-countedBytes))*perByte, maxChunkPostings)
				want = min(want+int(guess), maxChunkPostings)
				if cap(pairs) < want {
					pairs = make([]posting, 0, want)
				}
				b.pairs = pairs[:0]
				for _, e := range ch.entries {
					if e.hash == "" {
						continue
					}
					var d doc
					hex.Decode(d.hash[:], []byte(e.hash))
					d.lineOff, d.lineLen = e.off, e.size
					if k := counted[e.hash]; k != nil {
						b.addTerms(d, k.terms, k.tf, k.length, k.textBytes)
						continue
					}
					data, err := rd.Get(e.hash)
					if err != nil {
						continue // gone or damaged: nothing to find in it
					}
					n := c.count(data)
					b.addCounted(d, c, n, len(data))
				}
				encodeMu.Lock()
				b.sortTmp = sortTmp
				data := b.encode(len(head), headHash(head))
				sortTmp = b.sortTmp
				encodeMu.Unlock()
				pairs = b.pairs
				mu.Lock()
				if firstErr == nil {
					firstErr = done(data)
					ix.Built += b.textBytes
					seenPostings += int64(len(b.pairs))
					seenBytes += b.textBytes
				}
				mu.Unlock()
			}
		}()
	}
	var readErr error
	ch := chunk{sp: span{g.start, g.start}}
	var text int64
	at := g.start
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// a last line not ended yet is being written: the next update takes it
			if err != io.EOF {
				readErr = err
			}
			break
		}
		e := lineEntry{off: at, size: uint32(len(line))}
		at += int64(len(line))
		var ent store.Entry
		if body := bytes.TrimSpace(line); len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &ent) == nil && store.ValidHash(ent.Hash) {
			e.hash = ent.Hash
			text += int64(min(max(ent.Bytes, 0), flushBytes)) // a larger claim flushes the chunk as well
		}
		ch.entries = append(ch.entries, e)
		ch.sp.end = at
		if text >= flushBytes {
			ch.text = text
			chunks <- ch
			ch, text = chunk{sp: span{at, at}}, 0
		}
		if failed() {
			break
		}
	}
	if ch.sp.end > ch.sp.start {
		ch.text = text
		chunks <- ch
	}
	close(chunks)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return readErr
}

// counter counts the terms of one text at a time: an open-addressing table of hashes (0
// marks a free slot: Terms never makes it), cleared between texts, which costs a few nanoseconds a term where a map costs tens.
type counter struct {
	keys  []uint64
	tf    []uint32
	used  []int32 // slots in use, in the order they were taken
	mask  uint64
	terms []uint64 // the text's terms, in order (appendTerms)
}

func newCounter() *counter {
	c := &counter{}
	c.resize(1 << 12)
	return c
}

func (c *counter) resize(n int) {
	keys, tf, used := c.keys, c.tf, c.used
	c.keys, c.tf, c.used, c.mask = make([]uint64, n), make([]uint32, n), make([]int32, 0, n/2), uint64(n-1)
	for _, i := range used {
		c.put(keys[i], tf[i])
	}
}

func (c *counter) put(h uint64, n uint32) {
	i := (h * 0x9E3779B97F4A7C15) >> 32 & c.mask
	for {
		switch c.keys[i] {
		case h:
			c.tf[i] += n
			return
		case 0:
			c.keys[i], c.tf[i] = h, n
			c.used = append(c.used, int32(i))
			if uint64(len(c.used))*2 > c.mask {
				c.resize(2 * int(c.mask+1))
			}
			return
		}
		i = (i + 1) & c.mask
	}
}

// count counts the terms of text, forgetting the last text's, and returns how many there
// are.
func (c *counter) count(text []byte) int {
	for _, i := range c.used {
		c.keys[i], c.tf[i] = 0, 0
	}
	c.used = c.used[:0]
	c.terms = appendTerms(c.terms[:0], text)
	n := len(c.terms)
	for _, h := range c.terms {
		c.put(h, 1)
	}
	if cap(c.terms) > maxTermsKept {
		c.terms = nil
	}
	return n
}

// maxTermsKept is the most terms a counter keeps room for between texts (a long text's
// are let go).
const maxTermsKept = 1 << 16

// addCounted adds a document whose terms c counted.
func (b *builder) addCounted(d doc, c *counter, length int, textBytes int) {
	id := b.addDoc(d, length, textBytes)
	if n := len(b.pairs) + len(c.used); n > cap(b.pairs) {
		// doubled, not grown by a quarter as append grows a long list: each growth
		// copies the list, and lets the old one go to the collector
		b.pairs = append(make([]posting, 0, max(2*cap(b.pairs), n)), b.pairs...)
	}
	for _, i := range c.used {
		b.pairs = append(b.pairs, posting{c.keys[i], uint64(id)<<32 | uint64(c.tf[i])})
	}
}

// addTerms adds a document whose terms (in the order of first use) and their frequencies
// were counted before (Count): the postings addCounted would add.
func (b *builder) addTerms(d doc, terms []uint64, tf []uint32, length int, textBytes int) {
	id := b.addDoc(d, length, textBytes)
	for j, h := range terms {
		b.pairs = append(b.pairs, posting{h, uint64(id)<<32 | uint64(tf[j])})
	}
}

// addDoc adds a document's entry and length, and returns its id.
func (b *builder) addDoc(d doc, length int, textBytes int) uint32 {
	id := uint32(len(b.docs))
	b.docs = append(b.docs, d)
	b.lens = append(b.lens, uint32(length))
	b.totalLen += int64(length)
	b.textBytes += int64(textBytes)
	return id
}

// merge merges the small segments (under flushBytes of text each) when there are more
// than mergeAt, into segments of at most flushBytes of text, and removes the merged ones.
// Best effort: an error leaves the segments as they are.
func (ix *Index) merge(dir string, head []byte) {
	var small []*segment
	for _, s := range ix.segs {
		if s.name != "" && s.textBytes < flushBytes {
			small = append(small, s)
		}
	}
	if len(small) <= mergeAt {
		return
	}
	sort.Slice(small, func(i, j int) bool { return small[i].textBytes < small[j].textBytes })
	var group []*segment
	var total int64
	for _, s := range small {
		if total+s.textBytes > flushBytes && len(group) > 1 {
			break
		}
		group = append(group, s)
		total += s.textBytes
	}
	if len(group) < 2 {
		return
	}
	b := newBuilder()
	for _, s := range group {
		if err := b.addSegment(s); err != nil {
			return
		}
	}
	b.spans = normalize(b.spans)
	name, err := writeSegment(dir, b.encode(len(head), headHash(head)))
	if err != nil {
		return
	}
	merged, err := openFile(dir, name)
	if err != nil {
		return
	}
	keep := ix.segs[:0]
	for _, s := range ix.segs {
		if slices.Contains(group, s) {
			s.close()
			os.Remove(filepath.Join(dir, s.name))
			continue
		}
		keep = append(keep, s)
	}
	ix.segs = append(keep, merged)
}

// addSegment adds every document of s, with its postings, to b.
func (b *builder) addSegment(s *segment) error {
	docs, err := s.allDocs()
	if err != nil {
		return err
	}
	if err := s.loadLens(); err != nil {
		return err
	}
	base := uint32(len(b.docs))
	for i, d := range docs {
		b.docs = append(b.docs, d)
		b.lens = append(b.lens, s.lens[i])
	}
	b.textBytes += s.textBytes
	b.totalLen += s.totalLen
	b.spans = append(b.spans, s.spans...)
	var e [termSize]byte
	for t := 0; t < s.nTerms; t++ {
		if _, err := s.r.ReadAt(e[:], s.termsOff+int64(termSize*t)); err != nil {
			return err
		}
		le := binary.LittleEndian
		h := le.Uint64(e[:8])
		off, df := int64(le.Uint64(e[8:16])), int(le.Uint32(e[16:]))
		err := s.postings(off, df, func(id, tf int) {
			b.pairs = append(b.pairs, posting{h, uint64(base+uint32(id))<<32 | uint64(tf)})
		})
		if err != nil {
			return err
		}
	}
	return nil
}
