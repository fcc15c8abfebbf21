package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Real wire formats: a Messages API answer and error body, a Chat Completions answer and
// error body.
const (
	anthropicOK       = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"<summary>done</summary>"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}`
	anthropicCut      = `{"id":"msg_02","type":"message","role":"assistant","content":[{"type":"text","text":"<summary>half"}],"stop_reason":"max_tokens"}`
	anthropicOverload = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	anthropicTooLong  = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}`
	anthropicRate     = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	anthropicAuth     = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
	openaiOK          = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"<summary>done</summary>"},"finish_reason":"stop"}]}`
	openaiCut         = `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"<summary>ha"},"finish_reason":"length"}]}`
	openaiTooLong     = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	openaiServer      = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
)

type reply struct {
	status int
	body   string
	header map[string]string
	delay  time.Duration
}

// server answers with the replies in turn (the last one repeats) and records requests.
func server(t *testing.T, replies ...reply) (*httptest.Server, *int32, *[]*http.Request) {
	t.Helper()
	var n int32
	var reqs []*http.Request
	var mu sync.Mutex
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(atomic.AddInt32(&n, 1)) - 1
		rp := replies[min(i, len(replies)-1)]
		// Read the body first: only then does the server watch the connection, so that
		// a client that gives up ends r.Context() and the delay below with it.
		body, _ := io.ReadAll(r.Body)
		kept := r.Clone(context.Background())
		kept.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock() // a retry may come while an abandoned attempt's handler still runs
		reqs = append(reqs, kept)
		mu.Unlock()
		if rp.delay > 0 {
			select {
			case <-time.After(rp.delay):
			case <-r.Context().Done():
				return
			}
		}
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(rp.status)
		_, _ = w.Write([]byte(rp.body))
	}))
	t.Cleanup(s.Close)
	return s, &n, &reqs
}

func client(backend, url string, slept *[]time.Duration) *Client {
	return &Client{Backend: backend, BaseURL: url, APIKey: "sk-test-secret", Model: "m", Retries: 3,
		Timeout: 2 * time.Second, Backoff: 10 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if slept != nil {
				*slept = append(*slept, d)
			}
			return ctx.Err()
		}}
}

func TestSuccess(t *testing.T) {
	for _, c := range []struct{ backend, body, path string }{
		{Anthropic, anthropicOK, "/v1/messages"},
		{OpenAI, openaiOK, "/chat/completions"},
	} {
		s, _, reqs := server(t, reply{status: 200, body: c.body})
		text, err := client(c.backend, s.URL, nil).Complete(context.Background(), Request{System: "sys", Prompt: "p"})
		if err != nil || text != "<summary>done</summary>" {
			t.Errorf("%s: %q, %v", c.backend, text, err)
		}
		r := (*reqs)[0]
		if r.URL.Path != c.path {
			t.Errorf("%s: path %s", c.backend, r.URL.Path)
		}
		if c.backend == Anthropic && (r.Header.Get("x-api-key") != "sk-test-secret" || r.Header.Get("anthropic-version") == "") {
			t.Errorf("anthropic headers: %v", r.Header)
		}
		if c.backend == OpenAI && r.Header.Get("Authorization") != "Bearer sk-test-secret" {
			t.Errorf("openai headers: %v", r.Header)
		}
	}
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	s, n, _ := server(t,
		reply{status: 429, body: anthropicRate, header: map[string]string{"retry-after": "7"}},
		reply{status: 529, body: anthropicOverload},
		reply{status: 500, body: openaiServer},
		reply{status: 200, body: anthropicOK})
	var slept []time.Duration
	text, err := client(Anthropic, s.URL, &slept).Complete(context.Background(), Request{Prompt: "p"})
	if err != nil || text == "" {
		t.Fatalf("%q, %v", text, err)
	}
	if *n != 4 {
		t.Errorf("%d attempts, want 4", *n)
	}
	if len(slept) != 3 || slept[0] != 7*time.Second || slept[1] != 10*time.Millisecond || slept[2] != 20*time.Millisecond {
		t.Errorf("waits %v, want [7s 10ms 20ms] (retry-after, then doubling backoff)", slept)
	}
}

// TestLongRetryAfter: a wait longer than MaxWait is not taken; the error says how long.
func TestLongRetryAfter(t *testing.T) {
	s, n, _ := server(t, reply{status: 429, body: anthropicRate, header: map[string]string{"retry-after": "3600"}}, reply{status: 200, body: anthropicOK})
	var slept []time.Duration
	c := client(Anthropic, s.URL, &slept)
	c.MaxWait = time.Minute
	_, err := c.Complete(context.Background(), Request{Prompt: "p"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 429 || !strings.Contains(err.Error(), "asks to wait 1h0m0s") {
		t.Errorf("err %v", err)
	}
	if *n != 1 || len(slept) != 0 {
		t.Errorf("%d attempts, waits %v; want 1 attempt and no wait", *n, slept)
	}
}

func TestGivesUp(t *testing.T) {
	s, n, _ := server(t, reply{status: 529, body: anthropicOverload})
	_, err := client(Anthropic, s.URL, nil).Complete(context.Background(), Request{Prompt: "p"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 529 || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("err %v", err)
	}
	if *n != 4 {
		t.Errorf("%d attempts, want 1 + 3 retries", *n)
	}
	if strings.Contains(err.Error(), "sk-test-secret") {
		t.Error("the key leaks into the error")
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	s, n, _ := server(t, reply{status: 401, body: anthropicAuth})
	_, err := client(Anthropic, s.URL, nil).Complete(context.Background(), Request{Prompt: "p"})
	if err == nil || *n != 1 || !strings.Contains(err.Error(), "invalid x-api-key") {
		t.Errorf("%d attempts, err %v", *n, err)
	}
}

func TestPromptTooLong(t *testing.T) {
	llamaTooLong := `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`
	for _, c := range []struct{ backend, body string }{{Anthropic, anthropicTooLong}, {OpenAI, openaiTooLong}, {OpenAI, llamaTooLong}} {
		s, n, _ := server(t, reply{status: 400, body: c.body})
		_, err := client(c.backend, s.URL, nil).Complete(context.Background(), Request{Prompt: "p"})
		if !errors.Is(err, ErrPromptTooLong) || *n != 1 {
			t.Errorf("%s: %d attempts, err %v", c.backend, *n, err)
		}
	}
}

func TestCutOff(t *testing.T) {
	for _, c := range []struct{ backend, body string }{{Anthropic, anthropicCut}, {OpenAI, openaiCut}} {
		s, _, _ := server(t, reply{status: 200, body: c.body})
		_, err := client(c.backend, s.URL, nil).Complete(context.Background(), Request{Prompt: "p"})
		if !errors.Is(err, ErrCutOff) {
			t.Errorf("%s: err %v", c.backend, err)
		}
	}
	// A body that stops in the middle of the JSON.
	s, _, _ := server(t, reply{status: 200, body: anthropicOK[:40]})
	if _, err := client(Anthropic, s.URL, nil).Complete(context.Background(), Request{Prompt: "p"}); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("truncated body: err %v", err)
	}
}

// TestTimeout: an attempt that outlasts Timeout is abandoned and retried, and the error
// says it timed out. The server never answers in time (it would answer only after a
// minute), so the run can only end through the per-attempt timeout; the test asserts
// what happened (two attempts, each given up by the client before a reply, one wait
// between them), not how long it took.
func TestTimeout(t *testing.T) {
	s, n, _ := server(t, reply{status: 200, body: openaiOK, delay: time.Minute})
	var slept []time.Duration
	c := client(OpenAI, s.URL, &slept)
	c.Timeout, c.Retries = 50*time.Millisecond, 1
	_, err := c.Complete(context.Background(), Request{Prompt: "p"})
	if err == nil || err.Error() != "gave up after 2 attempts: request failed: timed out" {
		t.Errorf("err %v, want the two attempts to time out", err)
	}
	if n := atomic.LoadInt32(n); n != 2 { // the abandoned attempt's handler may still run
		t.Errorf("%d attempts, want 1 + 1 retry", n)
	}
	if len(slept) != 1 || slept[0] != 10*time.Millisecond {
		t.Errorf("waits %v, want one backoff of 10ms between the attempts", slept)
	}
}

func TestCancel(t *testing.T) {
	s, _, _ := server(t, reply{status: 200, body: openaiOK, delay: 2 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := client(OpenAI, s.URL, nil).Complete(ctx, Request{Prompt: "p"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestBreaker(t *testing.T) {
	now := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	b := &Breaker{Path: filepath.Join(t.TempDir(), "store", BreakerFile), Limit: 3, Cooldown: 10 * time.Minute, Now: func() time.Time { return now }}
	fail := errors.New("HTTP 529: Overloaded")
	for i := 0; i < 3; i++ {
		if err := b.Allow(); err != nil {
			t.Fatalf("call %d refused: %v", i, err)
		}
		if err := b.Record(fail); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Allow(); !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("after 3 failures: %v", err)
	}
	now = now.Add(11 * time.Minute) // half open: one try
	if err := b.Allow(); err != nil {
		t.Errorf("after the cooldown: %v", err)
	}
	if err := b.Record(fail); err != nil {
		t.Fatal(err)
	}
	if err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Errorf("a failed try opens it again: %v", err)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := b.Allow(); err != nil {
		t.Errorf("after reset: %v", err)
	}
	_ = b.Record(fail)
	_ = b.Record(nil) // a success closes it and clears the count
	_ = b.Record(fail)
	_ = b.Record(fail)
	if err := b.Allow(); err != nil {
		t.Errorf("two failures after a success: %v", err)
	}
}

// TestKeyEchoRedacted: a server that echoes the key in its error body: the key is in
// neither the error nor the breaker's file.
func TestKeyEchoRedacted(t *testing.T) {
	const key = "sk-proj-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1"
	for _, backend := range []string{Anthropic, OpenAI} {
		s, _, _ := server(t, reply{status: 401, body: `{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://example.com.","type":"invalid_request_error","code":"invalid_api_key"}}`})
		c := client(backend, s.URL, nil)
		c.APIKey = key
		_, err := c.Complete(context.Background(), Request{Prompt: "p"})
		if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "Zx9Qm2") || !strings.Contains(err.Error(), "[redacted: ") {
			t.Errorf("%s: error %v; want the key redacted", backend, err)
		}
		b := &Breaker{Path: filepath.Join(t.TempDir(), "state", "b.json"), Limit: 1, Cooldown: time.Minute}
		// Even an error worded elsewhere, holding the raw key, is redacted in the file.
		if rerr := b.Record(errors.New("HTTP 401: Incorrect API key provided: " + key)); rerr != nil {
			t.Fatal(rerr)
		}
		data, _ := os.ReadFile(b.Path)
		if strings.Contains(string(data), "Zx9Qm2") {
			t.Errorf("breaker file holds the key: %s", data)
		}
		if aerr := b.Allow(); aerr == nil || strings.Contains(aerr.Error(), "Zx9Qm2") {
			t.Errorf("breaker message: %v", aerr)
		}
	}
}

