package tokens

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"abcdefgh", 2},
		{"你好", 2}, // 6 bytes
		{strings.Repeat("x", 4001), 1001},
	} {
		if got := Estimate(tc.text); got != tc.want {
			t.Errorf("Estimate(%q) = %d, want %d", tc.text, got, tc.want)
		}
		c, _ := New("estimate")
		if got := c.Count(tc.text); got != tc.want {
			t.Errorf("estimate counter %q = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// exactCases were counted with tiktoken-go v0.1.8 EncodeOrdinary when the test was
// written; they agree with OpenAI's tiktoken.
var exactCases = []struct {
	text          string
	o200k, cl100k int
}{
	{"", 0, 0},
	{"hello world", 2, 2},
	{"Hello, world!", 4, 4},
	{"<|endoftext|>", 7, 7}, // special-token text counts as ordinary text
	{"你好，世界", 3, 6},
	{"func main() {\n\tfmt.Println(\"hi\")\n}\n", 10, 10},
	{`{"role":"user","content":"What's 2+2?"}`, 14, 15},
	{"    indented\n\n\nlines  ", 6, 6},
	{"🙂👍🏽 emoji", 5, 9},
	{"The quick brown fox jumps over the lazy dog.", 10, 10},
	{"1234567890", 4, 4},
	{"naïve café résumé", 5, 7},
	// Longer than cacheMinBytes, so counted through the cache.
	{strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10), 101, 101}, // the final space is a token of its own
}

func TestExactCounts(t *testing.T) {
	for _, name := range []string{"o200k", "cl100k"} {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, c.Name())
		}
		for _, tc := range exactCases {
			want := tc.o200k
			if name == "cl100k" {
				want = tc.cl100k
			}
			for round := range 2 { // the second round of long texts is a cache hit
				if got := c.Count(tc.text); got != want {
					t.Errorf("%s round %d: Count(%q) = %d, want %d", name, round, tc.text, got, want)
				}
			}
		}
	}
}

func TestNew(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "estimate,o200k,cl100k" {
		t.Errorf("Names() = %s", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"estimate", "estimate"},
		{"o200k", "o200k"},
		{"O200K_BASE", "o200k"},
		{"cl100k_base", "cl100k"},
	} {
		c, err := New(tc.in)
		if err != nil || c.Name() != tc.want {
			t.Errorf("New(%q) = %v, %v; want %s", tc.in, c, err, tc.want)
		}
	}
	for _, bad := range []string{"", "p50k", "auto", "gpt-4o"} {
		_, err := New(bad)
		if err == nil || !strings.Contains(err.Error(), "estimate, o200k, cl100k") {
			t.Errorf("New(%q) error = %v, want one listing the valid names", bad, err)
		}
	}
}

