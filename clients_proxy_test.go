package ctxkit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/convstate"
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
		Upstream: upstreamURL,
		Pipe:     pipe,
		Env:      map[string]string{"CTX_STORE": store},
		Getenv:   func(string) string { return "" },
		State:    state,
		TempDir:  t.TempDir(),
		Log:      log,
		Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
			return tokens.New(tokens.DefaultTokenizer(string(f)))
		},
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
	return ts.URL
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
