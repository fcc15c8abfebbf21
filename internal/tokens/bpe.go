package tokens

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"
)

// countText counts the tokens of text with vocabulary v: the length of tiktoken's
// EncodeOrdinary(text), without building the tokens.
//
// Text is split into pieces by the encoding's pre-tokenizer; a piece of one or two bytes
// is counted from its bytes, a piece of up to longMemoMaxBytes through memo when one is
// given (a goroutine's own), and any other costs one lookup if it is a token and is otherwise
// merged with tiktoken's rule (below), through the counter's cache of pieces when one is
// given.
func countText(v *vocab, text string, pieces *pieceCache, memo *pieceMemo) int {
	t := v.table()
	if !utf8.ValidString(text) {
		// The reference converts text to []rune before splitting it, which turns every
		// byte of an invalid sequence into U+FFFD; so does this conversion.
		text = string([]rune(text))
	}
	p := newSplitter()
	var gate cacheGate
	if memo != nil && memo.t != t {
		memo.reset(t)
	}
	n := 0
	for i := 0; i < len(text); {
		j := nextASCII(text, i, v.o200k) // split, without a call
		if j < 0 {
			j = v.next(p, text, i)
		}
		switch l := j - i; {
		case l == 1:
			n++
		case l == 2:
			if t.pair2[int(text[i])<<8|int(text[i+1])] >= 0 {
				n++
			} else {
				n += 2 // two bytes that are no token stay two
			}
		case l <= shortMemoMaxBytes && memo != nil:
			// The key (shortMemoKey in the tests), written out: a call would not be
			// inlined.
			var k uint64
			if i+8 <= len(text) {
				k = le64(text[i:])&(1<<(8*l)-1) | uint64(l)<<56
			} else {
				k = shortKeyEnd(text[i:j])
			}
			set := memo.shortSet(k)
			if e := set[0]; e&^shortCountBits == k {
				n += int(e >> 59)
				break
			}
			n += memo.shortRest(set, k, t, text[i:j], pieces, &gate)
		case l <= memoMaxBytes && memo != nil:
			// The key (memoKey in the tests), written out: a call would not be inlined.
			var a, b uint64
			if i+16 <= len(text) {
				a, b = le64(text[i:]), le64(text[i+8:])
				if l < 8 {
					a &= 1<<(8*l) - 1
					b = 0
				} else {
					b &= 1<<(8*(l-8)) - 1
				}
				b |= uint64(l) << 60
			} else {
				a, b = memoKeyEnd(text[i:j])
			}
			set := memo.set(a, b)
			if e := &set[0]; e.a == a && e.b&^memoCountBits == b {
				n += int(e.b >> 56 & 0xF)
				break
			}
			n += memo.rest(set, a, b, t, text[i:j], pieces, &gate)
		case l <= longMemoMaxBytes && memo != nil:
			n += memo.countLong(t, text, i, j, pieces, &gate)
		default:
			n += t.countPiece(text[i:j], pieces, &gate)
		}
		i = j
	}
	return n
}

// cacheGate decides, along one text, whether a piece asks the cache of pieces. The cache
// pays on text that repeats its words (on the generated sessions of BenchmarkMixed, 82-92%
// of lookups hit); on text that never does (base64, hashes, random ids) every lookup
// misses, a miss in a table of megabytes, and its put evicts a piece that might have hit:
// 20% of counting cl100k's base64. So once a window of gateWindow lookups has had no hit,
// only every gateSample-th piece asks (and is kept), until one hits again.
type cacheGate struct {
	asked, hits int
	cold        bool // the last window had no hit
	skipped     int  // pieces that did not ask since the last that did, when cold
}

const (
	gateWindow = 256
	gateSample = 16
)

// ask reports whether the next piece of cacheable length asks the cache.
func (g *cacheGate) ask() bool {
	if g.cold {
		if g.skipped++; g.skipped < gateSample {
			return false
		}
		g.skipped = 0
	}
	return true
}

// looked notes a lookup's outcome.
func (g *cacheGate) looked(hit bool) {
	if hit {
		g.hits++
		g.cold = false
	}
	if g.asked++; g.asked == gateWindow {
		g.cold = g.hits == 0
		g.asked, g.hits = 0, 0
	}
}

// countPiece returns the number of tokens piece encodes to; gate says whether it asks
// the cache of pieces.
func (t *table) countPiece(piece string, pieces *pieceCache, gate *cacheGate) int {
	if len(piece) <= 2 || len(piece) > t.maxLen {
		if len(piece) == 1 || t.rank(piece) >= 0 {
			return 1
		}
		if len(piece) == 2 {
			return 2 // two bytes that are no token stay two
		}
		if len(piece) < pieceCacheMinBytes || pieces == nil {
			return t.merge(piece)
		}
	}
	// One hash serves the vocabulary and the cache of pieces.
	h := hashString(piece)
	if len(piece) <= t.maxLen && t.rankHashed(piece, h) >= 0 {
		return 1
	}
	if len(piece) == 3 {
		// Three bytes that are no token: merging takes one of the two pairs if either is
		// a token, and then the rest, the whole piece, is none.
		if t.pair2[int(piece[0])<<8|int(piece[1])] >= 0 || t.pair2[int(piece[1])<<8|int(piece[2])] >= 0 {
			return 2
		}
		return 3
	}
	if len(piece) < pieceCacheMinBytes || len(piece) > pieceCacheMaxBytes || pieces == nil || !gate.ask() {
		return t.merge(piece)
	}
	n, ok := pieces.get(h, piece)
	gate.looked(ok)
	if !ok {
		n = t.merge(piece)
		pieces.put(h, piece, n)
	}
	return n
}

