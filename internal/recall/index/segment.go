package index

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/bits"
	"slices"
)

// A segment is one immutable file of the index: the documents of some spans of the
// store's index.jsonl, an inverted list of their terms, and the spans it covers. Writers
// add segments and never change one, so concurrent writers need no lock: two that index
// the same lines write two segments, and a reader takes one of them (covered).
//
// Layout (little endian):
//
//	0   magic "CTXRIX01"
//	8   headLen u32, nSpans u32   index.jsonl's first headLen bytes...
//	16  headHash u64              ...hash to this (the index.jsonl it was made from)
//	24  nDocs u32, nTerms u32
//	32  docsOff, lensOff, termsOff, postOff u64
//	64  textBytes u64, totalLen u64
//	80  spans: start, end u64 each (byte ranges of index.jsonl, whole lines)
//	docs:  per document, 48 bytes: SHA-256 [32], line offset u64, line length u32, 0 u32
//	lens:  per document, its number of terms, u32
//	terms: per term, sorted by hash, 20 bytes: hash u64, offset of its postings u64, df u32
//	postings: per document that has the term, in order: uvarint id delta, uvarint tf
const (
	magic      = "CTXRIX01"
	headerSize = 80
	docSize    = 48
	termSize   = 20
)

// errFormat: a file in the index folder is not a segment this version reads.
var errFormat = errors.New("not an index segment of this version")

// span is a byte range of index.jsonl.
type span struct{ start, end int64 }

// doc is one document of a segment.
type doc struct {
	hash    [32]byte
	lineOff int64
	lineLen uint32
}

// builder collects documents into one segment. Postings are gathered as one flat list of
// (term, document, frequency), sorted by term when the segment is written: appending costs
// next to nothing, where a map of lists cost a lookup and often a growing slice each.
type builder struct {
	docs      []doc
	lens      []uint32
	pairs     []posting
	sortTmp   []posting // sortByTerm's room, kept for the next segment a worker builds
	textBytes int64
	totalLen  int64
	spans     []span
}

// posting is one document that has a term: v is the document's id << 32 | its frequency.
type posting struct{ h, v uint64 }

func newBuilder() *builder { return &builder{} }

// sortByTerm sorts postings by term, keeping the order of each term's (their documents'
// order, in which they were added): one pass deals them into buckets by the top bits of
// their hash (up to 16: a few postings a bucket), keeping their order, and each bucket,
// small and in cache, is then sorted stably by the rest. A comparison sort of the whole
// took a third of the build, and a radix sort of a byte a pass (8 passes over the list) a
// tenth of ctx-snip's work.
func sortByTerm(p []posting) { sortByTermIn(p, nil) }

