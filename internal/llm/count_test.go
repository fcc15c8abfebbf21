package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A count_tokens body as convert.CountRequest makes one, and the endpoint's answers.
const (
	countBody    = `{"model":"claude-sonnet-4-5","system":"Be brief.","messages":[{"role":"user","content":"Hello, Claude"}]}`
	countOK      = `{"input_tokens":2095}`
	countKeyEcho = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: sk-ant-api03-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1"}}`
)

func TestCountTokens(t *testing.T) {
	s, n, reqs := server(t, reply{status: 200, body: countOK})
	got, err := client(Anthropic, s.URL+"/", nil).CountTokens(context.Background(), []byte(countBody))
	if err != nil || got != 2095 {
		t.Fatalf("%d, %v; want 2095", got, err)
	}
	r := (*reqs)[0]
	if *n != 1 || r.Method != http.MethodPost || r.URL.Path != "/v1/messages/count_tokens" {
		t.Errorf("%d requests, %s %s", *n, r.Method, r.URL.Path)
	}
	for k, want := range map[string]string{"x-api-key": "sk-test-secret", "anthropic-version": "2023-06-01", "content-type": "application/json"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}
	if body, _ := io.ReadAll(r.Body); string(body) != countBody {
		t.Errorf("body %s, want the one given as it is", body)
	}
}