// merge returns the number of tokens BPE leaves of piece: starting from single bytes,
// repeatedly merge the adjacent pair of parts whose concatenation is the token of lowest
// rank, the leftmost one on ties, until no adjacent pair is a token. This is tiktoken's
// rule (tiktoken-go's bytePairMerge); a merged part is always a token, so the count is
// the number of parts left.
func (t *table) merge(piece string) int {
	if len(piece) <= smallPieceBytes {
		return t.mergeSmall(piece, nil, 0)
	}
	sc := t.getScratch()
	var n int
	if isASCII(piece) {
		n = t.mergeApart(piece, sc)
	} else {
		n = t.mergeLong(piece, sc)
	}
	t.scratch.Put(sc)
	return n
}

// isASCII reports whether s is all ASCII, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if le64(s[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// mergeApart merges a long piece of ASCII as the sum of the parts it falls into where
// no token can hold both of two adjacent bytes (apartAt): no part BPE makes can hold
// both, so no merge crosses there, and each side merges as if alone. Letters have such
// places every dozen bytes or so (no o200k token has "qx" in it, say); a run of spaces
// has none, and is merged whole. A part is merged with mergeRadix, in chunks when it
// is long.
//
// Text of other scripts goes to mergeLong instead: its characters are few and take
// merges of their own, which mergeLong remembers per character.
func (t *table) mergeApart(piece string, sc *mergeScratch) int {
	sc.use(t)
	// Only a long piece builds and reads the three-byte tables (trigramPieceBytes); a
	// shorter one is cut where two bytes are in no token together. Both cuts are exact.
	trigrams := len(piece) >= trigramPieceBytes
	if trigrams {
		t.trigrams()
		sc.rank3 = t.rank3
	}
	n, from := 0, 0
	apart := t.apart2
	for i := 1; i < len(piece); i++ {
		// apartAt, with its first test here: a run of spaces or of text whose every
		// pair is a token costs two lookups a byte and no call.
		k := int(piece[i-1])<<8 | int(piece[i])
		if apart[k/64]&(1<<(k%64)) != 0 || trigrams && t.pair2[k] < 0 && t.apartAt(piece, i) {
			n += t.mergePart(piece[from:i], sc)
			from = i
		}
	}
	return n + t.mergePart(piece[from:], sc)
}

// trigramPieceBytes is the length of ASCII piece from which mergeApart builds and uses
// the three-byte tables (trigrams, apartAt's second cut): building them takes about 5 ms once per process,
// which a run of short pieces (a 40-space indentation, a long identifier) would pay
// for nothing, while a piece this long is a run of megabytes' kind (a minified bundle,
// a base64 blob) that the extra cuts speed up by a fifth or more.
const trigramPieceBytes = 4096

// apartAt reports whether no token can hold both piece[i-1] and piece[i] (0 < i <
// len(piece)), so that no part BPE makes crosses i: the two bytes are
// in no token together (apart2), or they are no token themselves and no token of
// three bytes or more holds piece[i-2:i+1] or piece[i-1:i+2] (tri3, of ASCII; a token that
// crosses i and is longer than two bytes holds one of them). The first is rare in
// letters (1-3% of places), the second about as frequent again: in text of random
// letters nearly every two letters are a token, but about 40% of places have no
// three-letter token around them. Neither depends on ranks: a token that cannot occur
// across i is never a pair merging can take. trigrams must have been called.
func (t *table) apartAt(piece string, i int) bool {
	k := int(piece[i-1])<<8 | int(piece[i])
	if t.apart2[k/64]&(1<<(k%64)) != 0 {
		return true
	}
	if t.pair2[k] >= 0 || i < 2 || i+1 >= len(piece) || (piece[i-2]|piece[i-1]|piece[i]|piece[i+1]) >= 0x80 {
		return false
	}
	tri := t.tri3
	a := int(piece[i-2])<<14 | int(piece[i-1])<<7 | int(piece[i])
	b := int(piece[i-1])<<14 | int(piece[i])<<7 | int(piece[i+1])
	return tri[a/64]&(1<<(a%64)) == 0 && tri[b/64]&(1<<(b%64)) == 0
}

// mergePart is merge of a part of a piece, with scratch memory at hand.
func (t *table) mergePart(part string, sc *mergeScratch) int {
	switch {
	case len(part) == 1:
		return 1
	case len(part) == 2:
		if t.pair2[int(part[0])<<8|int(part[1])] >= 0 {
			return 1
		}
		return 2
	case len(part) <= smallPieceBytes:
		return t.mergeSmall(part, nil, 0)
	case len(part) <= chunkBytes:
		return t.mergeRadix(part, sc, nil, 0)
	}
	return t.mergeChunks(part, sc)
}

// smallPieceBytes: up to this length, merging scans the pairs for the lowest rank at each
// step, like tiktoken. That is quadratic but has no set-up, and nearly every piece of real
// text that is not a token itself is this short.
const smallPieceBytes = 32

const noRank = math.MaxInt32

// event is one merge, as mergeLong needs to know it: its rank (that of the token it
// made) and position (the start of the left part), and whether it made a new last part
// of the segment (last, its start) or a new first part (first, its end); -1 when not.
// Most merges that change neither edge are dropped (compactEvents).
type event struct {
	rank, pos   int32
	last, first int32
}

// key orders merges the way merge chooses them: by rank, then leftmost.
func (e event) key() uint64 { return uint64(e.rank)<<32 | uint64(uint32(e.pos)) }

