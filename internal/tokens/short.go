package tokens

// shortTable holds the ranks of the tokens of shortMinBytes to shortMaxBytes bytes,
// each in one word of an open-addressing table: the length and bytes of the token and
// its rank+1 (0 marks an empty slot). Long pieces merge by looking up strings of three
// to five bytes more than any other (the syllables of letters, the pairs of tokens that
// make them), and most of those that get past the vocabulary's filter are tokens, which
// a lookup in the vocabulary's own table finds after three reads in three arrays of
// megabytes (slot, offsets, bytes), each a miss of the core's caches; here it is one
// read, and the key is compared in a register. 1 MB for o200k's 71,000 tokens of
// three to five bytes, 512 KB for cl100k's.
//
// It is built after the table has counted shortAfterBytes: a build costs a few
// milliseconds, and touches every page of the tokens, which a process counting a small
// document would pay for nothing.
type shortTable struct {
	slots []uint64
	shift uint // 64 - log2(len(slots)): slots are indexed by the top bits of the hash
}

const (
	shortMinBytes   = 3
	shortMaxBytes   = 5
	shortRankBits   = 18 // rank+1 in the low bits: o200k has 199,998 tokens
	shortAfterBytes = 1 << 20
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

// noteCounted adds n bytes to what t has counted, and builds the short table once
// that passes shortAfterBytes.
func (t *table) noteCounted(n int) {
	if t.short.Load() != nil {
		return
	}
	if t.counted.Add(int64(n)) >= shortAfterBytes && t.counted.Swap(-1<<62) >= shortAfterBytes {
		// Swap leaves one caller to build; the others keep the slow lookup meanwhile.
		t.short.Store(t.buildShort())
	}
}

// buildShort makes the short table of t, or returns nil when its ranks do not fit.
func (t *table) buildShort() *shortTable {
	if t.size()+1 >= 1<<shortRankBits {
		return nil
	}
	n := 0
	for r := range t.size() {
		if l := t.off[r+1] - t.off[r]; l >= shortMinBytes && l <= shortMaxBytes {
			n++
		}
	}
	size := 1
	for size < n*7/4 {
		size *= 2
	}
	st := &shortTable{slots: make([]uint64, size), shift: 64}
	for s := size; s > 1; s /= 2 {
		st.shift--
	}
	mask := uint64(size - 1)
	for r := range t.size() {
		tok := t.blob[t.off[r]:t.off[r+1]]
		if len(tok) < shortMinBytes || len(tok) > shortMaxBytes {
			continue
		}
		i := hashString(tok) >> st.shift
		for st.slots[i] != 0 {
			i = (i + 1) & mask
		}
		st.slots[i] = shortKey(tok)<<shortRankBits | uint64(r+1)
	}
	return st
}
