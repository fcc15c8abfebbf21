package tokens

// shortTable holds the ranks of the tokens of shortMinBytes to shortMaxBytes bytes,
// each in one word of an open-addressing table: the length and bytes of the token and
// its rank+1 (0 marks an empty slot). Long pieces merge by looking up strings of three
// to five bytes more than any other (the syllables of letters, the pairs of tokens that
// make them), and most of those that get past the vocabulary's filter are tokens, which
// a lookup in the vocabulary's own table finds after three reads in three arrays of
// megabytes (slot, offsets, bytes), each a miss of the core's caches; here it is one
// read, and the key is compared in a register. 1 MB for o200k's 71,000 tokens of
// three to five bytes, and for cl100k's 42,000.
//
// It is made with the rest of the table when the table files are generated, and read in
// place like them: building it at run time cost 4-8 ms in every process that counted
// more than a megabyte, much of it in page faults on the fresh memory.
type shortTable struct {
	slots []uint64
	shift uint // 64 - log2(len(slots)): slots are indexed by the top bits of the hash
}

const (
	shortMinBytes = 3
	shortMaxBytes = 5
	shortRankBits = 18 // rank+1 in the low bits: o200k has 199,998 tokens
)

// shortKey packs s (shortMinBytes to shortMaxBytes bytes) with its length, so that
// strings of different lengths never compare equal whatever their bytes.
func shortKey(s string) uint64 {
	k := uint64(len(s)-shortMinBytes) << 40
	for i := range len(s) {
		k |= uint64(s[i]) << (8 * i)
	}
	return k
}

// rank is table.rank of s (shortMinBytes to shortMaxBytes bytes), whose hashString
// is h.
func (st *shortTable) rank(s string, h uint64) int32 {
	k := shortKey(s)
	mask := uint64(len(st.slots) - 1)
	for i := h >> st.shift; ; i = (i + 1) & mask {
		e := st.slots[i]
		if e == 0 {
			return -1
		}
		if e>>shortRankBits == k {
			return int32(e&(1<<shortRankBits-1)) - 1
		}
	}
}