// joinRank is the rank of piece[i:j], the concatenation of two adjacent parts that are
// the tokens r1 and r2 (-1 for a part that is no token: a single byte a vocabulary
// lacks), or -1 when it is no token.
//
// Which string two tokens make depends on nothing but the two tokens, so with scratch
// memory the answer is remembered by the pair of ranks. A long piece asks about the same
// few thousand pairs again and again (the letters and syllables of a language, the
// blocks of a run of spaces), and the remembered answer sits in a core's cache, where a
// lookup in the vocabulary (a hash, the filter, the slots, the token's bytes: several
// megabytes) waits on memory.
func (t *table) joinRank(sc *mergeScratch, piece string, i, j int, r1, r2 int32) int32 {
	if j-i == 2 {
		return t.pair2[int(piece[i])<<8|int(piece[i+1])]
	}
	if j-i == 3 && sc != nil && sc.rank3 != nil {
		if a, b, c := piece[i], piece[i+1], piece[i+2]; a|b|c < 0x80 {
			return sc.rank3[int(a)<<14|int(b)<<7|int(c)] - 1
		}
	}
	if j-i > t.maxLen {
		return -1
	}
	if two := int(piece[i])<<8 | int(piece[i+1]); t.long2[two/64]&(1<<(two%64)) == 0 {
		return -1
	}
	if sc == nil || r1 < 0 || r2 < 0 {
		return t.rank(piece[i:j])
	}
	key := uint64(r1+1)<<32 | uint64(r2+1)
	e := &sc.pairs[(key*0x9E3779B97F4A7C15)>>(64-pairCacheBits)]
	if e.key != key {
		e.key, e.rank = key, t.rank(piece[i:j])
	}
	return e.rank
}

// pairCacheBits sizes the cache of joinRank: 4096 pairs, 64 KB.
const pairCacheBits = 12

type pairEntry struct {
	key  uint64 // r1+1 << 32 | r2+1; 0 for an empty entry
	rank int32
}

// mergeSmall merges piece (at most smallPieceBytes long) with the rule of merge. When
// events is not nil, its merges are appended to it (compactEvents), positions offset by
// at. Short pieces of every text come here, so it is kept lean: no cache, no scratch.
func (t *table) mergeSmall(piece string, events *[]event, at int32) int {
	n := len(piece)
	from := 0
	if events != nil {
		from = len(*events)
	}
	// start[k] is where part k begins (start[parts] = n); rank[k] is the rank of parts
	// k and k+1 together, noRank when that is no token.
	var start [smallPieceBytes + 1]int32
	var rank [smallPieceBytes]int32
	for i := range n {
		start[i] = int32(i)
	}
	start[n] = int32(n)
	for i := range n - 1 {
		r := t.pair2[int(piece[i])<<8|int(piece[i+1])]
		if r < 0 {
			r = noRank
		}
		rank[i] = r
	}
	parts := n
	for parts > 1 {
		best, bestRank := -1, int32(noRank)
		for k := range parts - 1 {
			if rank[k] < bestRank {
				best, bestRank = k, rank[k]
			}
		}
		if best < 0 {
			break
		}
		if events != nil {
			e := event{rank: bestRank, pos: at + start[best], last: -1, first: -1}
			if best+2 == parts {
				e.last = e.pos
			}
			if best == 0 {
				e.first = at + start[2]
			}
			*events = append(*events, e)
		}
		// Part best+1 joins part best.
		copy(start[best+1:parts], start[best+2:parts+1])
		copy(rank[best+1:parts-1], rank[best+2:parts])
		parts--
		if best+1 < parts {
			rank[best] = t.pairRank(piece, int(start[best]), int(start[best+2]))
		} else {
			rank[best] = noRank
		}
		if best > 0 {
			rank[best-1] = t.pairRank(piece, int(start[best-1]), int(start[best+1]))
		}
	}
	if events != nil {
		compactEvents(events, from)
	}
	return parts
}

// pairRank is the rank of piece[i:j], or noRank.
func (t *table) pairRank(piece string, i, j int) int32 {
	if r := t.rank(piece[i:j]); r >= 0 {
		return r
	}
	return noRank
}

// mergeLong merges a long piece in segments, which is exact when no merge crosses from
// one segment into the next.
//
// While no pair across a boundary between two segments has merged, merging the whole
// piece is an interleaving of the merges each segment makes alone: the pairs inside a
// segment are the same, and merge takes the lowest (rank, position) of them all. The pair
// across a boundary is the left segment's current last part followed by the right
// segment's current first part. It merges exactly when, at some moment, it is a token
// whose (rank, position) is lower than the next merge of both segments (if it is, no
// other merge can change it first). Merging each segment alone gives its merges in order
// and how they change its edges, so walking the two sequences in the order of their keys
// decides each boundary exactly; when every boundary holds, the piece's count is the sum
// of its segments' counts. That holds wherever the segments are cut, and whether a
// boundary holds depends only on the bytes of its two segments.
//
// Segments start as single characters. Where a boundary does not hold (a word of CJK
// text that is one token, say), the two segments become one, and the new segment's left
// boundary is checked again. Text that forms long tokens or merges without end (a run of
// one letter, of spaces) soon grows a segment past segmentMaxBytes; then the piece is
// merged in chunks (mergeChunks).
func (t *table) mergeLong(piece string, sc *mergeScratch) int {
	sc.use(t)
	segs := sc.segs[:0]
	evs := sc.events[:0] // the merges of each segment in segs, in order
	total := 0
	for pos := 0; pos < len(piece); {
		// Segments begin as characters, but any cut would do: the boundary checks do
		// not depend on where they fall.
		seg := segment{start: int32(pos), end: int32(min(pos+utf8Len(piece[pos]), len(piece)))}
		pos = int(seg.end)
		seg.ev = int32(len(evs))
		seg.count = int32(sc.mergeChar(t, piece[seg.start:seg.end], &evs, seg.start))
		for {
			if len(segs) == 0 {
				break
			}
			top := segs[len(segs)-1]
			if sc.holdsPair(t, piece, top, seg, evs) {
				break
			}
			segs, evs = segs[:len(segs)-1], evs[:top.ev]
			seg.start = top.start
			if seg.end-seg.start > segmentMaxBytes {
				sc.segs, sc.events = segs, evs
				return t.mergeChunks(piece, sc)
			}
			seg.ev = int32(len(evs))
			seg.count = int32(t.mergeSmall(piece[seg.start:seg.end], &evs, seg.start))
		}
		segs = append(segs, seg)

		// A segment that starts more than segmentMaxBytes before the next character can
		// no longer be merged into: a union with it would be too long.
		if len(segs) >= 4*segmentMaxBytes {
			k := 0
			for k < len(segs)-1 && int(segs[k].start) < pos-segmentMaxBytes {
				total += int(segs[k].count)
				k++
			}
			base := segs[k].ev
			evs = evs[:copy(evs, evs[base:])]
			segs = segs[:copy(segs, segs[k:])]
			for i := range segs {
				segs[i].ev -= base
			}
		}
	}
	for _, s := range segs {
		total += int(s.count)
	}
	sc.segs, sc.events = segs, evs
	return total
}

