package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/snip"
)

// fakeCountTokens is Anthropic's count_tokens on 127.0.0.1: it answers answer (or fails
// with status) and counts the requests it gets, checking each is one a client may send.
func fakeCountTokens(t *testing.T, answer int, status int) (url string, requests *int32) {
	t.Helper()
	var n int32
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path != "/v1/messages/count_tokens" || r.Method != http.MethodPost:
			t.Errorf("request to %s %s", r.Method, r.URL.Path)
		case r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "":
			t.Errorf("headers %v", r.Header)
		case !gjson.ValidBytes(body) || !strings.HasPrefix(gjson.GetBytes(body, "model").String(), "claude") || !gjson.GetBytes(body, "messages").IsArray():
			t.Errorf("body %.200s", body)
		}
		w.Header().Set("content-type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no such model"}}`)
			return
		}
		io.WriteString(w, `{"input_tokens":`+strconv.Itoa(answer)+`}`)
	}))
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s.URL, &n
}

func apiEnv(url, cache string, key string) func(string) string {
	return func(name string) string {
		switch name {
		case "ANTHROPIC_API_KEY":
			return key
		case "CTX_COUNT_BASE_URL":
			return url
		case "CTX_CACHE_DIR":
			return cache
		}
		return ""
	}
}

// TestTokenizerAPI: --tokenizer api counts a document Claude reads with count_tokens,
// once (then from the cache), and every figure follows it; it never runs without a key,
// asks nothing for an OpenAI document, and a failing endpoint is a runtime error.
func TestTokenizerAPI(t *testing.T) {
	const answer = 7000
	url, requests := fakeCountTokens(t, answer, http.StatusOK)
	cache := filepath.Join(t.TempDir(), "cache")
	env := apiEnv(url, cache, "test-key")
	doc, err := os.ReadFile(filepath.Join("testdata", "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	measureWith := func(env func(string) string, args ...string) (count.Report, string, int) {
		var stdout, stderr bytes.Buffer
		code := count.Main(append([]string{"--json"}, args...), bytes.NewReader(doc), &stdout, &stderr, env)
		var r count.Report
		if code == 0 {
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
		}
		return r, stderr.String(), code
	}

	estimate, _, _ := measureWith(noEnv)
	r, stderr, code := measureWith(env, "--tokenizer", "api")
	if code != 0 || *requests != 1 {
		t.Fatalf("exit %d, %d requests: %s", code, *requests, stderr)
	}
	if r.Tokenizer != "api" || r.API == nil || r.API.Tokens != answer || r.API.Cached {
		t.Fatalf("report %+v, api %+v", r, r.API)
	}
	// The counted figure is the endpoint's, to the rounding of each block.
	if d := r.Counted - answer; d < -len(r.Messages) || d > len(r.Messages) {
		t.Errorf("counted %d, count_tokens %d (estimate %d)", r.Counted, answer, estimate.Counted)
	}
	if answer < estimate.Counted && !(r.API.Scale > 0 && r.API.Scale < 1) {
		t.Errorf("scale %.3f where count_tokens says %d and the estimate %d", r.API.Scale, answer, estimate.Counted)
	}

	// Asked again: from the cache, no request.
	if r, _, code := measureWith(env, "--tokenizer", "api"); code != 0 || *requests != 1 || r.API == nil || !r.API.Cached {
		t.Errorf("second run: exit %d, %d requests, api %+v", code, *requests, r.API)
	}

	// A tier decides on the same figure: ctx-snip's tokens_before is ctx-count's headline.
	var out, errb bytes.Buffer
	if code := snip.Main([]string{"--tokenizer", "api", "--stats", "--window", "10k", "--reserve", "0", "--store", t.TempDir()}, bytes.NewReader(doc), &out, &errb, env); code != 0 {
		t.Fatalf("ctx-snip: exit %d: %s", code, errb.String())
	}
	if got := gjson.Get(errb.String(), "tokens_before").Int(); got != int64(r.Tokens) {
		t.Errorf("ctx-snip tokens_before %d, ctx-count %d: %s", got, r.Tokens, errb.String())
	}

	// A Claude Code session is read whole and counted as the request it converts to; the
	// part it does not hold is still learned from its recorded usage.
	session, _ := os.ReadFile(filepath.Join("testdata", "session.jsonl"))
	var sb, se bytes.Buffer
	if code := count.Main([]string{"--json", "--tokenizer", "api"}, bytes.NewReader(session), &sb, &se, apiEnv(url, "off", "test-key")); code != 0 || *requests != 2 {
		t.Fatalf("session: exit %d, %d requests: %s", code, *requests, se.String())
	}
	if c := gjson.Get(sb.String(), "counted").Int(); gjson.Get(sb.String(), "api.tokens").Int() != answer || c < answer-200 || c > answer+200 {
		t.Errorf("session: counted %d, api %s", c, gjson.Get(sb.String(), "api").Raw)
	}

	// No key: refused before anything is read or sent.
	if _, stderr, code := measureWith(apiEnv(url, cache, ""), "--tokenizer", "api"); code != 2 || !strings.Contains(stderr, "ANTHROPIC_API_KEY is not set") || *requests != 2 {
		t.Errorf("without a key: exit %d, %d requests: %s", code, *requests, stderr)
	}

	// An OpenAI document is counted with o200k, exact for it: no request.
	var ob, oe bytes.Buffer
	openai, _ := os.ReadFile(filepath.Join("testdata", "openai.json"))
	if code := count.Main([]string{"--json", "--tokenizer", "api"}, bytes.NewReader(openai), &ob, &oe, env); code != 0 || *requests != 2 || gjson.Get(ob.String(), "tokenizer").String() != "o200k" {
		t.Errorf("openai: exit %d, %d requests, %s %s", code, *requests, ob.String()[:min(200, ob.Len())], oe.String())
	}

	// An answer the estimate is ten times off from is not a calibration: warned, not used.
	oddURL, _ := fakeCountTokens(t, 1, http.StatusOK)
	odd, stderr, code := measureWith(apiEnv(oddURL, "off", "test-key"), "--tokenizer", "api")
	if code != 0 || odd.API == nil || odd.API.Scale != 1 || odd.Counted != estimate.Counted || !strings.Contains(stderr, "the estimate is kept") {
		t.Errorf("an answer of 1 token: exit %d, api %+v, counted %d (estimate %d): %s", code, odd.API, odd.Counted, estimate.Counted, stderr)
	}

	// The endpoint fails: a runtime failure, with what the server said.
	badURL, badRequests := fakeCountTokens(t, 0, http.StatusBadRequest)
	_, stderr, code = measureWith(apiEnv(badURL, "off", "test-key"), "--tokenizer", "api")
	if code != 4 || !strings.Contains(stderr, "count_tokens") || !strings.Contains(stderr, "no such model") || *badRequests != 1 {
		t.Errorf("failing endpoint: exit %d, %d requests: %s", code, *badRequests, stderr)
	}
	if strings.Contains(stderr, "test-key") {
		t.Errorf("the key is in a message: %s", stderr)
	}
}

// TestBinariesCountByAPI: every binary imports the count_tokens client, which cli cannot
// import itself; one that did not would fail --tokenizer api at run time.
func TestBinariesCountByAPI(t *testing.T) {
	mains, err := filepath.Glob(filepath.Join("cmd", "ctx-*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no binaries: %v", err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, imp := range f.Imports {
			found = found || imp.Path.Value == `"github.com/ctxkit/ctxkit/internal/apicount"`
		}
		if !found {
			t.Errorf("%s does not import internal/apicount", path)
		}
	}
}