// TestCountOffline loads the vocabularies in a fresh process with no network, no home
// and empty cache directories, and checks that the counts are right and nothing was
// written. A counter that fetched or cached a vocabulary the way tiktoken-go's default
// loader does (download, then a cache file) would fail through the dead proxy or leave
// the file behind.
func TestCountOffline(t *testing.T) {
	if os.Getenv("CTXKIT_TOKENS_OFFLINE_CHILD") == "1" {
		for _, name := range []string{"o200k", "cl100k"} {
			c, err := New(name)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Count("hello world"); got != 2 {
				t.Errorf("%s: Count(hello world) = %d, want 2", name, got)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("starts a process that loads both vocabularies")
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: every connection is refused

	cmd := exec.Command(os.Args[0], "-test.run=^TestCountOffline$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		"CTXKIT_TOKENS_OFFLINE_CHILD=1",
		"HOME="+dir, "XDG_CACHE_HOME="+dir, "TIKTOKEN_CACHE_DIR="+dir,
		"DATA_GYM_CACHE_DIR="+dir, "TMPDIR="+dir,
		"HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy,
		"NO_PROXY=", "no_proxy=",
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCountOffline") {
		t.Fatalf("offline child: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("offline counting wrote %s", e.Name())
	}
}

// mixedTexts returns n distinct texts of a few hundred bytes to a few KB: prose, code
// and JSON, each with its index so no two are equal.
func mixedTexts(n int) []string {
	prose := "Context windows fill up with tool output long before the conversation itself gets long. "
	code := "func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n\tif err := s.auth(r); err != nil {\n\t\thttp.Error(w, err.Error(), 401)\n\t\treturn\n\t}\n}\n"
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		switch i % 3 {
		case 0:
			for j := range 4 + i%13 {
				fmt.Fprintf(&b, "%s(%d.%d) ", prose, i, j)
			}
		case 1:
			for j := range 2 + i%7 {
				fmt.Fprintf(&b, "// chunk %d/%d\n%s", i, j, code)
			}
		default:
			b.WriteString("[")
			for j := range 3 + i%11 {
				fmt.Fprintf(&b, `{"id":"call_%05d_%d","type":"function","name":"read_file","arguments":{"path":"src/pkg%d/file_%d.go","limit":%d}},`, i, j, j, i, 100*j)
			}
			b.WriteString("{}]")
		}
		texts[i] = b.String()
	}
	return texts
}

func TestCacheConcurrent(t *testing.T) {
	texts := mixedTexts(60)
	texts = append(texts, "short", "", "hi there") // below cacheMinBytes
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = referenceCount(t, "o200k", s)
	}

	c, _ := New("o200k")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for round := range 3 {
				for k := range texts {
					i := (k + g*7 + round) % len(texts)
					if got := c.Count(texts[i]); got != want[i] {
						t.Errorf("goroutine %d: Count(texts[%d]) = %d, want %d", g, i, got, want[i])
					}
				}
			}
		})
	}
	wg.Wait()
	long := 0
	for _, s := range texts {
		if len(s) > cacheMinBytes {
			long++
		}
	}
	if n := c.(*bpeCounter).cache.len(); n != long {
		t.Errorf("cache holds %d entries, want one per distinct long text: %d", n, long)
	}
}

func TestCacheBound(t *testing.T) {
	c := newCountCache(3)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { c.put(textKey{a: uint64(i), b: 1}, i) })
	}
	wg.Wait()
	if c.len() != 3 {
		t.Errorf("cache of 3 holds %d entries", c.len())
	}
	stored := 0
	for i := range 50 {
		if n, ok := c.get(textKey{a: uint64(i), b: 1}); ok {
			stored++
			if n != i {
				t.Errorf("entry %d holds %d", i, n)
			}
		}
	}
	if stored != 3 {
		t.Errorf("%d entries readable, want 3", stored)
	}
}

func TestCountAll(t *testing.T) {
	texts := mixedTexts(200) // a few hundred KB: enough to go parallel
	texts = append(texts, "", "x")
	for _, name := range []string{"estimate", "o200k"} {
		c, _ := New(name)
		got := CountAll(c, texts)
		if len(got) != len(texts) {
			t.Fatalf("%s: %d counts for %d texts", name, len(got), len(texts))
		}
		ref, _ := New(name)
		for i, s := range texts {
			if want := ref.Count(s); got[i] != want {
				t.Errorf("%s: CountAll[%d] = %d, want %d", name, i, got[i], want)
			}
		}
	}
	c, _ := New("estimate")
	if got := CountAll(c, nil); len(got) != 0 {
		t.Errorf("CountAll(nil) = %v", got)
	}
}

