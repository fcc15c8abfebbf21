package tokens

import "sync/atomic"

// pieceMemo remembers the counts of the pieces of 3 to memoMaxBytes bytes that one
// goroutine met last, tokens or not. A text's pieces repeat (the words of a language, the
// identifiers and punctuation of code and logs, the keys of JSON): on real transcripts a
// memo of a few thousand pieces answers nine pieces in ten of three bytes or more, where
// counting such a piece asks the vocabulary, whose tables of megabytes wait on memory
// (the filter, the slots, the offsets, the token's bytes). A memo is small enough to stay
// in a core's second-level cache and holds each key inline, so a lookup is one read of a
// word or two and a compare or two; a piece that misses is counted and replaces the one of its set
// used least recently, so text whose pieces never repeat (base64, hashes) costs it no more
// than that.
//
// A memo is used by one goroutine at a time (bpeCounter keeps a memoPool of them), so
// it takes no lock. Its answers depend on nothing but the piece's bytes and the vocabulary
// (reset when the table changes), so a stale entry can never be wrong, only evicted.
//
// Its tables are set associative (memoWays, shortWays): a piece may be in any entry of
// its set, which keeps them in the order they were last used, and a new piece takes the
// place of the one used least recently. Direct-mapped, two frequent pieces that fell in one slot threw
// each other out at every turn (" in" missed 4,357 times in 10 MB of generated sessions).
// Two-way and 4096 entries, the 10 MB documents of scripts/bench.sh (OpenAI chat,
// Responses, Codex: some 4,000 distinct pieces each) still missed 29,000, 26,000 and
// 14,000 times, seven in eight an eviction, and a miss costs a few hundred nanoseconds
// in tables of megabytes (more in a process that has not yet read their pages). In the
// same 64 KB, the short pieces apart in sets of eight and the others in sets of four
// miss 5,185, 4,627 and 3,796 times; on the training half of the real conversations,
// whose pieces mostly miss because they are new, 7,951 became 6,366. A set is one
// cache line, so a lookup past its first entry reads no more memory.
type pieceMemo struct {
	short [1 << (shortMemoBits - shortWayBits)][shortWays]uint64 // first: a set is a cache line
	e     [1 << (memoBits - memoWayBits)][memoWays]memoEntry     // pieces of 8 to memoMaxBytes bytes
	long  [1 << longMemoBits]longEntry                           // pieces of 16 to longMemoMaxBytes bytes
	t     *table                                                 // whose counts it holds
}

// memoBits sizes a memo's table of pieces of 8 to memoMaxBytes bytes: 2048 entries in
// 512 sets, 32 KB.
const memoBits = 11

// memoWays entries make a set.
const (
	memoWayBits = 2
	memoWays    = 1 << memoWayBits
)

// The pieces of 3 to shortMemoMaxBytes bytes, half of all and nearly nine in ten of those
// a memo holds, are held apart, each in one word: twice as many to a cache line,
// so the sets the frequent ones fall in take half the lines, and more of them stay in
// the core's first caches. 4096 entries in sets of eight, 32 KB.
const (
	shortMemoMaxBytes = 7
	shortMemoBits     = 12
	shortWayBits      = 3
	shortWays         = 1 << shortWayBits
)

// A short memo's entry holds the piece's bytes in bits 0-55 (little-endian, zeros past
// the piece), its length in bits 56-58 and its count in bits 59-61 (no more tokens than
// bytes). An empty entry, 0, has length 0, which no piece in the memo has.
const shortCountBits = 7 << 59

// shortSet returns the shortWays entries where the piece with key k may be, the one used
// last first.
func (m *pieceMemo) shortSet(k uint64) *[shortWays]uint64 {
	return &m.short[(k*0x9E3779B97F4A7C15)>>(64-shortMemoBits+shortWayBits)]
}

// shortRest is rest for a short piece.
func (m *pieceMemo) shortRest(set *[shortWays]uint64, k uint64, t *table, piece string, pieces *pieceCache, gate *cacheGate) int {
	for w := 1; w < shortWays; w++ {
		if e := set[w]; e&^shortCountBits == k {
			copy(set[1:w+1], set[:w])
			set[0] = e
			return int(e >> 59)
		}
	}
	c := t.countPiece(piece, pieces, gate)
	copy(set[1:], set[:shortWays-1])
	set[0] = k | uint64(c)<<59
	return c
}

// shortKeyEnd is the key of a short piece near the end of its text, byte by byte
// (countText writes out the rest of the key, shortMemoKey in the tests).
//
//go:noinline
func shortKeyEnd(piece string) uint64 {
	var k uint64
	for i := len(piece) - 1; i >= 0; i-- {
		k = k<<8 | uint64(piece[i])
	}
	return k | uint64(len(piece))<<56
}

// memoMaxBytes is the longest piece a memo's table e holds: its bytes and length and
// its count fit in two words. Longer pieces are rare in o200k (about 1% of real text's),
// but cl100k keeps an identifier in camel case whole ("concurrentConfig"): those of up
// to longMemoMaxBytes go to a second table of four words an entry, and longer ones to
// the shared cache of pieces.
const memoMaxBytes = 15

// longMemoBits sizes the second table: 1024 entries, 32 KB.
const longMemoBits = 10