// sortByTermIn is sortByTerm using tmp for its room when it is large enough, and returns
// the room it used.
func sortByTermIn(p, tmp []posting) []posting {
	byHash := func(x, y posting) int {
		switch {
		case x.h < y.h:
			return -1
		case x.h > y.h:
			return 1
		}
		return 0
	}
	if len(p) < 256 {
		slices.SortStableFunc(p, byHash)
		return tmp
	}
	nb := min(16, max(8, bits.Len(uint(len(p)))-2))
	shift := 64 - nb
	start := make([]int32, 1<<nb+1)
	for _, x := range p {
		start[x.h>>shift+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	if cap(tmp) < len(p) {
		tmp = make([]posting, len(p), cap(p)) // (as much as p may hold: the next sort's)
	}
	tmp = tmp[:len(p)]
	next := slices.Clone(start[:len(start)-1])
	for _, x := range p {
		k := x.h >> shift
		tmp[next[k]] = x
		next[k]++
	}
	for k := 0; k+1 < len(start); k++ {
		sortBucket(tmp[start[k]:start[k+1]], p, shift)
	}
	copy(p, tmp)
	return tmp
}

// sortBucket sorts b, whose hashes agree above bit shift, stably by hash: a bucket of one
// term (a frequent word's postings) is left as it is, a small one sorted by insertion, the
// others dealt again by the next 8 bits, through tmp.
func sortBucket(b, tmp []posting, shift int) {
	if len(b) <= 16 {
		for i := 1; i < len(b); i++ { // insertion sort: stable
			x := b[i]
			j := i
			for j > 0 && b[j-1].h > x.h {
				b[j] = b[j-1]
				j--
			}
			b[j] = x
		}
		return
	}
	if b[0].h == b[len(b)-1].h && !slices.ContainsFunc(b, func(x posting) bool { return x.h != b[0].h }) {
		return
	}
	d := min(8, shift)
	shift -= d
	mask := uint64(1)<<d - 1
	var start [257]int
	for _, x := range b {
		start[x.h>>shift&mask+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	next := start
	for _, x := range b {
		k := x.h >> shift & mask
		tmp[next[k]] = x
		next[k]++
	}
	copy(b, tmp[:len(b)])
	for k := 0; k < 256; k++ {
		sortBucket(b[start[k]:start[k+1]], tmp, shift)
	}
}

// encode writes the segment.
func (b *builder) encode(headLen int, headHash uint64) []byte {
	b.sortTmp = sortByTermIn(b.pairs, b.sortTmp)
	var terms []uint64
	var dfs []uint32
	for i, p := range b.pairs {
		if i == 0 || p.h != b.pairs[i-1].h {
			terms = append(terms, p.h)
			dfs = append(dfs, 0)
		}
		dfs[len(dfs)-1]++
	}
	var postings bytes.Buffer
	postings.Grow(3 * len(b.pairs))
	offs := make([]int64, len(terms))
	var tmp [2 * binary.MaxVarintLen32]byte
	docsOff := int64(headerSize + 16*len(b.spans))
	lensOff := docsOff + int64(docSize*len(b.docs))
	termsOff := lensOff + int64(4*len(b.docs))
	postOff := termsOff + int64(termSize*len(terms))
	at := 0
	for i := range terms {
		offs[i] = postOff + int64(postings.Len())
		prev := uint32(0)
		for _, p := range b.pairs[at : at+int(dfs[i])] {
			id, tf := uint32(p.v>>32), uint32(p.v)
			n := binary.PutUvarint(tmp[:], uint64(id-prev))
			n += binary.PutUvarint(tmp[n:], uint64(tf))
			postings.Write(tmp[:n])
			prev = id
		}
		at += int(dfs[i])
	}
	out := make([]byte, postOff, postOff+int64(postings.Len()))
	copy(out, magic)
	le := binary.LittleEndian
	le.PutUint32(out[8:], uint32(headLen))
	le.PutUint32(out[12:], uint32(len(b.spans)))
	le.PutUint64(out[16:], headHash)
	le.PutUint32(out[24:], uint32(len(b.docs)))
	le.PutUint32(out[28:], uint32(len(terms)))
	le.PutUint64(out[32:], uint64(docsOff))
	le.PutUint64(out[40:], uint64(lensOff))
	le.PutUint64(out[48:], uint64(termsOff))
	le.PutUint64(out[56:], uint64(postOff))
	le.PutUint64(out[64:], uint64(b.textBytes))
	le.PutUint64(out[72:], uint64(b.totalLen))
	for i, s := range b.spans {
		le.PutUint64(out[headerSize+16*i:], uint64(s.start))
		le.PutUint64(out[headerSize+16*i+8:], uint64(s.end))
	}
	for i, d := range b.docs {
		o := docsOff + int64(docSize*i)
		copy(out[o:], d.hash[:])
		le.PutUint64(out[o+32:], uint64(d.lineOff))
		le.PutUint32(out[o+40:], d.lineLen)
	}
	for i, n := range b.lens {
		le.PutUint32(out[lensOff+int64(4*i):], n)
	}
	for i, h := range terms {
		o := termsOff + int64(termSize*i)
		le.PutUint64(out[o:], h)
		le.PutUint64(out[o+8:], uint64(offs[i]))
		le.PutUint32(out[o+16:], dfs[i])
	}
	return append(out, postings.Bytes()...)
}

// segment is a segment opened for reading: its header in memory, the rest read as needed.
type segment struct {
	name                                string // file name; "" for one held in memory
	r                                   io.ReaderAt
	size                                int64
	close                               func() error
	headLen                             int
	headHash                            uint64
	nDocs                               int
	nTerms                              int
	docsOff, lensOff, termsOff, postOff int64
	textBytes, totalLen                 int64
	spans                               []span
	lens                                []uint32 // loaded by loadLens
}

// openSegment reads a segment's header and spans.
func openSegment(name string, r io.ReaderAt, size int64) (*segment, error) {
	var h [headerSize]byte
	if size < headerSize {
		return nil, errFormat
	}
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, err
	}
	if string(h[:8]) != magic {
		return nil, errFormat
	}
	le := binary.LittleEndian
	s := &segment{name: name, r: r, size: size,
		headLen: int(le.Uint32(h[8:])), headHash: le.Uint64(h[16:]),
		nDocs: int(le.Uint32(h[24:])), nTerms: int(le.Uint32(h[28:])),
		docsOff: int64(le.Uint64(h[32:])), lensOff: int64(le.Uint64(h[40:])),
		termsOff: int64(le.Uint64(h[48:])), postOff: int64(le.Uint64(h[56:])),
		textBytes: int64(le.Uint64(h[64:])), totalLen: int64(le.Uint64(h[72:]))}
	nSpans := int(le.Uint32(h[12:]))
	if nSpans > 1<<20 || s.docsOff != int64(headerSize+16*nSpans) || s.lensOff != s.docsOff+int64(docSize*s.nDocs) ||
		s.termsOff != s.lensOff+int64(4*s.nDocs) || s.postOff != s.termsOff+int64(termSize*s.nTerms) || s.postOff > size {
		return nil, errFormat
	}
	buf := make([]byte, 16*nSpans)
	if _, err := r.ReadAt(buf, headerSize); err != nil {
		return nil, err
	}
	for i := 0; i < nSpans; i++ {
		s.spans = append(s.spans, span{int64(le.Uint64(buf[16*i:])), int64(le.Uint64(buf[16*i+8:]))})
	}
	return s, nil
}

// loadLens reads every document's length.
func (s *segment) loadLens() error {
	if s.lens != nil || s.nDocs == 0 {
		return nil
	}
	buf := make([]byte, 4*s.nDocs)
	if _, err := s.r.ReadAt(buf, s.lensOff); err != nil {
		return err
	}
	s.lens = make([]uint32, s.nDocs)
	for i := range s.lens {
		s.lens[i] = binary.LittleEndian.Uint32(buf[4*i:])
	}
	return nil
}

// lookup finds a term: where its postings start and how many documents have it. A
// binary search over the term table, one small read a step.
func (s *segment) lookup(h uint64) (off int64, df int, err error) {
	lo, hi := 0, s.nTerms
	var e [termSize]byte
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if _, err := s.r.ReadAt(e[:8], s.termsOff+int64(termSize*m)); err != nil {
			return 0, 0, err
		}
		if binary.LittleEndian.Uint64(e[:8]) < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == s.nTerms {
		return 0, 0, nil
	}
	if _, err := s.r.ReadAt(e[:], s.termsOff+int64(termSize*lo)); err != nil {
		return 0, 0, err
	}
	if binary.LittleEndian.Uint64(e[:8]) != h {
		return 0, 0, nil
	}
	return int64(binary.LittleEndian.Uint64(e[8:])), int(binary.LittleEndian.Uint32(e[16:])), nil
}

// postings calls fn with each document that has the term whose postings start at off.
func (s *segment) postings(off int64, df int, fn func(id int, tf int)) error {
	// df entries of at most 2 varints of 5 bytes; read what can hold them
	n := min(int64(df)*2*binary.MaxVarintLen32, s.size-off)
	buf := make([]byte, n)
	if k, err := s.r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && int64(k) == n) {
		return err
	}
	id := 0
	for i := 0; i < df; i++ {
		d, k := binary.Uvarint(buf)
		if k <= 0 {
			return errFormat
		}
		buf = buf[k:]
		tf, k := binary.Uvarint(buf)
		if k <= 0 {
			return errFormat
		}
		buf = buf[k:]
		id += int(d)
		if id >= s.nDocs {
			return errFormat
		}
		fn(id, int(tf))
	}
	return nil
}

// doc reads document id's entry.
func (s *segment) doc(id int) (doc, error) {
	var e [docSize]byte
	if _, err := s.r.ReadAt(e[:], s.docsOff+int64(docSize*id)); err != nil {
		return doc{}, err
	}
	var d doc
	copy(d.hash[:], e[:32])
	d.lineOff = int64(binary.LittleEndian.Uint64(e[32:]))
	d.lineLen = binary.LittleEndian.Uint32(e[40:])
	return d, nil
}

// docs reads every document's entry.
func (s *segment) allDocs() ([]doc, error) {
	buf := make([]byte, docSize*s.nDocs)
	if _, err := s.r.ReadAt(buf, s.docsOff); err != nil && len(buf) > 0 {
		return nil, err
	}
	out := make([]doc, s.nDocs)
	for i := range out {
		e := buf[docSize*i:]
		copy(out[i].hash[:], e[:32])
		out[i].lineOff = int64(binary.LittleEndian.Uint64(e[32:]))
		out[i].lineLen = binary.LittleEndian.Uint32(e[40:])
	}
	return out, nil
}

// hexHash is d's hash as the store names it.
func (d doc) hexHash() string { return hex.EncodeToString(d.hash[:]) }
