package summarize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const modelSummary = `<analysis>The user wants the handler fixed; tests were run.</analysis>
<summary>
## Goal and user requests
- Goal: “fix the slow order listing”
## Files changed
- /repo/internal/server/handler.go: cached the tenant lookup
## Next step
- run go test ./... again
</summary>`

// fakeModel serves the Anthropic Messages API (or Chat Completions) with the given status
// and body, and counts the requests and remembers the last one.
func fakeModel(t *testing.T, status int, body string) (*httptest.Server, *int32, *string) {
	var n int32
	var last string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&n, 1)
		b, _ := io.ReadAll(r.Body)
		last = string(b)
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &n, &last
}

func anthropicAnswer(text string) string {
	var b bytes.Buffer
	b.WriteString(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":`)
	b.WriteString(quoteJSON(text))
	b.WriteString(`}],"stop_reason":"end_turn"}`)
	return b.String()
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func runMain(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })
	return code, stdout.String(), stderr.String()
}

func sample(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnthropicBackend(t *testing.T) {
	s, n, last := fakeModel(t, 200, anthropicAnswer(modelSummary))
	store := t.TempDir()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-secret"}
	code, out, errOut := runMain(t, env, "--force", "--backend", "anthropic", "--base-url", s.URL, "--store", store, "--instructions", "Mention the ticket number.", sample(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if *n != 1 || !strings.Contains(out, `backend=\"anthropic\"`) || !strings.Contains(out, "cached the tenant lookup") {
		t.Errorf("%d requests; output %.300s", *n, out)
	}
	if strings.Contains(out, "analysis") || strings.Contains(out, "The user wants the handler fixed") {
		t.Error("the model's private analysis reached the document")
	}
	for _, want := range []string{"working-state summary", "Mention the ticket number.", "<conversation>", "claude-haiku-4-5"} {
		if !strings.Contains(*last, want) {
			t.Errorf("the request lacks %q", want)
		}
	}
	if strings.Contains(out+errOut, "sk-ant-secret") {
		t.Error("the API key was printed")
	}
}

func TestOpenAIBackendWithBaseURL(t *testing.T) {
	body := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` + quoteJSON(modelSummary) + `},"finish_reason":"stop"}]}`
	s, n, last := fakeModel(t, 200, body)
	// A local server needs no key.
	code, out, errOut := runMain(t, nil, "--force", "--backend", "openai", "--base-url", s.URL, "--llm-model", "qwen3", "--store", t.TempDir(), sample(t))
	if code != 0 || *n != 1 || !strings.Contains(out, "cached the tenant lookup") || !strings.Contains(*last, `"model":"qwen3"`) {
		t.Errorf("exit %d, %d requests: %s", code, *n, errOut)
	}
}

func TestFailureWritesNothingAndBreakerOpens(t *testing.T) {
	s, n, _ := fakeModel(t, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	store := t.TempDir()
	env := map[string]string{"ANTHROPIC_API_KEY": "k"}
	args := []string{"--force", "--backend", "anthropic", "--base-url", s.URL, "--retries", "0", "--store", store, sample(t)}
	for i := 0; i < 3; i++ {
		code, out, errOut := runMain(t, env, args...)
		if code != 4 || out != "" || !strings.Contains(errOut, "Overloaded") {
			t.Fatalf("run %d: exit %d, stdout %d bytes, stderr %s", i, code, len(out), errOut)
		}
	}
	if *n != 3 {
		t.Fatalf("%d requests, want 3", *n)
	}
	// Open: refused without a request.
	code, out, errOut := runMain(t, env, args...)
	if code != 4 || out != "" || !strings.Contains(errOut, "circuit breaker open") || *n != 3 {
		t.Errorf("with the breaker open: exit %d, %d requests, stderr %s", code, *n, errOut)
	}
	// --fallback local still gives a document, with a warning.
	code, out, errOut = runMain(t, env, append([]string{"--fallback", "local"}, args...)...)
	if code != 0 || !strings.Contains(out, `backend=\"local\"`) || !strings.Contains(errOut, "summarized locally instead") {
		t.Errorf("fallback: exit %d, stderr %s", code, errOut)
	}
	// --reset tries again.
	runMain(t, env, append([]string{"--reset"}, args...)...)
	if *n != 4 {
		t.Errorf("after --reset: %d requests, want 4", *n)
	}
	if _, err := os.Stat(filepath.Join(store, "summarize-breaker.json")); err != nil {
		t.Errorf("breaker state not in the store: %v", err)
	}
}