// chunkBytes is the length mergeChunks cuts a piece into: long enough that most cuts
// hold and a run of one character repeats whole chunks, short enough that a chunk's
// merging stays in a core's cache.
const chunkBytes = 512

// keepSegments: mergeChunks keeps the merges of this many segments before the newest
// for unions; a boundary that fails further back than that is left to mergeQueue.
const keepSegments = 8

// unionMaxBytes bounds a segment of mergeChunks: each union merges the whole of it
// again, so a run of failing boundaries costs the square of its length.
const unionMaxBytes = 16 * chunkBytes

// mergeChunks is merge for a long piece that nothing else splits: it cuts the piece
// into chunks of about chunkBytes, merges each alone with mergeRadix, and checks each
// boundary with holds, as mergeLong does for characters; a boundary that does not hold
// joins its two segments, which are merged again as one. Merging a piece then stays in
// the cache, where mergeQueue over megabytes at once waits on memory at nearly every
// merge.
//
// Cuts fall at fixed places first, which keeps the chunks of a run of one character
// equal. A chunk equal to the one before it (a run of spaces, of one letter, any text
// whose period divides the chunk) makes the same merges, and a boundary between two
// copies of a chunk holds or fails like the last one: neither is worked out again.
// Where a fixed cut fails (text of a few letters merges across any place about half
// the time), the cuts that follow are placed by guessCut.
func (t *table) mergeChunks(piece string, sc *mergeScratch) int {
	sc.use(t)
	segs := sc.segs[:0]
	evs := sc.events[:0]
	total, retired := 0, false
	// plain: the top segment is a chunk as cut, no union; twinHeld: a boundary between
	// two copies of the top segment's bytes held; guess: a cut at a fixed place failed,
	// so cuts are placed by guessCut from now on.
	plain, twinHeld, guess := false, false, false
	for pos := 0; pos < len(piece); {
		seg := segment{start: int32(pos), ev: int32(len(evs))}
		twin := false
		if plain {
			top := segs[len(segs)-1]
			n := top.end - top.start
			if twin = pos+int(n) <= len(piece) && piece[top.start:top.end] == piece[pos:pos+int(n)]; twin {
				seg.end = seg.start + n
				d := seg.start - top.start
				evs = append(evs, evs[top.ev:seg.ev]...)
				for i := range evs[seg.ev:] {
					e := &evs[int(seg.ev)+i]
					e.pos += d
					if e.last >= 0 {
						e.last += d
					}
					if e.first >= 0 {
						e.first += d
					}
				}
				seg.count = top.count
			}
		}
		if !twin {
			end := min(pos+chunkBytes, len(piece))
			switch {
			case end == len(piece):
			case guess:
				end = t.guessCut(piece, end, sc)
			default:
				// A cut between two bytes that are no token together falls more
				// often where BPE leaves a boundary; take the last in the chunk's last
				// eighth.
				for e := end; e > end-chunkBytes/8; e-- {
					if t.pair2[int(piece[e-1])<<8|int(piece[e])] < 0 && piece[e]&0xC0 != 0x80 {
						end = e
						break
					}
				}
			}
			for end < len(piece) && piece[end]&0xC0 == 0x80 {
				end++ // a cut inside a character would always be crossed
			}
			seg.end = int32(end)
		}
		end := int(seg.end)
		if !twin {
			seg.count = int32(t.mergeRadix(piece[pos:end], sc, &evs, seg.start))
		}
		pos = end
		held := true
		if !(twin && twinHeld) {
			for len(segs) > 0 {
				top := segs[len(segs)-1]
				if t.holds(piece, evs[top.ev:seg.ev], evs[seg.ev:], int(seg.start)) {
					break
				}
				held = false
				guess = guess || !twin
				segs, evs = segs[:len(segs)-1], evs[:top.ev]
				seg.start = top.start
				if seg.end-seg.start > unionMaxBytes || len(segs) == 0 && retired {
					sc.segs, sc.events = segs, evs
					return t.mergeQueue(piece, sc)
				}
				seg.ev = int32(len(evs))
				seg.count = int32(t.mergeRadix(piece[seg.start:seg.end], sc, &evs, seg.start))
			}
		}
		twinHeld = twin && held
		plain = held
		segs = append(segs, seg)
		if len(segs) >= 2*keepSegments {
			k := len(segs) - keepSegments
			for _, s := range segs[:k] {
				total += int(s.count)
			}
			base := segs[k].ev
			evs = evs[:copy(evs, evs[base:])]
			segs = segs[:copy(segs, segs[k:])]
			for i := range segs {
				segs[i].ev -= base
			}
			retired = true
		}
	}
	for _, s := range segs {
		total += int(s.count)
	}
	sc.segs, sc.events = segs, evs
	return total
}