func TestCountTokensFailures(t *testing.T) {
	const key = "sk-ant-api03-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1"
	for _, c := range []struct {
		name     string
		replies  []reply
		attempts int32
		want     string
		waits    []time.Duration
	}{
		{"401 echoing the key", []reply{{status: 401, body: countKeyEcho}}, 1, "HTTP 401: invalid x-api-key: [redacted: api-key]", nil},
		{"429 then success", []reply{{status: 429, body: anthropicRate, header: map[string]string{"retry-after": "3"}}, {status: 200, body: countOK}}, 2, "", []time.Duration{3 * time.Second}},
		{"500 to the end", []reply{{status: 500, body: openaiServer}}, 4, "gave up after 4 attempts: HTTP 500: The server had an error", []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}},
		{"no count in the answer", []reply{{status: 200, body: `{"type":"message"}`}}, 4, "the answer has no input_tokens count", nil},
	} {
		s, n, _ := server(t, c.replies...)
		var slept []time.Duration
		cl := client(Anthropic, s.URL, &slept)
		cl.APIKey = key
		got, err := cl.CountTokens(context.Background(), []byte(countBody))
		switch {
		case c.want == "" && (err != nil || got != 2095):
			t.Errorf("%s: %d, %v", c.name, got, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		case err != nil && strings.Contains(err.Error(), "Zx9Qm2"):
			t.Errorf("%s: the key is in the error: %v", c.name, err)
		}
		if *n != c.attempts {
			t.Errorf("%s: %d attempts, want %d", c.name, *n, c.attempts)
		}
		if c.waits != nil && !equalDurations(slept, c.waits) {
			t.Errorf("%s: waits %v, want %v", c.name, slept, c.waits)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCountTokensRedirect: a redirect to another port of the same host is not followed,
// so the key stays with the server it is for.
func TestCountTokensRedirect(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.Write([]byte(countOK))
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	if _, err := client(Anthropic, redirector.URL, nil).CountTokens(context.Background(), []byte(countBody)); !errors.Is(err, ErrRedirect) {
		t.Errorf("err %v, want ErrRedirect", err)
	}
	if leaked.Load() != 0 {
		t.Errorf("the other port was called %d times", leaked.Load())
	}
}

// TestCountTokensRefused: what the server could only refuse is refused before any
// request, cache or not.
func TestCountTokensRefused(t *testing.T) {
	s, n, _ := server(t, reply{status: 200, body: countOK})
	openai := client(OpenAI, s.URL, nil)
	keyless := client(Anthropic, s.URL, nil)
	keyless.APIKey = ""
	for _, c := range []struct {
		cl         *Client
		body, want string
	}{
		{openai, countBody, "count_tokens is an Anthropic endpoint"},
		{keyless, countBody, "needs an Anthropic API key"},
		{client(Anthropic, s.URL, nil), countBody[:20], "not JSON"},
	} {
		if _, err := c.cl.CountTokens(context.Background(), []byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
		if _, _, err := c.cl.CountTokensCached(context.Background(), []byte(c.body), NewCountCache(t.TempDir())); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cached: err %v, want %q", err, c.want)
		}
	}
	if *n != 0 {
		t.Errorf("%d requests, want none", *n)
	}
}

// countTwice counts body twice, each time through a new CountCache in root as two runs
// would, and returns the requests the server had by then, the second answer's cached
// flag, and the warnings. prepare, if set, runs before the first count.
func countTwice(t *testing.T, url string, n *int32, root string, prepare func(cc *CountCache, key [32]byte)) (int32, bool, []string) {
	t.Helper()
	var warnings []string
	cl := client(Anthropic, url, nil)
	var cached bool
	for i := range 2 {
		cc := NewCountCache(root)
		cc.Warn = func(msg string) { warnings = append(warnings, msg) }
		if prepare != nil && i == 0 {
			prepare(cc, cl.countKey([]byte(countBody)))
		}
		got, c, err := cl.CountTokensCached(context.Background(), []byte(countBody), cc)
		if err != nil || got != 2095 {
			t.Fatalf("count %d: %d, cached %v, %v", i, got, c, err)
		}
		cached = c
	}
	return atomic.LoadInt32(n), cached, warnings
}

func TestCountCache(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ctxkit")
	s, reqs, _ := server(t, reply{status: 200, body: countOK})
	if n, cached, w := countTwice(t, s.URL, reqs, root, nil); n != 1 || !cached || len(w) > 0 {
		t.Errorf("%d requests, cached %v, warnings %q; want 1 request, the second answer from the cache", n, cached, w)
	}
	// Later runs find the entry the first left.
	if n, cached, _ := countTwice(t, s.URL, reqs, root, nil); n != 1 || !cached {
		t.Errorf("later runs: %d requests in all, want still 1", n)
	}
	dir := filepath.Join(root, CountCacheDir)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("cache holds %v, want one entry", ents)
	}
	st, _ := os.Stat(dir)
	fi, _ := ents[0].Info()
	if st.Mode().Perm() != 0o700 || fi.Mode().Perm() != 0o600 {
		t.Errorf("modes %v %v, want 0700 and 0600", st.Mode().Perm(), fi.Mode().Perm())
	}
	// Another body, or the same one for another server, is another entry.
	a := client(Anthropic, "https://a.example", nil)
	if a.countKey([]byte(countBody)) == a.countKey([]byte(countBody+" ")) ||
		a.countKey([]byte(countBody)) == client(Anthropic, "https://b.example", nil).countKey([]byte(countBody)) {
		t.Error("keys do not tell bodies or servers apart")
	}
	if a.countKey([]byte(countBody)) != client(Anthropic, "https://a.example/", nil).countKey([]byte(countBody)) {
		t.Error("a trailing slash changes the key")
	}
}

func TestCountCacheCorruptEntry(t *testing.T) {
	for name, content := range map[string]func(key [32]byte) string{
		"truncated":   func(key [32]byte) string { return string(entry(key, 5))[:30] },
		"not a count": func(key [32]byte) string { return strings.Replace(string(entry(key, 5)), `:5}`, `:-5}`, 1) },
		"another's":   func(key [32]byte) string { key[0]++; return string(entry(key, 5)) },
		"extra bytes": func(key [32]byte) string { return string(entry(key, 5)) + "{}" },
	} {
		var path string
		s, reqs, _ := server(t, reply{status: 200, body: countOK})
		n, cached, _ := countTwice(t, s.URL, reqs, t.TempDir(), func(cc *CountCache, key [32]byte) {
			cc.ready()
			path = cc.path(key)
			os.WriteFile(path, []byte(content(key)), 0o600)
		})
		if n != 1 || !cached {
			t.Errorf("%s: %d requests, cached %v; want the entry ignored and counted again once", name, n, cached)
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"input_tokens":2095}`) {
			t.Errorf("%s: entry now %q, want it replaced", name, data)
		}
	}
}

// TestCountCacheRefused: a cache folder that is a link, or that others may write in, is
// not used (the counts still come), with a warning each run; nothing is written behind a
// link.
func TestCountCacheRefused(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	shared := filepath.Join(dir, "shared")
	os.MkdirAll(filepath.Join(shared, CountCacheDir), 0o700)
	os.Chmod(filepath.Join(shared, CountCacheDir), 0o777)
	linkedSub := filepath.Join(dir, "sub")
	os.Mkdir(linkedSub, 0o700)
	os.Symlink(elsewhere, filepath.Join(linkedSub, CountCacheDir))
	for _, c := range []struct{ root, why string }{
		{link, "is a symbolic link"},
		{shared, "writable by group or others"},
		{linkedSub, "is a symbolic link"},
	} {
		s, reqs, _ := server(t, reply{status: 200, body: countOK})
		n, cached, w := countTwice(t, s.URL, reqs, c.root, nil)
		if n != 2 || cached {
			t.Errorf("%s: %d requests, cached %v; want the cache unused", c.root, n, cached)
		}
		if len(w) != 2 || !strings.Contains(w[0], "API count cache not used") || !strings.Contains(w[0], c.why) {
			t.Errorf("%s: warnings %q, want one a run saying it %s", c.root, w, c.why)
		}
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written behind a link: %v", ents)
	}
	if NewCountCache("") != nil {
		t.Error("no directory, yet a cache")
	}
	var none *CountCache
	if _, ok := none.get([32]byte{}); ok {
		t.Error("a nil cache answers")
	}
	none.put([32]byte{}, 1)
}
