package tokens

import (
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Counter counts tokens of text. Implementations are safe for concurrent use.
type Counter interface {
	Name() string // "estimate", "o200k" or "cl100k"
	Count(text string) int
}

// Names of the counters New accepts, cheapest first.
func Names() []string { return []string{"estimate", "o200k", "cl100k"} }

// New returns the counter called name: "estimate", "o200k" or "cl100k" (the tiktoken
// names "o200k_base" and "cl100k_base" are accepted too). Each call returns a counter
// with its own caches; the exact counters share one copy of each vocabulary, built from
// the data embedded by github.com/pkoukk/tiktoken-go-loader the first time a counter
// needs it. The exact counts are tiktoken's, checked against tiktoken-go by a
// differential test; counting takes time linear in the text (O(n log n) for a piece the
// pre-tokenizer cannot split), where tiktoken's merge loop is quadratic.
func New(name string) (Counter, error) {
	switch exactName(name) {
	case "o200k":
		return newBPECounter("o200k", o200k), nil
	case "cl100k":
		return newBPECounter("cl100k", cl100k), nil
	}
	if strings.ToLower(strings.TrimSpace(name)) == "estimate" {
		return estimator{}, nil
	}
	return nil, fmt.Errorf("unknown tokenizer %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// IsExact reports whether c counts exactly (o200k, cl100k): a count costs about what
// parsing the text does, where an estimate's costs next to nothing.
func IsExact(c Counter) bool {
	_, ok := c.(*bpeCounter)
	return ok
}

// exactName is the name of the exact counter New(name) makes (its Name), or "" when
// name is no exact counter's.
func exactName(name string) string {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "o200k", "o200k_base":
		return "o200k"
	case "cl100k", "cl100k_base":
		return "cl100k"
	}
	return ""
}

// Estimate is about 4 bytes per token, rounding up; 0 for "". English prose and code
// average close to 4 bytes per token in every current vocabulary; text in other scripts
// runs more tokens per byte, so the estimate is low for it.
func Estimate(text string) int { return (len(text) + 3) / 4 }

type estimator struct{}

func (estimator) Name() string          { return "estimate" }
func (estimator) Count(text string) int { return Estimate(text) }

// CountLength implements ByLength.
func (estimator) CountLength(n int) int { return (n + 3) / 4 }

// ByLength is implemented by a counter whose count of a text depends on nothing but its
// length in bytes (the estimate): CountLength(len(s)) == Count(s). A caller that knows the
// length of a text without having it (a JSON string literal not yet decoded) can count it
// without building it.
type ByLength interface {
	Counter
	CountLength(n int) int
}

// bpeCounter counts exactly what tiktoken's EncodeOrdinary would encode text to (see
// countText): text that looks like a special token ("<|endoftext|>") is counted as the
// ordinary text it is, which is how a provider counts it inside a message. It keeps two
// caches: counts of whole texts (agent transcripts repeat the same file contents and
// tool outputs many times) and counts of pieces that are not single tokens.
type bpeCounter struct {
	name   string
	vocab  *vocab
	cache  *countCache
	pieces *pieceCache
	memos  memoPool   // each goroutine counting takes a memo of its own (countText)
	chunks chunkCache // counts of chunks of long texts (countChunked)
	disk   *DiskCache // counts of long texts shared with other runs, if any
}

func newBPECounter(name string, v *vocab) *bpeCounter {
	return &bpeCounter{name: name, vocab: v, cache: newCountCache(maxCacheEntries), pieces: newPieceCache()}
}

func (c *bpeCounter) Name() string { return c.name }

func (c *bpeCounter) Count(text string) int { return c.count(text, false) }

// count is Count, or Recount when chunked: the text counted in chunks, and neither looked
// up in nor kept in the cache shared with other runs (which Recount's texts, cuts tried
// and dropped, would fill).
func (c *bpeCounter) count(text string, chunked bool) int {
	if text == "" {
		return 0
	}
	if len(text) <= cacheMinBytes {
		return c.countText(text)
	}
	// The cache of this process is keyed by two seeded hashes (textKey), cheap next to
	// SHA-256; the digest the cache shared with other runs keys by is taken only for a
	// text that cache may hold, and only when it is asked (a text this process counted
	// before is not).
	key := textKeyOf(text)
	if n, ok := c.cache.get(key); ok {
		return n
	}
	var sum [32]byte
	// (Recount's texts, cuts tried, are neither looked up nor kept there: no other run
	// counted them, and their SHA-256 was 1-2% of ctx-budget's CPU.)
	disk := c.disk != nil && !chunked && len(text) >= diskMinBytes
	if disk {
		// Hash the text in place: a []byte conversion would copy it.
		sum = sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))
		if n, ok := c.disk.lookup(sum, len(text)); ok {
			c.cache.put(key, n)
			return n
		}
	}
	if chunked && len(text) >= chunkedMinBytes {
		n := c.countChunked(text)
		c.cache.put(key, n)
		return n
	}
	n := c.countText(text)
	c.cache.put(key, n)
	if disk {
		c.disk.remember(sum, len(text), n)
	}
	return n
}