// TestRedirectKeepsTheKey: a redirect to another host (or port) is not followed, so the
// x-api-key or Authorization header never reaches it; the same origin may redirect.
func TestRedirectKeepsTheKey(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "" || r.Header.Get("authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("content-type", "application/json")
		w.Write([]byte(anthropicOK))
	}))
	defer other.Close()
	for _, target := range []string{other.URL, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)} {
		var hits atomic.Int32
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		for _, backend := range []string{Anthropic, OpenAI} {
			_, err := client(backend, redirector.URL, nil).Complete(context.Background(), Request{Prompt: "p"})
			if !errors.Is(err, ErrRedirect) {
				t.Errorf("%s redirected to %s: %v, want ErrRedirect", backend, target, err)
			}
		}
		redirector.Close()
		if hits.Load() != 2 {
			t.Errorf("redirect tried %d times for 2 calls; a refused redirect is not retried", hits.Load())
		}
	}
	if leaked.Load() != 0 {
		t.Errorf("the key reached another host %d times", leaked.Load())
	}

	// Within the origin a redirect is followed.
	var mux http.ServeMux
	mux.HandleFunc("/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2/messages", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/v2/messages", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") == "" {
			t.Error("same-origin redirect lost the key")
		}
		w.Header().Set("content-type", "application/json")
		w.Write([]byte(anthropicOK))
	})
	same := httptest.NewServer(&mux)
	defer same.Close()
	if _, err := client(Anthropic, same.URL, nil).Complete(context.Background(), Request{Prompt: "p"}); err != nil {
		t.Errorf("same-origin redirect: %v", err)
	}
}