func TestPromptTooLongDropsOldest(t *testing.T) {
	var n int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		if atomic.AddInt32(&n, 1) == 1 {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}`))
			return
		}
		_, _ = w.Write([]byte(anthropicAnswer(modelSummary)))
	}))
	defer s.Close()
	code, out, errOut := runMain(t, map[string]string{"ANTHROPIC_API_KEY": "k"}, "--force", "--backend", "anthropic", "--base-url", s.URL, "--store", t.TempDir(), sample(t))
	if code != 0 || n != 2 || !strings.Contains(errOut, "the oldest 3 messages were left out") || !strings.Contains(out, "did not fit the summarizer") {
		t.Errorf("exit %d, %d requests, stderr %s", code, n, errOut)
	}
}

func TestMissingKey(t *testing.T) {
	code, out, errOut := runMain(t, nil, "--force", "--backend", "anthropic", "--store", t.TempDir(), sample(t))
	if code != 4 || out != "" || !strings.Contains(errOut, "ANTHROPIC_API_KEY is not set") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
}

func TestOffload(t *testing.T) {
	store := t.TempDir()
	code, out, errOut := runMain(t, nil, "--force", "--offload", "--store", store, sample(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	i := strings.Index(out, "is stored at ")
	if i < 0 {
		t.Fatalf("the summary does not name the stored document:\n%.500s", out)
	}
	path := strings.Fields(out[i+len("is stored at "):])[0]
	path = strings.TrimSuffix(path, ";")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(sample(t))
	if !bytes.Equal(data, orig) {
		t.Error("the stored document is not the input")
	}
}

// TestNoSummaryThatFitsNothingAndDoesNotRepay: where what no tier may change (here
// --overhead, the system prompt and tools an agent adds) already fills the window, a
// summary leaves the request over it all the same; it then fires only where what it saves
// repays the prompt cache it breaks (--repay), or the session costs more than doing
// nothing (corpus session 4379d1bf billed 1.002 before).
func TestNoSummaryThatFitsNothingAndDoesNotRepay(t *testing.T) {
	var msgs []string
	for i := range 8 {
		// The summarized turns' answers are long enough for a summary of them to be
		// worth writing (at most SummaryShare of them).
		answer := strings.Repeat("the parser reads each record once ", 20)
		if i < 3 {
			answer = strings.Repeat(answer, 8)
		}
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":%s}`, quoteJSON(fmt.Sprintf("step %d: %s", i, strings.Repeat("please look at the parser again ", 20)))),
			fmt.Sprintf(`{"role":"assistant","content":%s}`, quoteJSON(fmt.Sprintf("done %d: %s", i, answer))))
	}
	doc := `{"messages":[` + strings.Join(msgs, ",") + `]}`
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--window", "3000", "--reserve", "0", "--overhead", "6000", "--keep", "5 turns", "--tokenizer", "o200k", in}
	code, out, errText := runMain(t, nil, args...)
	if code != 0 || out != doc {
		t.Fatalf("exit %d, changed %v: %s", code, out != doc, errText)
	}
	if !strings.Contains(errText, "not summarizing: the request stays over the window") {
		t.Errorf("stderr does not say why: %q", errText)
	}
	// Turned off, the same run summarizes (the test above is what held it back).
	code, out, errText = runMain(t, nil, append([]string{"--repay", "0"}, args...)...)
	if code != 0 || out == doc {
		t.Fatalf("--repay 0: exit %d, changed %v: %s", code, out != doc, errText)
	}
	// A summary that brings the request inside the window fires whatever it breaks.
	code, out, errText = runMain(t, nil, "--window", "3000", "--reserve", "0", "--overhead", "1000", "--keep", "5 turns", "--tokenizer", "o200k", in)
	if code != 0 || out == doc {
		t.Fatalf("fitting: exit %d, changed %v: %s", code, out != doc, errText)
	}
}