func TestEncryptedTokens(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{-5, 0},
		{0, 0},
		{1, EncryptedMinTokens},
		{80, EncryptedMinTokens}, // 60 bytes decoded, 15 tokens
		{160, 30},                // 120 bytes decoded
		{4000, 750},              // 3000 bytes decoded
		{4001, 751},              // rounds up
	} {
		if got := EncryptedTokens(tc.n); got != tc.want {
			t.Errorf("EncryptedTokens(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestFraming(t *testing.T) {
	for _, p := range []string{"openai", "anthropic", "other"} {
		if got := MessageOverhead(p); got != 3 {
			t.Errorf("MessageOverhead(%q) = %d, want 3", p, got)
		}
	}
	if ReplyPriming != 3 {
		t.Errorf("ReplyPriming = %d", ReplyPriming)
	}
	for format, want := range map[string]string{
		"openai": "o200k", "responses": "o200k", "codex": "o200k",
		"anthropic": "estimate", "claude-code": "estimate", "": "estimate", "unknown": "estimate",
	} {
		if got := DefaultTokenizer(format); got != want {
			t.Errorf("DefaultTokenizer(%q) = %q, want %q", format, got, want)
		}
		if _, err := New(DefaultTokenizer(format)); err != nil {
			t.Errorf("DefaultTokenizer(%q) is not a counter: %v", format, err)
		}
	}
}

// benchText is a few hundred KB of prose, code and JSON in message-sized pieces.
func benchText() ([]string, int64) {
	texts := mixedTexts(400)
	var n int64
	for _, s := range texts {
		n += int64(len(s))
	}
	return texts, n
}

func benchmarkCount(b *testing.B, name string) {
	texts, size := benchText()
	warm, _ := New(name)
	warm.Count("load the vocabulary before timing")
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		c, _ := New(name) // a fresh cache each time: measure counting, not lookups
		for _, s := range texts {
			c.Count(s)
		}
	}
}

func BenchmarkCountEstimate(b *testing.B) { benchmarkCount(b, "estimate") }
func BenchmarkCountO200k(b *testing.B)    { benchmarkCount(b, "o200k") }
func BenchmarkCountCl100k(b *testing.B)   { benchmarkCount(b, "cl100k") }

// BenchmarkCountAllO200k is BenchmarkCountO200k on all cores.
func BenchmarkCountAllO200k(b *testing.B) {
	texts, size := benchText()
	warm, _ := New("o200k")
	warm.Count("load the vocabulary before timing")
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		c, _ := New("o200k")
		CountAll(c, texts)
	}
}

func TestPieceCache(t *testing.T) {
	c := newPieceCache()
	long := strings.Repeat("x", pieceCacheMaxBytes+1)
	for _, tc := range []struct {
		piece string
		n     int
	}{{"abcdefgh", 3}, {"zyxwvuts", 4}, {strings.Repeat("q", pieceCacheMaxBytes), 9}, {long, 7}} {
		h := hashString(tc.piece)
		if _, ok := c.get(h, tc.piece); ok {
			t.Errorf("%q found before it was put", tc.piece)
		}
		c.put(h, tc.piece, tc.n)
		n, ok := c.get(h, tc.piece)
		if tc.piece == long {
			if ok {
				t.Errorf("a piece of %d bytes was cached", len(long))
			}
			continue
		}
		if !ok || n != tc.n {
			t.Errorf("get(%q) = %d, %v; want %d", tc.piece, n, ok, tc.n)
		}
	}
	// Two pieces in one slot: the second replaces the first, and the first is not
	// mistaken for it.
	a, b := "abcdefgh", "abcdefgi"
	h := hashString(a)
	c.put(h, b, 5)
	if n, ok := c.get(h, a); ok {
		t.Errorf("get(%q) after %q took its slot = %d, want a miss", a, b, n)
	}
	if n, ok := c.get(h, b); !ok || n != 5 {
		t.Errorf("get(%q) = %d, %v; want 5", b, n, ok)
	}
}

// TestCacheGate: a text's pieces all ask the cache of pieces until a window of lookups has
// had no hit; then only every gateSample-th asks, until one of those hits.
func TestCacheGate(t *testing.T) {
	var g cacheGate
	for i := range gateWindow {
		if !g.ask() {
			t.Fatalf("lookup %d of the first window was skipped", i)
		}
		g.looked(false)
	}
	asked := 0
	for range 10 * gateSample {
		if g.ask() {
			asked++
			g.looked(false)
		}
	}
	if asked != 10 {
		t.Fatalf("after a window of misses, %d of %d pieces asked, want 10", asked, 10*gateSample)
	}
	for !g.ask() {
	}
	g.looked(true)
	for i := range 3 * gateWindow {
		if !g.ask() {
			t.Fatalf("piece %d after a hit was skipped", i)
		}
		g.looked(i%100 == 0)
	}
	// The cache is asked of nothing else: a text's count is the same with it cold.
	c := newBPECounter("o200k", o200k)
	text := pathological("base64", 200<<10)
	if got, want := c.Count(text), countText(o200k, text, nil, nil); got != want {
		t.Errorf("base64 counted %d through the gated cache, %d without a cache", got, want)
	}
}
