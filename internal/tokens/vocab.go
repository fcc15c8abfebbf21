package tokens

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"
)

// vocab is one BPE vocabulary. Its table is generated from the .tiktoken file that
// github.com/pkoukk/tiktoken-go-loader embeds (base64 token, space, rank, one a line)
// and committed as <encoding>.bpe (see tables_test.go: `go generate` rewrites them and
// a test checks they are current). The file is embedded in the binary and used where it
// lies: nothing is parsed or built at start, and only the pages a count touches are read
// in, so a filter that counts a small document exactly starts in a few milliseconds,
// where building the same table from the .tiktoken text takes 20-30 ms (o200k) and a
// Go map of it, as tiktoken-go builds, 250 ms.
type vocab struct {
	encoding string // the tiktoken encoding name, e.g. "o200k_base"
	data     string // the embedded table file
	next     func(p splitter, s string, i int) int
	o200k    bool // its pattern is o200k_base's, not cl100k_base's (nextASCII)

	once sync.Once
	t    *table
	err  error
}

//go:generate go test -run ^TestTablesCurrent$ -write-tables

var (
	//go:embed o200k_base.bpe
	o200kTable string
	//go:embed cl100k_base.bpe
	cl100kTable string

	o200k  = &vocab{encoding: "o200k_base", data: o200kTable, next: splitter.nextO200k, o200k: true}
	cl100k = &vocab{encoding: "cl100k_base", data: cl100kTable, next: splitter.nextCl100k}
)

func (v *vocab) table() *table {
	v.once.Do(func() { v.t, v.err = loadTable(v.data) })
	if v.err != nil {
		// The table is compiled into the binary, so this is a build defect, not an
		// input the caller could handle.
		panic(fmt.Sprintf("tokens: load embedded %s vocabulary: %v", v.encoding, v.err))
	}
	return v.t
}

// table maps the bytes of each token to its rank, which is also its id. Token r is
// blob[off[r]:off[r+1]]. slots is an open-addressing hash table with linear probing
// over the low bits of hashString: a slot holds rank+1 in its low rankBits bits (0 marks
// an empty slot) and the top bits of the key's hash above them; a probe compares those
// bits first and then the token's bytes, so a lookup is exact whatever the input.
//
// Small tables serve the lookups merging does most, nearly all of them for strings
// that are not tokens: pair2 holds the rank of every two-byte token (-1 for the rest) by
// the bytes' value; long2 has bit x<<8|y set when some token of three bytes or more
// starts with the bytes x, y; filter, a Bloom filter with one hash and about ten bits a
// token (a quarter of the size of slots, so it stays in a core's cache), answers most
// other misses without a probe. apart2 has bit x<<8|y set when the bytes x, y appear
// together in no token: merging never joins them (mergeApart).
type table struct {
	blob     string
	off      []uint32
	slots    []uint32
	pair2    []int32 // 1<<16
	long2    []uint64
	apart2   []uint64
	filter   []uint64 // a one-hash Bloom filter of the tokens, by hashString
	fmask    uint64
	mask     uint64
	rankBits uint
	maxLen   int // the longest token, in bytes: longer strings need no lookup

	byte1   [256]int32 // the rank of each byte as a token, -1 for none
	scratch sync.Pool  // of *mergeScratch, whose caches hold this table's ranks

	triOnce sync.Once
	tri3    []uint64 // see trigrams
	rank3   []int32  // see trigrams

	short *shortTable // see shortTable; nil when the file has none
}

// trigrams returns a bitmap with bit a<<14|b<<7|c set when the ASCII bytes a, b, c
// appear in a row in some token. It is built from the tokens on first use (a few
// milliseconds), since only a long piece of ASCII that nothing else splits needs it
// (mergeApart), and most runs never meet one.
//
// With it comes rank3, the rank+1 (0 for none) of each token of three ASCII bytes by
// the same index: merging such a piece asks for the rank of three bytes at about every
// other merge, and the slice a text of few letters uses of it (a few hundred bytes per
// pair of first bytes) stays in a core's cache, where a lookup in the vocabulary waits
// on memory. Its 8 MB are virtual: only the pages of tokens are written.
func (t *table) trigrams() []uint64 {
	t.triOnce.Do(func() {
		tri := make([]uint64, 1<<21/64)
		rank3 := make([]int32, 1<<21)
		for r := range t.size() {
			s := t.blob[t.off[r]:t.off[r+1]]
			for i := 0; i+3 <= len(s); i++ {
				if a, b, c := s[i], s[i+1], s[i+2]; a|b|c < 0x80 {
					k := int(a)<<14 | int(b)<<7 | int(c)
					tri[k/64] |= 1 << (k % 64)
					if len(s) == 3 {
						rank3[k] = int32(r) + 1
					}
				}
			}
		}
		t.tri3, t.rank3 = tri, rank3
	})
	return t.tri3
}

// rank returns the rank of the token whose bytes are s, or -1 when s is not a token.
func (t *table) rank(s string) int32 {
	if len(s) == 2 {
		return t.pair2[int(s[0])<<8|int(s[1])]
	}
	if len(s) > t.maxLen || len(s) == 0 {
		return -1
	}
	h := hashString(s)
	if f := h >> filterShift & t.fmask; t.filter[f/64]&(1<<(f%64)) == 0 {
		return -1
	}
	if len(s) >= shortMinBytes && len(s) <= shortMaxBytes && s[0] < 0x80 {
		if st := t.short; st != nil {
			return st.rank(s, h)
		}
	}
	return t.rankSlot(s, h)
}