// TestSummaryLeavesTheRequestWellBelowTheTrigger: where what no tier may change fills most
// of the window, a summary leaves the request just under the trigger and is due again a
// few requests later, breaking the cache each time (issue 38: 28 firings in 34 requests,
// each leaving 84-86% of the window). While the request fits, a summary must leave it at
// or below --target; else it waits until the request would not fit.
func TestSummaryLeavesTheRequestWellBelowTheTrigger(t *testing.T) {
	o := Options{Trigger: 0.85, Target: 0.75, Effective: 1000, Tokens: 900, Repay: 10, PerMessage: []int{100, 100, 100}}
	sp := Split{Summarized: []int{0, 1}}
	if why, _ := Judge(o, sp, 800); !strings.Contains(why, "above --target 75%") {
		t.Errorf("after 80%%: %q", why)
	}
	if why, r := Judge(o, sp, 700); why != "" || r.Exempt == "" {
		t.Errorf("after 70%%: %q, %+v", why, r)
	}
	o.Tokens = 1100 // over the window: a summary that makes it fit is worth it
	if why, r := Judge(o, sp, 980); why != "" || r.Exempt != "makes the request fit the window" {
		t.Errorf("made to fit: %q, %+v", why, r)
	}

	var msgs []string
	for i := range 8 {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":%s}`, quoteJSON(fmt.Sprintf("step %d: %s", i, strings.Repeat("please look at the parser again ", 20)))),
			fmt.Sprintf(`{"role":"assistant","content":%s}`, quoteJSON(fmt.Sprintf("done %d: %s", i, strings.Repeat("the parser reads each record once ", 30)))))
	}
	doc := `{"messages":[` + strings.Join(msgs, ",") + `]}`
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// About 2,530 tokens of messages and 8,700 of overhead in a 12,000 window: 94%; what
	// the summary leaves is over 75%.
	args := []string{"--window", "12000", "--reserve", "0", "--overhead", "8700", "--keep", "1 turn", "--tokenizer", "o200k", "--stats", in}
	code, out, errText := runMain(t, nil, args...)
	if code != 0 || out != doc || !strings.Contains(errText, "not summarizing: summarizing would leave the request at") || !strings.Contains(errText, `"above_target":true`) {
		t.Fatalf("exit %d, changed %v: %s", code, out != doc, errText)
	}
	code, out, errText = runMain(t, nil, append([]string{"--trigger", "85%", "--target", "85%"}, args...)...)
	if code != 0 || out == doc || !strings.Contains(errText, `"repay":{`) {
		t.Fatalf("--target 85%%: exit %d, changed %v: %s", code, out != doc, errText)
	}
}

// TestNoSummaryOfSoLittle: where even the smallest summary (its frame and each request's
// first words) would be over SummaryShare of what it replaces, ctx-summarize holds back,
// --force or not, and says why (issue 38: summary and restored files at most 15% of what
// they replace at every point; a tau-bench dialog of a few hundred tokens was summarized
// to 80% of itself).
func TestNoSummaryOfSoLittle(t *testing.T) {
	var msgs []string
	for i := range 6 {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":%s}`, quoteJSON(fmt.Sprintf("step %d: look at the parser", i))),
			fmt.Sprintf(`{"role":"assistant","content":%s}`, quoteJSON(fmt.Sprintf("done %d: the parser reads each record once", i))))
	}
	doc := `{"messages":[` + strings.Join(msgs, ",") + `]}`
	in := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(in, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errText := runMain(t, nil, "--force", "--keep", "1 turn", "--tokenizer", "o200k", "--stats", in)
	if code != 0 || out != doc {
		t.Fatalf("exit %d, changed %v: %s", code, out != doc, errText)
	}
	if !strings.Contains(errText, "not summarizing: the smallest summary of the 10 messages") || !strings.Contains(errText, `"over_share":true`) {
		t.Errorf("stderr does not say why: %s", errText)
	}
	// Held back, it stores nothing either: --offload keeps the document only when the
	// summary that names it is written.
	st := filepath.Join(t.TempDir(), "store")
	code, out, errText = runMain(t, nil, "--force", "--keep", "1 turn", "--tokenizer", "o200k", "--offload", "--store", st, in)
	if code != 0 || out != doc {
		t.Fatalf("--offload: exit %d, changed %v: %s", code, out != doc, errText)
	}
	if _, err := os.Stat(st); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--offload stored the document of a summary held back (%v)", err)
	}
}