// TestBreakerRefusesALink: the state file is replaced atomically, never written through
// a link planted at its path; a linked state directory is refused.
func TestBreakerRefusesALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o600)
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	for _, link := range []string{filepath.Join(state, "b.json"), filepath.Join(state, "b.json.tmp")} {
		if err := os.Symlink(victim, link); err != nil {
			t.Skip("no symlinks:", err)
		}
	}
	b := &Breaker{Path: filepath.Join(state, "b.json"), Limit: 3, Cooldown: time.Minute}
	if err := b.Record(errors.New("HTTP 529: Overloaded")); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Record over a link: %v, want a refusal", err)
	}
	linkedDir := filepath.Join(dir, "linked")
	os.Symlink(state, linkedDir)
	b = &Breaker{Path: filepath.Join(linkedDir, "c.json"), Limit: 3, Cooldown: time.Minute}
	if err := b.Record(errors.New("HTTP 529: Overloaded")); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Record into a linked folder: %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "precious\n" {
		t.Errorf("written through a link: %q", data)
	}
	if p, q := BreakerPath("/s", Anthropic, "https://a"), BreakerPath("/s", Anthropic, "https://b"); p == q || filepath.Dir(p) != "/s" {
		t.Errorf("BreakerPath: %s %s", p, q)
	}
}