// textKey keys a counter's cache of whole texts: two hashes of 64 bits, seeded at random
// once a process, and the length, so that two texts of a process mistaken for each other
// is a chance of about 2^-128 a pair (as chunkKey). Hashing runs at memory speed, several
// times SHA-256's, which on texts that do not repeat was a tenth of counting; a process's
// own cache need not be keyed by a digest anyone else can check (DiskCache is).
type textKey struct {
	a, b uint64
	n    int
}

var textSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func textKeyOf(text string) textKey {
	return textKey{maphash.String(textSeeds[0], text), maphash.String(textSeeds[1], text), len(text)}
}

// countText is countText with the counter's caches: the shared cache of pieces and a
// memo of pieces of the goroutine's own.
func (c *bpeCounter) countText(text string) int {
	m, k := c.memos.get()
	n := countText(c.vocab, text, c.pieces, m)
	c.memos.put(k)
	return n
}

const (
	// cacheMinBytes: shorter strings are counted again rather than cached. They are
	// cheap to count and numerous (names, ids, short replies), so caching them would
	// mostly fill the cache.
	cacheMinBytes = 64

	// maxCacheEntries bounds a counter's cache to about 30 MB (a 24-byte key and a
	// count per entry, plus map overhead). Agent transcripts repeat the same file
	// contents and tool outputs many times; past the bound new strings are simply
	// counted without being remembered.
	maxCacheEntries = 1 << 19

	cacheShards = 16
)

// countCache maps the key of a string (textKey) to its token count. Keying by hashes
// keeps an entry's size fixed however long the string, and does not pin the caller's
// (possibly huge) input buffer in memory as a string key would.
type countCache struct {
	max    int64
	n      atomic.Int64
	shards [cacheShards]struct {
		mu sync.RWMutex
		m  map[textKey]int
	}
}

func newCountCache(max int) *countCache {
	c := &countCache{max: int64(max)}
	for i := range c.shards {
		c.shards[i].m = map[textKey]int{}
	}
	return c
}

func (c *countCache) get(key textKey) (int, bool) {
	s := &c.shards[key.a%cacheShards]
	s.mu.RLock()
	n, ok := s.m[key]
	s.mu.RUnlock()
	return n, ok
}

func (c *countCache) put(key textKey, n int) {
	s := &c.shards[key.a%cacheShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return
	}
	if c.n.Add(1) > c.max {
		c.n.Add(-1)
		return
	}
	s.m[key] = n
}

func (c *countCache) len() int { return int(c.n.Load()) }

// parallelMinBytes: below this much text, starting goroutines costs more than it saves.
const parallelMinBytes = 64 << 10

// CountAll counts each of texts with c, in order. With enough text to be worth it, the
// work is split into contiguous chunks of about equal size, a few per core, which
// runtime.GOMAXPROCS workers take in turn, so one slow chunk does not leave the other
// cores idle.
func CountAll(c Counter, texts []string) []int {
	out := make([]int, len(texts))
	total := 0
	for _, s := range texts {
		total += len(s)
	}
	workers := runtime.GOMAXPROCS(0)
	_, claude := c.(*ClaudeCounter)
	if _, cheap := c.(estimator); cheap || claude || workers < 2 || len(texts) < 2 || total < parallelMinBytes {
		for i, s := range texts {
			out[i] = c.Count(s)
		}
		return out
	}

	// bounds[k]:bounds[k+1] is chunk k.
	target := total/(4*workers) + 1
	bounds := []int{0}
	acc := 0
	for i, s := range texts {
		acc += len(s)
		if acc >= target && i+1 < len(texts) {
			bounds = append(bounds, i+1)
			acc = 0
		}
	}
	bounds = append(bounds, len(texts))
	chunks := len(bounds) - 1

	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, chunks) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= chunks {
					return
				}
				for i := bounds[k]; i < bounds[k+1]; i++ {
					out[i] = c.Count(texts[i])
				}
			}
		})
	}
	wg.Wait()
	return out
}
