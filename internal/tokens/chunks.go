package tokens

import (
	"hash/maphash"
	"strings"
	"sync"
)

// Recounter is implemented by a counter that can count a text so that texts sharing most
// of its lines count fast after it: ctx-budget counts each result it cuts, then the
// candidate cuts its search tries, which keep most of the result's lines. Recount(text)
// == Count(text).
type Recounter interface {
	Counter
	Recount(text string) int
}

// Recount counts a long text in chunks, each remembered by its content, so that a text
// counted again with a few changes (a tool result cut to fit, or without its first line)
// costs the counting of what changed. It costs 5-10% more than Count the first time, so
// Count does not do it.
func (c *bpeCounter) Recount(text string) int { return c.count(text, true) }

// A text's count is the sum of its chunks' when each chunk ends after a newline followed
// by a printable ASCII character other than '/': no piece of either pre-tokenizer holds
// both (a piece that holds a newline is white space, or punctuation followed by newlines,
// and for o200k slashes), and the pieces after that place do not depend on what came
// before it. Of those places, a chunk ends at the ones whose line ends in bytes of a
// chosen hash (about one line in four), so that the same lines make the same chunks in
// another text, wherever they sit in it (as rsync cuts files into blocks).
// chunkedMinBytes: a shorter text is counted whole.
const chunkedMinBytes = 4 << 10

// (Variables: the fuzz test cuts at every place it may, a few bytes apart.)
var (
	chunkMinBytes = 128 // no chunk ends this soon after the last
	chunkLineBits = 2   // a place ends a chunk when its line's hash has these top bits clear
)

// endsChunk reports whether text may be cut at i into chunks whose counts add up, and
// whether it should be: text[i-1] is a newline.
func endsChunk(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	if c := text[i]; c <= ' ' || c >= 0x7f || c == '/' {
		return false
	}
	// (FNV-1a of the line's last bytes)
	h := uint32(2166136261)
	for j := max(0, i-17); j < i-1; j++ {
		h = (h ^ uint32(text[j])) * 16777619
	}
	return h>>(32-chunkLineBits) == 0
}

// countChunked counts text chunk by chunk, through the cache of chunks.
func (c *bpeCounter) countChunked(text string) int {
	n, from := 0, 0
	for i := chunkMinBytes; i < len(text); {
		j := strings.IndexByte(text[i-1:], '\n')
		if j < 0 {
			break
		}
		if end := i + j; endsChunk(text, end) { // (text[end-1] is the newline)
			n += c.countChunk(text[from:end])
			from, i = end, end+chunkMinBytes
		} else {
			i = end + 1
		}
	}
	return n + c.countChunk(text[from:])
}

// countChunk counts one chunk, or says what it counted before.
func (c *bpeCounter) countChunk(chunk string) int {
	k := chunkKey{maphash.String(chunkSeeds[0], chunk), maphash.String(chunkSeeds[1], chunk), len(chunk)}
	if n, ok := c.chunks.get(k); ok {
		return n
	}
	n := c.countText(chunk)
	c.chunks.put(k, n)
	return n
}

// chunkSeeds key the cache of chunks: two hashes of 64 bits and the length, so that two
// chunks of a process mistaken for each other is a chance of about 2^-128 a pair.
var chunkSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

type chunkKey struct {
	a, b uint64
	n    int
}

// chunkCache maps chunks to their counts, up to a bound (about 40 MB of entries).
type chunkCache struct {
	n      int
	shards [16]struct {
		mu sync.Mutex
		m  map[chunkKey]int32
	}
}

const maxChunkEntries = 1 << 19

func (cc *chunkCache) get(k chunkKey) (int, bool) {
	s := &cc.shards[k.a%16]
	s.mu.Lock()
	n, ok := s.m[k]
	s.mu.Unlock()
	return int(n), ok
}

func (cc *chunkCache) put(k chunkKey, n int) {
	s := &cc.shards[k.a%16]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[chunkKey]int32{}
	}
	if len(s.m) < maxChunkEntries/16 {
		s.m[k] = int32(n)
	}
}