// envOf is a Getenv that knows only vars.
func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// TestBaseURLFromEnv: with no base URL given, the backend's variable (the one its SDK
// reads) names the server, its trailing slash dropped; a base URL given wins over it.
func TestBaseURLFromEnv(t *testing.T) {
	for _, c := range []struct{ backend, body, path string }{
		{Anthropic, anthropicOK, "/v1/messages"},
		{OpenAI, openaiOK, "/v1/chat/completions"},
	} {
		fromEnv, envHits, reqs := server(t, reply{status: 200, body: c.body})
		given, givenHits, _ := server(t, reply{status: 200, body: c.body})
		base := fromEnv.URL
		if c.backend == OpenAI {
			base += "/v1" // as OPENAI_BASE_URL is written
		}
		env := envOf(map[string]string{BaseURLVar(c.backend): base + "/"})

		cl := client(c.backend, "", nil)
		cl.Getenv = env
		if _, err := cl.Complete(context.Background(), Request{Prompt: "p"}); err != nil || *envHits != 1 {
			t.Fatalf("%s from %s: %d requests, %v", c.backend, BaseURLVar(c.backend), *envHits, err)
		}
		if p := (*reqs)[0].URL.Path; p != c.path {
			t.Errorf("%s: path %s, want %s", c.backend, p, c.path)
		}
		if cl.Base() != base {
			t.Errorf("%s: Base() %q, want %q", c.backend, cl.Base(), base)
		}

		cl = client(c.backend, given.URL, nil)
		cl.Getenv = env
		if _, err := cl.Complete(context.Background(), Request{Prompt: "p"}); err != nil || *givenHits != 1 || *envHits != 1 {
			t.Errorf("%s: the base URL given must win: %d requests to it, %d to the variable's, %v", c.backend, *givenHits, *envHits, err)
		}

		// Without Getenv the process's environment is read.
		t.Setenv(BaseURLVar(c.backend), base)
		cl = client(c.backend, "", nil)
		if _, err := cl.Complete(context.Background(), Request{Prompt: "p"}); err != nil || *envHits != 2 {
			t.Errorf("%s from the process's %s: %d requests, %v", c.backend, BaseURLVar(c.backend), *envHits, err)
		}
	}
	// The public APIs when nothing names a server.
	for backend, want := range map[string]string{Anthropic: "https://api.anthropic.com", OpenAI: "https://api.openai.com/v1"} {
		cl := &Client{Backend: backend, Getenv: envOf(nil)}
		if cl.Base() != want {
			t.Errorf("%s: default base %q, want %q", backend, cl.Base(), want)
		}
	}
}