// guessWindow is half the window guessCut merges.
const guessWindow = 32

// guessCut returns a place near c (a cut of piece, pos+chunkBytes) where BPE is likely
// to leave a boundary: the boundary nearest c that merging the bytes around c alone
// leaves. Far enough from the window's edges, that is nearly always a boundary of the
// whole piece too; holds has the last word.
func (t *table) guessCut(piece string, c int, sc *mergeScratch) int {
	lo, hi := c-guessWindow, min(c+guessWindow, len(piece))
	t.mergeRadix(piece[lo:hi], sc, nil, 0)
	best := -1
	for p := int32(0); int(p) < hi-lo; p = sc.next[p] {
		if at := lo + int(p); at > lo && (best < 0 || abs(at-c) < abs(best-c)) {
			best = at
		}
	}
	if best < 0 {
		return c
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// mergeChar is mergeSmall of one character, remembered: long pieces repeat their
// characters, and CJK text is almost all characters of three bytes that take two merges.
func (sc *mergeScratch) mergeChar(t *table, char string, events *[]event, at int32) int {
	if len(char) == 1 {
		return 1
	}
	key := uint64(len(char)) << 32
	for i := range len(char) {
		key |= uint64(char[i]) << (8 * i)
	}
	c := &sc.chars[(key*0x9E3779B97F4A7C15)>>(64-charCacheBits)]
	if c.key != key {
		var evs [3]event
		buf := evs[:0]
		c.count = int8(t.mergeSmall(char, &buf, 0))
		c.n = int8(copy(c.ev[:], buf))
		c.key = key
	}
	for _, e := range c.ev[:c.n] {
		e.pos += at
		if e.last >= 0 {
			e.last += at
		}
		if e.first >= 0 {
			e.first += at
		}
		*events = append(*events, e)
	}
	return int(c.count)
}

const charCacheBits = 10

// charMerge is a character's merges, relative to its start.
type charMerge struct {
	key   uint64 // 0 for an empty entry
	count int8
	n     int8
	ev    [3]event
}

// segmentMaxBytes bounds the segments of mergeLong, whose merging is quadratic.
const segmentMaxBytes = smallPieceBytes

type segment struct {
	start, end int32
	count      int32
	ev         int32 // where its merges begin in mergeLong's events
}

// compactEvents drops from (*events)[from:], the merges of one segment in the order
// made, each merge that changes neither edge of the segment and whose key is no higher
// than that of the next merge kept; the rest keep their order.
//
// holds gives the same answer without them. The pair across a boundary changes only at
// an edge. While it stays the same, the next merge of a segment is at most the next one
// kept, and rises to it before the segment makes that merge: if the pair is below both
// segments' next merges at some moment, it is still below both once each has risen to
// its next merge kept, which is what holds compares it with; and the other way round,
// the next merges kept are never lower than the true ones. Which of the two segments
// makes its next kept merge first is the same either way, by the same argument. In the
// real vocabularies keys nearly always rise through a segment's merges (a merge seldom
// makes a pair of lower rank than its own), so only the merges at the edges are kept:
// a few per segment, where merging a segment makes about one per byte.
func compactEvents(events *[]event, from int) {
	evs := (*events)[from:]
	next := uint64(math.MaxUint64)
	k := len(evs)
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.last >= 0 || e.first >= 0 || e.key() > next {
			k--
			evs[k] = e
			next = e.key()
		}
	}
	n := copy(evs, evs[k:])
	*events = (*events)[:from+n]
}

// holds reports whether the boundary at b between two adjacent segments, whose merges
// are left and right, never merges (see mergeLong).
func (t *table) holds(piece string, left, right []event, b int) bool {
	const never = math.MaxUint64
	i, j := b-1, b+1 // the start of the left's last part, the end of the right's first
	k := t.crossKey(piece, i, j)
	for {
		kl, kr := uint64(never), uint64(never)
		if len(left) > 0 {
			kl = left[0].key()
		}
		if len(right) > 0 {
			kr = right[0].key()
		}
		if k < kl && k < kr {
			return false
		}
		if kl == never && kr == never {
			return true
		}
		if kl < kr {
			if l := left[0].last; l >= 0 {
				i = int(l)
				k = t.crossKey(piece, i, j)
			}
			left = left[1:]
		} else {
			if f := right[0].first; f >= 0 {
				j = int(f)
				k = t.crossKey(piece, i, j)
			}
			right = right[1:]
		}
	}
}

// crossKey is the merge key of piece[i:j] if it is a token, else MaxUint64.
func (t *table) crossKey(piece string, i, j int) uint64 {
	two := int(piece[i])<<8 | int(piece[i+1])
	r := int32(-1)
	if j-i == 2 {
		r = t.pair2[two]
	} else if t.long2[two/64]&(1<<(two%64)) != 0 {
		r = t.rank(piece[i:j])
	}
	if r < 0 {
		return math.MaxUint64
	}
	return uint64(r)<<32 | uint64(i)
}

// holdsPair is holds of the boundary between the adjacent segments a and b of mergeLong
// (b the newest, its merges last in evs), remembered for two segments of eight bytes
// or fewer together: two characters of CJK text, mostly, whose boundaries repeat.
//
// What holds answers depends on the segments' bytes alone: it reads piece only
// between a.start and b.end, and each segment's merges are those of merging its bytes
// alone (mergeChar, mergeSmall), their positions offset by its start, which shifts every
// key and position holds compares alike. So the answer is remembered by the bytes of
// both and the length of a (the key; a cut elsewhere in the same bytes is another
// question).
func (sc *mergeScratch) holdsPair(t *table, piece string, a, b segment, evs []event) bool {
	n := b.end - a.start
	if n > 8 {
		return t.holds(piece, evs[a.ev:b.ev], evs[b.ev:], int(b.start))
	}
	var bytes uint64
	for i := n - 1; i >= 0; i-- {
		bytes = bytes<<8 | uint64(piece[a.start+i])
	}
	// 1 (an entry) | len(a) | len(a)+len(b): with the bytes, the two segments exactly.
	lens := uint64(1)<<8 | uint64(b.start-a.start)<<4 | uint64(n)
	e := &sc.held[(bytes^lens<<56)*0x9E3779B97F4A7C15>>(64-heldBits)]
	if e.bytes == bytes && e.lens&^(1<<9) == lens {
		return e.lens&(1<<9) != 0
	}
	ok := t.holds(piece, evs[a.ev:b.ev], evs[b.ev:], int(b.start))
	e.bytes, e.lens = bytes, lens
	if ok {
		e.lens |= 1 << 9
	}
	return ok
}

// heldBits sizes holdsPair's memory: 8192 pairs of segments, 128 KB.
const heldBits = 13

type heldEntry struct {
	bytes uint64
	lens  uint64 // 0 for an empty entry; see holdsPair; bit 9: the boundary holds
}

// utf8Len is the length of the UTF-8 sequence that starts with byte c of valid text.
func utf8Len(c byte) int {
	switch {
	case c < 0x80:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

// mergeScratch is the working memory of mergeLong and mergeQueue and their caches, kept
// in a pool of its table so a long piece does not allocate again.
type mergeScratch struct {
	segs   []segment
	events []event
	chars  [1 << charCacheBits]charMerge
	pairs  [1 << pairCacheBits]pairEntry
	held   [1 << heldBits]heldEntry
	t      *table  // whose ranks chars and pairs hold
	rank3  []int32 // t.rank3 once mergeApart has made it, else nil (joinRank)

	next, prev, rank, tok []int32
	q                     rankQueue
	batch                 []int32
	radix                 radixQueue
}

// use readies sc for merging with t: its caches hold the answers of one table.
func (sc *mergeScratch) use(t *table) {
	if sc.t != t {
		sc.chars, sc.pairs, sc.t = [len(sc.chars)]charMerge{}, [len(sc.pairs)]pairEntry{}, t
		sc.held = [len(sc.held)]heldEntry{}
		sc.rank3 = nil
	}
}

func (t *table) getScratch() *mergeScratch {
	if sc, ok := t.scratch.Get().(*mergeScratch); ok {
		return sc
	}
	return new(mergeScratch)
}

// mergeQueue is merge for a piece of any length, in time linear in its length but for
// the sorting of ties: parts form a linked list over their start offsets, and a queue
// with a bucket per rank (rankQueue) holds every adjacent pair that is a token.
//
// Merges are taken a rank at a time, lowest first, and within a rank by position. A
// merge changes only the pairs on either side of it, and the new pairs are longer than
// the token just made, so never of its rank: the rank being drained gains no entries
// while it is drained, and its positions can be sorted once. A new pair of lower rank
// (rare: a vocabulary need not rank a token after its parts) interrupts the drain, which
// resumes later from what is left. Entries are not removed when their pair changes; an
// entry is stale, and skipped, when the pair at its position no longer has its rank (a
// pair only grows, so it can never get a rank back).
func (t *table) mergeQueue(piece string, sc *mergeScratch) int {
	return t.mergeQueueEvents(piece, sc, nil, 0)
}

// mergeQueueEvents is mergeQueue that appends its merges to events, when not nil, in
// the order made, positions offset by at (compactEvents).
func (t *table) mergeQueueEvents(piece string, sc *mergeScratch, events *[]event, at int32) int {
	sc.use(t)
	n := len(piece)
	if events != nil {
		defer compactEvents(events, len(*events))
	}
	rank := sc.bytesApart(t, piece)
	q := &sc.q
	q.reset(t.size())
	for i := n - 1; i >= 0; i-- { // pushed backwards, each bucket lists positions in order
		if r := rank[i]; r >= 0 {
			q.push(r, int32(i))
		}
	}
	count := n
	for lo := int32(0); ; {
		r := q.first(lo)
		if r < 0 {
			break
		}
		lo = r
		batch := q.take(r, rank, sc.batch[:0])
	drain:
		for k, p := range batch {
			if rank[p] != r {
				continue // an earlier merge of this batch took its right part
			}
			pp := t.join(sc, piece, p, r, events, at)
			count--
			low := r
			if rank[p] >= 0 {
				q.push(rank[p], p)
				low = min(low, rank[p])
			}
			if pp >= 0 && rank[pp] >= 0 {
				q.push(rank[pp], pp)
				low = min(low, rank[pp])
			}
			if low < r {
				for _, rest := range batch[k+1:] {
					q.push(r, rest)
				}
				lo = low
				break drain
			}
		}
		sc.batch = batch
	}
	return count
}

// join makes the merge of rank r at p, as the queue loops of mergeQueueEvents and
// mergeRadix both make it: the token at p takes in the one after it (the list, the token,
// the event when events is not nil), and the ranks of the two pairs it is now part of
// are worked out, rank[p] with its new right neighbour and rank[pp] of its left
// neighbour pp with it. It returns pp, -1 at the start of the piece; the caller queues
// the ranks that are not -1.
func (t *table) join(sc *mergeScratch, piece string, p, r int32, events *[]event, at int32) (pp int32) {
	n := int32(len(piece))
	next, prev, rank, tok := sc.next, sc.prev, sc.rank, sc.tok
	nx := next[p]
	nn := next[nx]
	next[p] = nn
	if nn < n {
		prev[nn] = p
	}
	rank[nx] = -1
	tok[p] = r
	if events != nil {
		e := event{rank: r, pos: at + p, last: -1, first: -1}
		if nn == n {
			e.last = e.pos
		}
		if p == 0 {
			e.first = at + nn
		}
		*events = append(*events, e)
	}
	rank[p] = -1
	if nn < n {
		e := n
		if next[nn] < n {
			e = next[nn]
		}
		rank[p] = t.joinRank(sc, piece, int(p), int(e), r, tok[nn])
	}
	if p == 0 {
		return -1
	}
	pp = prev[p]
	rank[pp] = t.joinRank(sc, piece, int(pp), int(nn), tok[pp], r)
	return pp
}

// mergeRadix is mergeQueueEvents with a radix heap of (rank, position) keys for a
// queue, for a chunk of a piece: its few hundred entries stay in the first-level cache,
// where the buckets of rankQueue span the vocabulary, and taking the lowest key costs a
// few word operations, where a binary heap's comparisons are a coin toss each. A radix
// heap needs every key pushed to be no lower than the last taken; a merge that makes a
// pair of lower rank than its own (which the real vocabularies almost never do) breaks
// that, and the chunk is merged again with mergeQueueEvents. Entries go stale as in
// mergeQueue.
func (t *table) mergeRadix(piece string, sc *mergeScratch, events *[]event, at int32) int {
	sc.use(t)
	n := len(piece)
	from := 0
	if events != nil {
		from = len(*events)
	}
	rank := sc.bytesApart(t, piece)
	q := &sc.radix
	q.reset()
	for i, r := range rank {
		if r >= 0 {
			q.push(uint64(r)<<32 | uint64(i))
		}
	}
	count := n
	for q.size > 0 {
		key := q.pop()
		r, p := int32(key>>32), int32(uint32(key))
		if rank[p] != r {
			continue
		}
		pp := t.join(sc, piece, p, r, events, at)
		count--
		ok := true
		if rank[p] >= 0 {
			ok = q.push(uint64(rank[p])<<32 | uint64(p))
		}
		if pp >= 0 && rank[pp] >= 0 && !q.push(uint64(rank[pp])<<32|uint64(pp)) {
			ok = false
		}
		if !ok {
			if events != nil {
				*events = (*events)[:from]
			}
			return t.mergeQueueEvents(piece, sc, events, at)
		}
	}
	if events != nil {
		compactEvents(events, from)
	}
	return count
}

// radixQueue is a radix heap of keys: bucket b holds the keys whose highest bit that
// differs from last, the last key taken, is bit b-1 (bucket 0: equal to last), and bit
// b of full is set when bucket b is not empty. Keys pushed may not be lower than last.
type radixQueue struct {
	last    uint64
	size    int
	full    uint64 // buckets 0-63; bucket 64 is checked apart
	buckets [65][]uint64
}

func (q *radixQueue) reset() {
	if q.size > 0 { // left by a merge given up
		for i := range q.buckets {
			q.buckets[i] = q.buckets[i][:0]
		}
	}
	q.last, q.size, q.full = 0, 0, 0
}

// push adds k and reports true, or reports false when k is below the last key taken.
func (q *radixQueue) push(k uint64) bool {
	if k < q.last {
		return false
	}
	b := bits.Len64(k ^ q.last)
	q.buckets[b] = append(q.buckets[b], k)
	if b < 64 {
		q.full |= 1 << b
	}
	q.size++
	return true
}

// pop takes the lowest key; the queue must not be empty.
func (q *radixQueue) pop() uint64 {
	if len(q.buckets[0]) == 0 {
		// The lowest key is in the first bucket with keys; it becomes last, and the
		// rest of the bucket, which differs from it below that bucket's bit, moves
		// down.
		b := 64
		if q.full != 0 {
			b = bits.TrailingZeros64(q.full)
		}
		keys := q.buckets[b]
		m := keys[0]
		for _, k := range keys[1:] {
			m = min(m, k)
		}
		q.last = m
		for _, k := range keys {
			d := bits.Len64(k ^ m)
			q.buckets[d] = append(q.buckets[d], k)
			q.full |= 1 << d // d < b <= 64
		}
		q.buckets[b] = keys[:0]
		q.full &^= 1 << b
	}
	b0 := q.buckets[0]
	k := b0[len(b0)-1]
	q.buckets[0] = b0[:len(b0)-1]
	if len(b0) == 1 {
		q.full &^= 1
	}
	q.size--
	return k
}

// bytesApart readies the scratch for merging piece from its bytes: each byte a part of
// its own, linked to its neighbours (next, prev), with its token (tok) and the rank of
// the pair it starts (rank, -1 for none, returned for the caller to queue), for
// mergeQueueEvents and mergeRadix, whose merges join makes.
func (sc *mergeScratch) bytesApart(t *table, piece string) (rank []int32) {
	n := len(piece)
	sc.next, sc.prev = grow(sc.next, n), grow(sc.prev, n)
	sc.rank, sc.tok = grow(sc.rank, n), grow(sc.tok, n)
	next, prev, tok := sc.next, sc.prev, sc.tok
	rank = sc.rank
	for i := range n {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
		tok[i] = t.byte1[piece[i]]
		rank[i] = -1
		if i+1 < n {
			rank[i] = t.pair2[int(piece[i])<<8|int(piece[i+1])]
		}
	}
	return rank
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// rankQueue is a priority queue of positions by rank: a list per rank (heads, with the
// entries in pos and link, and a free list) and a two-level bitmap of the ranks with a
// list, to find the lowest at or above a rank in a few word operations. Between uses
// every list is empty.
type rankQueue struct {
	heads     []int32
	pos, link []int32
	free      int32
	bits, sum []uint64
}

func (q *rankQueue) reset(ranks int) {
	if len(q.heads) < ranks {
		q.heads = make([]int32, ranks)
		for i := range q.heads {
			q.heads[i] = -1
		}
		q.bits = make([]uint64, (ranks+63)/64)
		q.sum = make([]uint64, (len(q.bits)+63)/64)
	}
	q.pos, q.link, q.free = q.pos[:0], q.link[:0], -1
}

func (q *rankQueue) push(r, p int32) {
	e := q.free
	if e >= 0 {
		q.free = q.link[e]
		q.pos[e], q.link[e] = p, q.heads[r]
	} else {
		e = int32(len(q.pos))
		q.pos = append(q.pos, p)
		q.link = append(q.link, q.heads[r])
	}
	if q.heads[r] < 0 {
		q.bits[r/64] |= 1 << (r % 64)
		q.sum[r/4096] |= 1 << (r / 64 % 64)
	}
	q.heads[r] = e
}

// first returns the lowest rank at or above lo with a list, or -1.
func (q *rankQueue) first(lo int32) int32 {
	w := int(lo / 64)
	if w >= len(q.bits) {
		return -1
	}
	if b := q.bits[w] >> (lo % 64); b != 0 {
		return lo + int32(bits.TrailingZeros64(b))
	}
	for s := (w + 1) / 64; s < len(q.sum); s++ {
		m := q.sum[s]
		if s == (w+1)/64 {
			m &= ^uint64(0) << ((w + 1) % 64)
		}
		if m != 0 {
			w = s*64 + bits.TrailingZeros64(m)
			return int32(w*64 + bits.TrailingZeros64(q.bits[w]))
		}
	}
	return -1
}

// take empties the list of rank r and returns, in increasing order, the positions in it
// whose pair still has rank r, appended to out.
func (q *rankQueue) take(r int32, rank []int32, out []int32) []int32 {
	sorted := true
	for e := q.heads[r]; e >= 0; {
		p, l := q.pos[e], q.link[e]
		if rank[p] == r {
			if len(out) > 0 && out[len(out)-1] > p {
				sorted = false
			}
			out = append(out, p)
		}
		q.link[e], q.free = q.free, e
		e = l
	}
	q.heads[r] = -1
	q.bits[r/64] &^= 1 << (r % 64)
	if q.bits[r/64] == 0 {
		q.sum[r/4096] &^= 1 << (r / 64 % 64)
	}
	if !sorted {
		slices.Sort(out)
	}
	return out
}

// hashString is a fast non-cryptographic hash of short strings (wyhash's mixing): the
// vocabulary table and the piece cache compare the bytes after it, so it need only
// spread keys well.
func hashString(s string) uint64 {
	const (
		k0 = 0xa0761d6478bd642f
		k1 = 0xe7037ed1a0b428db
		k2 = 0x8ebc6af09c88c6e3
	)
	n := len(s)
	seed := uint64(n) * k0
	var a, b uint64
	switch {
	case n > 16:
		for i := 0; n-i > 16; i += 16 {
			seed = mix(le64(s[i:])^k1, le64(s[i+8:])^seed)
		}
		a, b = le64(s[n-16:]), le64(s[n-8:])
	case n >= 8:
		a, b = le64(s), le64(s[n-8:])
	case n >= 4:
		a, b = uint64(le32(s)), uint64(le32(s[n-4:]))
	case n > 0:
		a = uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
	}
	return mix(k2^uint64(n), mix(a^k1, b^seed))
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// pieceCacheMinBytes: shorter pieces merge faster than a cache lookup.
const pieceCacheMinBytes = 6

// pieceCacheMaxBytes: longer pieces are rare; they are merged each time.
const pieceCacheMaxBytes = 30

const (
	pieceShards       = 64
	pieceShardEntries = 1024
)

// pieceCache remembers the counts of pieces that are not single tokens. Natural text
// repeats its words, and code and logs their identifiers, far more than it repeats whole
// messages, so most merging work is done once per distinct piece.
//
// It is a direct-mapped table of fixed size (64k entries, 2 MB) with the keys stored
// inline: a lookup allocates nothing and a new piece simply replaces the one in its
// slot, so text whose pieces never repeat (base64, hashes) costs the cache nothing but
// the lookup.
type pieceCache struct {
	shards [pieceShards]struct {
		mu sync.Mutex
		e  [pieceShardEntries]pieceEntry
	}
}

type pieceEntry struct {
	n     uint8 // length of the key; 0 for an empty entry
	count uint8
	key   [pieceCacheMaxBytes]byte
}

func newPieceCache() *pieceCache { return new(pieceCache) }

func (c *pieceCache) slot(h uint64) (*sync.Mutex, *pieceEntry) {
	s := &c.shards[h%pieceShards]
	return &s.mu, &s.e[h/pieceShards%pieceShardEntries]
}

func (c *pieceCache) get(h uint64, piece string) (int, bool) {
	if len(piece) > pieceCacheMaxBytes {
		return 0, false
	}
	mu, e := c.slot(h)
	mu.Lock()
	ok := int(e.n) == len(piece) && string(e.key[:e.n]) == piece
	n := e.count
	mu.Unlock()
	return int(n), ok
}

func (c *pieceCache) put(h uint64, piece string, n int) {
	if len(piece) > pieceCacheMaxBytes {
		return
	}
	mu, e := c.slot(h)
	mu.Lock()
	e.n, e.count = uint8(copy(e.key[:], piece)), uint8(n)
	mu.Unlock()
}