const longMemoMaxBytes = 31

// memoEntry is a piece and its count: a holds its first 8 bytes, b the next 7 and, in
// its top byte, its length (bits 60-63) and count (56-59; a piece has no more tokens than
// bytes), little-endian with zeros past the piece. An empty entry, all zero, has length 0,
// which no piece in a memo has.
type memoEntry struct {
	a, b uint64
}

const memoCountBits = 0xF << 56

// reset readies m for counting with t: the counts it holds are another table's, or none.
func (m *pieceMemo) reset(t *table) {
	m.t = t
	clear(m.short[:])
	clear(m.e[:])
	clear(m.long[:])
}

// longEntry is a piece of 16 to longMemoMaxBytes bytes and its count, as memoEntry holds
// a shorter one: k[3] holds bytes 24-30 and, in its top byte, the length less 16 (bits
// 60-63) and the count (56-59). A piece of more than 15 tokens is not kept.
type longEntry struct {
	k [4]uint64
}

// countLong returns the number of tokens of text[i:j] (16 to longMemoMaxBytes bytes) with
// table t, from m's second table or counted and remembered.
func (m *pieceMemo) countLong(t *table, text string, i, j int, pieces *pieceCache, gate *cacheGate) int {
	var k [4]uint64
	l := j - i
	if i+32 <= len(text) {
		k = [4]uint64{le64(text[i:]), le64(text[i+8:]), le64(text[i+16:]), le64(text[i+24:])}
		if l < 24 {
			k[2] &= 1<<(8*(l-16)) - 1
			k[3] = 0
		} else {
			k[3] &= 1<<(8*(l-24)) - 1
		}
	} else {
		for x := l - 1; x >= 0; x-- {
			k[x/8] = k[x/8]<<8 | uint64(text[i+x])
		}
	}
	k[3] |= uint64(l-16) << 60
	e := &m.long[mix(k[0]^k[2]^0xa0761d6478bd642f, k[1]^k[3]^0xe7037ed1a0b428db)>>(64-longMemoBits)]
	if e.k[0] == k[0] && e.k[1] == k[1] && e.k[2] == k[2] && e.k[3]&^memoCountBits == k[3] {
		return int(e.k[3] >> 56 & 0xF)
	}
	c := t.countPiece(text[i:j], pieces, gate)
	if c <= 15 {
		k[3] |= uint64(c) << 56
		e.k = k
	}
	return c
}

// set returns the memoWays entries where the piece with key a, b (memoKey, with its
// length in b) may be, the one used last first. countText looks at the first itself and
// calls rest for the others.
func (m *pieceMemo) set(a, b uint64) *[memoWays]memoEntry {
	return &m.e[mix(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)>>(64-memoBits+memoWayBits)]
}

// rest returns the count of piece, whose key is a, b and which is not in the first entry
// of its set: found in another, it moves to the first; not found, it is counted with t
// and takes the first entry, the others moving down one and the last, used least
// recently, dropping out.
func (m *pieceMemo) rest(set *[memoWays]memoEntry, a, b uint64, t *table, piece string, pieces *pieceCache, gate *cacheGate) int {
	for k := 1; k < memoWays; k++ {
		if e := set[k]; e.a == a && e.b&^memoCountBits == b {
			copy(set[1:k+1], set[:k])
			set[0] = e
			return int(e.b >> 56 & 0xF)
		}
	}
	c := t.countPiece(piece, pieces, gate)
	copy(set[1:], set[:memoWays-1])
	set[0] = memoEntry{a, b | uint64(c)<<56}
	return c
}

// memoKeyEnd is the key of a piece near the end of its text, byte by byte (countText
// writes out the rest of the key, memoKey in the tests). Not inlined, so that countText's
// written-out key stays small.
//
//go:noinline
func memoKeyEnd(piece string) (a, b uint64) {
	for k := len(piece) - 1; k >= 8; k-- {
		b = b<<8 | uint64(piece[k])
	}
	for k := min(len(piece), 8) - 1; k >= 0; k-- {
		a = a<<8 | uint64(piece[k])
	}
	return a, b | uint64(len(piece))<<60
}

// memoPool holds a counter's memos, one for each goroutine counting at once, up to
// memoSlots; a goroutine that finds them all taken counts without one. (A sync.Pool
// would hand its memos to the collector at every cycle, and counting allocates enough
// that a memo seldom lived through a few texts.)
type memoPool struct {
	slots [memoSlots]struct {
		busy atomic.Bool
		m    *pieceMemo // made by the first goroutine to take the slot
	}
}

// memoSlots: more than the cores of most machines counting at once (CountAll runs
// GOMAXPROCS goroutines).
const memoSlots = 16

// get takes a free memo and its slot, or nil and -1 when every slot is taken.
func (p *memoPool) get() (*pieceMemo, int) {
	for k := range p.slots {
		s := &p.slots[k]
		if !s.busy.Load() && s.busy.CompareAndSwap(false, true) {
			if s.m == nil {
				s.m = new(pieceMemo)
			}
			return s.m, k
		}
	}
	return nil, -1
}

// put gives back the memo of slot k, taken by get.
func (p *memoPool) put(k int) {
	if k >= 0 {
		p.slots[k].busy.Store(false)
	}
}