// TestBadBaseURL: a base URL without its scheme fails before any request, naming where it
// came from but not its value, and is not retried.
func TestBadBaseURL(t *testing.T) {
	var slept []time.Duration
	cl := client(OpenAI, "", &slept)
	cl.Getenv = envOf(map[string]string{"OPENAI_BASE_URL": "localhost:11434/v1"})
	_, err := cl.Complete(context.Background(), Request{Prompt: "p"})
	if err == nil || err.Error() != "OPENAI_BASE_URL is not an http:// or https:// URL with a host" || len(slept) != 0 {
		t.Errorf("err %v, waits %v", err, slept)
	}
	cl = client(Anthropic, "ftp://x", &slept)
	if _, err := cl.CountTokens(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "the base URL is not") {
		t.Errorf("count_tokens: err %v", err)
	}
}

// TestMaxTokensField: OpenAI's reasoning models get max_completion_tokens (they refuse
// max_tokens); every other model, and every Anthropic request, max_tokens.
func TestMaxTokensField(t *testing.T) {
	completion := []string{"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1", "gpt-5-codex", "GPT-5", "gpt-6", "o1", "o1-mini", "o1-preview", "o3", "o3-mini", "o3-pro", "o4-mini", "o4-mini-2025-04-16", "openai/gpt-5", "openai/o3"}
	plain := []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4-turbo", "gpt-3.5-turbo", "gpt-oss-20b", "gpt-oss:120b", "qwen3", "llama3.1:8b", "omni", "o", "ollama", "chatgpt-4o-latest", "", "mistral-large"}
	for _, m := range completion {
		if f := MaxTokensField(m); f != "max_completion_tokens" {
			t.Errorf("%q: %s, want max_completion_tokens", m, f)
		}
	}
	for _, m := range plain {
		if f := MaxTokensField(m); f != "max_tokens" {
			t.Errorf("%q: %s, want max_tokens", m, f)
		}
	}
	// On the wire.
	for _, c := range []struct{ backend, model, field, not string }{
		{OpenAI, "gpt-5", "max_completion_tokens", "max_tokens"},
		{OpenAI, "o4-mini", "max_completion_tokens", "max_tokens"},
		{OpenAI, "gpt-4o-mini", "max_tokens", "max_completion_tokens"},
		{OpenAI, "qwen3", "max_tokens", "max_completion_tokens"},
		{Anthropic, "claude-haiku-4-5", "max_tokens", "max_completion_tokens"},
	} {
		body := openaiOK
		if c.backend == Anthropic {
			body = anthropicOK
		}
		s, _, reqs := server(t, reply{status: 200, body: body})
		cl := client(c.backend, s.URL, nil)
		cl.Model = c.model
		if _, err := cl.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 8192}); err != nil {
			t.Fatal(err)
		}
		sent, _ := io.ReadAll((*reqs)[0].Body)
		if !bytes.Contains(sent, []byte(`"`+c.field+`":8192`)) || bytes.Contains(sent, []byte(`"`+c.not+`"`)) {
			t.Errorf("%s %s: sent %s, want %s and no %s", c.backend, c.model, sent, c.field, c.not)
		}
	}
}

// closedPort is a URL on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// TestRefusedLocalFailsFast: a connection refused on this machine fails at once, with no
// retry and a hint naming the address and where the base URL came from.
func TestRefusedLocalFailsFast(t *testing.T) {
	url := closedPort(t)
	host := strings.TrimPrefix(url, "http://")
	for _, c := range []struct {
		given, env string
		where      string
	}{
		{url, "", "the base URL given"},
		{"", url + "/v1", "OPENAI_BASE_URL"},
		{strings.Replace(url, "127.0.0.1", "localhost", 1), "", "the base URL given"},
	} {
		var slept []time.Duration
		cl := client(OpenAI, c.given, &slept)
		cl.Getenv = envOf(map[string]string{"OPENAI_BASE_URL": c.env})
		_, err := cl.Complete(context.Background(), Request{Prompt: "p"})
		var re *RefusedError
		if !errors.As(err, &re) || !re.Local || len(slept) != 0 {
			t.Fatalf("%+v: err %v, waits %v; want a local refusal and no retry", c, err, slept)
		}
		if strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%+v: err %q", c, err)
		}
		if h := re.Hint(); !strings.Contains(h, "nothing listens at ") || !strings.Contains(h, c.where) {
			t.Errorf("%+v: hint %q", c, h)
		}
		if c.given == url && re.Host != host {
			t.Errorf("host %q, want %q", re.Host, host)
		}
	}
	// count_tokens alike.
	var slept []time.Duration
	cl := client(Anthropic, url, &slept)
	if _, err := cl.CountTokens(context.Background(), []byte(`{"model":"m","messages":[]}`)); !errors.As(err, new(*RefusedError)) || len(slept) != 0 {
		t.Errorf("count_tokens: err %v, waits %v", err, slept)
	}
}

