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
func Update(st *store.Store) error {
	ix, err := open(st, true)
	if err != nil {
		return err
	}
	return ix.Close()
}

// Open opens the store's index for searching, indexing first what index.jsonl has and
// the index lacks: written into the index when write is set and the folder can be
// written, else held in memory for this search.
func Open(st *store.Store, write bool) (*Index, error) { return open(st, write) }

func open(st *store.Store, write bool) (ix *Index, err error) {
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
		err := ix.build(g, head, func(data []byte) error {
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

// item is one stored text to index.
type item struct {
	d    doc
	text []byte
	tf   map[uint64]uint32
	n    int
}

// build indexes the whole lines of index.jsonl in g, handing each segment's bytes to
// done as it fills. Stored texts are read and their terms counted on every core, and
// added in the order of their lines.
func (ix *Index) build(g span, head []byte, done func([]byte) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(ix.jsonl, g.start, g.end-g.start), 1<<16)
	workers := max(1, runtime.GOMAXPROCS(0))
	in := make(chan *item, 2*workers)
	out := make(chan *item, 2*workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range in {
				it.tf = map[uint64]uint32{}
				Terms(it.text, func(h uint64) { it.tf[h]++; it.n++ })
				out <- it
			}
		}()
	}
	// lines are read here, texts read and counted by the workers, added in order below
	type pending struct {
		it  *item
		end int64
	}
	order := make(chan pending, 4*workers)
	readErr := make(chan error, 1)
	go func() {
		defer close(in)
		defer close(order)
		at := g.start
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				// a last line not ended yet is being written: the next update takes it
				if err == io.EOF {
					err = nil
				}
				readErr <- err
				return
			}
			off := at
			at += int64(len(line))
			it := &item{d: doc{lineOff: off, lineLen: uint32(len(line))}}
			var e store.Entry
			body := bytes.TrimSpace(line)
			if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &e) == nil && store.ValidHash(e.Hash) {
				if data, err := ix.st.Get(e.Hash); err == nil {
					hex.Decode(it.d.hash[:], []byte(e.Hash))
					it.text = data
				}
			}
			order <- pending{it, at}
			if it.text != nil {
				in <- it
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	b := newBuilder()
	b.spans = []span{{g.start, g.start}}
	flush := func() error {
		if b.spans[0].end == b.spans[0].start {
			return nil
		}
		data := b.encode(len(head), headHash(head))
		if err := done(data); err != nil {
			return err
		}
		end := b.spans[0].end
		b = newBuilder()
		b.spans = []span{{end, end}}
		return nil
	}
	// texts come back out of order; each is added when its turn comes
	ready := map[*item]bool{}
	var firstErr error
	for p := range order {
		if p.it.text != nil {
			for !ready[p.it] {
				it, ok := <-out
				if !ok {
					break
				}
				ready[it] = true
			}
			delete(ready, p.it)
			if firstErr == nil {
				b.add(p.it.d, p.it.tf, p.it.n, len(p.it.text))
				ix.Built += int64(len(p.it.text))
			}
			p.it.text, p.it.tf = nil, nil
		}
		b.spans[0].end = p.end
		if b.textBytes >= flushBytes && firstErr == nil {
			firstErr = flush()
		}
	}
	for range out {
	}
	if firstErr != nil {
		return firstErr
	}
	if err := <-readErr; err != nil {
		return err
	}
	return flush()
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
		p := b.post[h]
		err := s.postings(off, df, func(id, tf int) { p = append(p, base+uint32(id), uint32(tf)) })
		if err != nil {
			return err
		}
		b.post[h] = p
	}
	return nil
}