// rankHashed is rank of s (neither two bytes long nor longer than maxLen) whose
// hashString is h. rank repeats its body rather than call it: neither is inlined, and the
// extra call cost about 4% on cl100k's unbroken letters (bench-shapes, 1 MB).
func (t *table) rankHashed(s string, h uint64) int32 {
	if f := h >> filterShift & t.fmask; t.filter[f/64]&(1<<(f%64)) == 0 {
		return -1
	}
	if len(s) >= shortMinBytes && len(s) <= shortMaxBytes && s[0] < 0x80 {
		if st := t.short; st != nil {
			return st.rank(s, h)
		}
	}
	return t.rankSlot(s, h)
}

// rankSlot is rank of s, whose hashString is h, from the table's slots.
func (t *table) rankSlot(s string, h uint64) int32 {
	tag := uint32(h>>(32+t.rankBits)) << t.rankBits
	rankMask := uint32(1)<<t.rankBits - 1
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return -1
		}
		if e&^rankMask == tag {
			r := e&rankMask - 1
			if t.blob[t.off[r]:t.off[r+1]] == s {
				return int32(r)
			}
		}
	}
}

// size is the number of tokens.
func (t *table) size() int { return len(t.off) - 1 }

// The table file is a header of seven little-endian uint32 (tableMagic, tokens, log2 of
// the slot count, rank bits, longest token, log2 of the filter's bits, log2 of the short
// table's slots or 0 for none), then the arrays off, slots, pair2 and byte1 (uint32s),
// long2, apart2, filter and the short table's slots (uint64s, from an offset that is a
// multiple of 8, so that on a little-endian machine every array is a view of the
// embedded file: a copy would cost its pages at every start), and blob.
const (
	tableMagic  = 0x35455042 // "BPE5"
	tableHeader = 7 * 4
	pair2Words  = 1 << 16
	long2Words  = 1 << 16 / 32
	apart2Words = 1 << 16 / 32

	// filterShift picks the filter's bits of a hash: above the slot index (the low
	// bits, 19 at most here) and below the tag (the top 32-rankBits bits).
	filterShift = 20
)

// loadTable reads a table file in place: on a little-endian machine, with the arrays
// aligned (the linker aligns embedded data), they are views of data, not copies.
func loadTable(data string) (*table, error) {
	if len(data) < tableHeader {
		return nil, fmt.Errorf("table file of %d bytes", len(data))
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32([]byte(data[4*i : 4*i+4])) }
	magic, n, logSlots, rankBits, maxLen, logFilter, logShort := word(0), int(word(1)), int(word(2)), uint(word(3)), int(word(4)), int(word(5)), int(word(6))
	if magic != tableMagic || n < 256 || logSlots > filterShift || 1<<logSlots < n ||
		rankBits > 30 || 1<<rankBits <= n || logFilter < 6 || filterShift+logFilter > 32+int(rankBits) ||
		logShort > 30 || logShort > 0 && n >= 1<<shortRankBits {
		return nil, fmt.Errorf("bad table header")
	}
	nSlots := 1 << logSlots
	rest := data[tableHeader:]
	cut := func(words int) string {
		if len(rest) < 4*words {
			rest = ""
			return ""
		}
		s := rest[:4*words]
		rest = rest[4*words:]
		return s
	}
	off, slots, pair2, byte1 := cut(n+1), cut(nSlots), cut(pair2Words), cut(256)
	if (len(data)-len(rest))%8 != 0 {
		cut(1) // the padding before the uint64s
	}
	long2, apart2, filter := cut(long2Words), cut(apart2Words), cut(1<<logFilter/32)
	short := ""
	if logShort > 0 {
		short = cut(2 << logShort)
	}
	if filter == "" || logShort > 0 && short == "" {
		return nil, fmt.Errorf("table file truncated")
	}
	t := &table{
		blob: rest, off: uint32s(off), slots: uint32s(slots), pair2: int32s(pair2), long2: uint64s(long2),
		apart2: uint64s(apart2), filter: uint64s(filter), fmask: 1<<logFilter - 1,
		mask: uint64(nSlots - 1), rankBits: rankBits, maxLen: maxLen,
	}
	if t.off[0] != 0 || int(t.off[n]) != len(t.blob) {
		return nil, fmt.Errorf("table offsets do not match its %d bytes of tokens", len(t.blob))
	}
	copy(t.byte1[:], int32s(byte1))
	if logShort > 0 {
		t.short = &shortTable{slots: uint64s(short), shift: uint(64 - logShort)}
	}
	return t, nil
}

// uint32s views s as little-endian uint32s, copying only when it cannot be a view.
func uint32s(s string) []uint32 { return view[uint32](s) }

func int32s(s string) []int32 { return view[int32](s) }

func uint64s(s string) []uint64 { return view[uint64](s) }

func view[T uint32 | int32 | uint64](s string) []T {
	size := int(unsafe.Sizeof(T(0)))
	n := len(s) / size
	p := unsafe.StringData(s)
	if littleEndian && uintptr(unsafe.Pointer(p))%uintptr(size) == 0 {
		// Read-only memory: nothing writes to these slices.
		return unsafe.Slice((*T)(unsafe.Pointer(p)), n)
	}
	out := make([]T, n)
	for i := range out {
		var x uint64
		for k := size - 1; k >= 0; k-- {
			x = x<<8 | uint64(s[i*size+k])
		}
		out[i] = T(x)
	}
	return out
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