// TestTransientStillRetried: other transport failures keep their retries: a connection
// refused by a remote host (a server there may be restarting), and a connection cut
// before the answer.
func TestTransientStillRetried(t *testing.T) {
	var dials atomic.Int32
	var slept []time.Duration
	cl := client(Anthropic, "https://api.example.com", &slept)
	cl.HTTP = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}}}
	_, err := cl.Complete(context.Background(), Request{Prompt: "p"})
	var re *RefusedError
	if !errors.As(err, &re) || re.Local || dials.Load() != 4 || len(slept) != 3 || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Errorf("remote refusal: err %v, %d dials, waits %v; want 1 + 3 retries", err, dials.Load(), slept)
	}
	if h := re.Hint(); !strings.Contains(h, "api.example.com:443") {
		t.Errorf("hint %q", h)
	}

	// A server that drops the connection twice, then answers.
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("content-type", "application/json")
		io.WriteString(w, anthropicOK)
	}))
	defer s.Close()
	slept = nil
	text, err := client(Anthropic, s.URL, &slept).Complete(context.Background(), Request{Prompt: "p"})
	if err != nil || text == "" || n.Load() != 3 || len(slept) != 2 {
		t.Errorf("dropped connections: %q, %v, %d attempts, waits %v", text, err, n.Load(), slept)
	}
}

func TestIsLocal(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "ollama.localhost": true, "127.0.0.1": true, "127.1.2.3": true,
		"::1": true, "0.0.0.0": true, "localhost.": true,
		"192.168.1.10": false, "api.openai.com": false, "10.0.0.2": false, "localhost.example.com": false,
	} {
		if isLocal(host) != want {
			t.Errorf("isLocal(%q) = %v", host, !want)
		}
	}
}

// TestBreakerSkipsLocalRefusal: a local server that is not running does not open the
// breaker (the user starts it and tries again at once); a remote refusal counts.
func TestBreakerSkipsLocalRefusal(t *testing.T) {
	b := &Breaker{Path: filepath.Join(t.TempDir(), "b.json"), Limit: 2, Cooldown: time.Hour}
	local := fmt.Errorf("summarizing failed: %w", &RefusedError{Host: "127.0.0.1:11434", Local: true})
	for i := 0; i < 3; i++ {
		if err := b.Record(local); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Allow(); err != nil {
		t.Errorf("after 3 local refusals: %v", err)
	}
	remote := &RefusedError{Host: "api.example.com:443"}
	_ = b.Record(remote)
	_ = b.Record(remote)
	if err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Errorf("after 2 remote refusals: %v, want the breaker open", err)
	}
}

// TestPromptRedacted: with Client.Redact the backend receives markers, not the keys in
// the prompt and the system prompt (issue 40); without it, the text as given.
func TestPromptRedacted(t *testing.T) {
	const key = "sk-proj-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0AcQwErTyUiOp"
	for _, rd := range []*redact.Redactor{redact.New(), nil} {
		s, _, reqs := server(t, reply{status: 200, body: anthropicOK})
		c := client(Anthropic, s.URL, nil)
		c.Redact = rd
		if _, err := c.Complete(context.Background(), Request{System: "key " + key, Prompt: "export OPENAI_API_KEY=" + key}); err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll((*reqs)[0].Body)
		if got := strings.Contains(string(body), "Zx9Qm2"); got != (rd == nil) {
			t.Errorf("redactor %v: key sent: %v: %s", rd != nil, got, body)
		}
		if rd != nil && strings.Count(string(body), "[redacted: openai-api-key]") != 2 {
			t.Errorf("want two markers: %s", body)
		}
	}
}
