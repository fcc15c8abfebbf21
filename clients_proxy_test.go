package ctxkit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/proxy"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// proxyBaseURL is the base URL the real-client tests point their clients at, for an
// upstream listening at upstreamURL: a ctx-proxy on loopback, with the default pipeline in
// process and its state in a temporary store, in front of the upstream. When the test
// ends, every request's log line must show the pipeline ran (no fallback to the original
// body): a body a real client sends that ctxkit cannot read is a failure, not a pass.
func proxyBaseURL(t *testing.T, upstreamURL string) string {
	t.Helper()
	url, _ := startProxy(t, upstreamURL, nil)
	return url
}

// startProxy is proxyBaseURL with more environment for the stages (a small window, for the
// tiers to act), and a function that reads back the log lines written so far.
func startProxy(t *testing.T, upstreamURL string, env map[string]string) (string, func() []proxy.Record) {
	t.Helper()
	return startProxyToken(t, upstreamURL, env, "")
}

// startProxyToken is startProxy with the proxy's --auth-token set (none when "").
func startProxyToken(t *testing.T, upstreamURL string, env map[string]string, token string) (string, func() []proxy.Record) {
	t.Helper()
	pipe, err := replay.ParsePipe(replay.DefaultPipe, replay.Tools())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	state, err := convstate.Open(store+"/proxy", convstate.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	s := &proxy.Server{
		Upstream:  upstreamURL,
		Pipe:      pipe,
		Env:       map[string]string{"CTX_STORE": store},
		Store:     store,
		Getenv:    func(string) string { return "" },
		State:     state,
		TempDir:   t.TempDir(),
		Log:       log,
		AuthToken: token,
		// ctx-proxy's own counter (cli.Context.Counter with --tokenizer auto): Claude's
		// calibrated estimate for the Messages API, so the log counts what the stages do.
		Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
			name := tokens.DefaultTokenizer(string(f))
			if name == "estimate" && measure.ProviderOf(f) == "anthropic" {
				return tokens.Claude(model), nil
			}
			return tokens.New(name)
		},
	}
	for k, v := range env {
		s.Env[k] = v
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
		sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var rec proxy.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("ctx-proxy log line %q: %v", sc.Text(), err)
				continue
			}
			n++
			if rec.Fallback != "" {
				t.Errorf("ctx-proxy fell back to the original body on %s: %s", rec.Path, rec.Fallback)
			}
		}
		t.Logf("ctx-proxy: %d conversation requests piped", n)
	})
	records := func() []proxy.Record {
		var out []proxy.Record
		sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec proxy.Record
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				out = append(out, rec)
			}
		}
		return out
	}
	return ts.URL, records
}

// lockedBuffer is a log the proxy's worker writes while the test reads it at the end.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
