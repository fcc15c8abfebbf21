package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// seen is one request as the fake upstream received it.
type seen struct {
	Method, URI string
	Header      http.Header
	Body        []byte
}

// upstream is the small fake provider these tests need: it records every request and
// answers with reply (a JSON body), or with an SSE stream when the request asks for one.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	got  []seen
	sse  func(w http.ResponseWriter, r *http.Request, body []byte) // nil: one JSON reply
	hits int
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got = append(u.got, seen{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
		u.hits++
		sse := u.sse
		u.mu.Unlock()
		if sse != nil {
			sse(w, r, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "fake")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.got...)
}

func (u *upstream) last() seen {
	r := u.requests()
	return r[len(r)-1]
}

// testStateKey authenticates the state files of the tests' proxies: one key, so that a
// proxy started on another's state directory reads it, as one user's proxies do.
var testStateKey = []byte("ctx-proxy tests' state key......")

// proxyFor starts a proxy in front of up with the pipeline pipe ("" forwards bodies as
// they are) and its state in dir.
func proxyFor(t testing.TB, up string, pipe string, dir string) (*Server, *httptest.Server, *syncBuffer) {
	t.Helper()
	st, err := convstate.Open(dir, convstate.Options{Key: testStateKey, Canonical: canonical}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	s := &Server{
		Upstream: up,
		Timeout:  5 * time.Second,
		Env:      map[string]string{"CTX_STORE": t.TempDir(), "CTX_CACHE_DIR": "off"},
		State:    st,
		TempDir:  t.TempDir(),
		Log:      log,
		Stats:    log,
		Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
			return tokens.New(tokens.DefaultTokenizer(string(f)))
		},
	}
	if pipe != "" {
		p, err := replay.ParsePipe(pipe, replay.Tools())
		if err != nil {
			t.Fatal(err)
		}
		s.Pipe = p
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts, log
}

type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

// waitLog waits for the log to hold n lines: a request's line is written once its
// response has gone back, so the client can be a little ahead of it.
func waitLog(t testing.TB, log *syncBuffer, n int) string {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if s := log.String(); strings.Count(s, "\n") >= n {
			return s
		}
	}
	t.Fatalf("the log holds no %d lines: %s", n, log.String())
	return ""
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Len()
}

func post(t testing.TB, url string, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// conversation builds an Anthropic request whose messages are msgs.
func conversation(msgs ...string) string {
	return `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"You are a coding agent."}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

func userText(s string) string {
	return `{"role":"user","content":[{"type":"text","text":` + q(s) + `}]}`
}
func toolUse(id, cmd string) string {
	return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"Bash","input":{"command":` + q(cmd) + `}}]}`
}
func toolResult(id, text string) string {
	return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":` + q(text) + `}]}`
}
func q(s string) string { b, _ := json.Marshal(s); return string(b) }

func bigOutput(tag string) string {
	var b strings.Builder
	for i := 0; b.Len() < 6000; i++ {
		fmt.Fprintf(&b, "%s line %d: some build output that goes on and on\n", tag, i)
	}
	return b.String()
}

func messagesOf(body []byte) []string {
	var out []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		out = append(out, m.Raw)
	}
	return out
}

// TestMultiTurnToolRoundTrip: the pipeline cuts a tool result; the next turn is rebuilt on
// what was sent, so its messages start with the first turn's sent messages, byte for byte.
func TestMultiTurnToolRoundTrip(t *testing.T) {
	up := newUpstream(t)
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	hdr := map[string]string{"x-api-key": "sk-ant-test", "anthropic-beta": "a,b", "X-Claude-Code-Session-Id": "s1"}

	turn1 := []string{userText("build it"), toolUse("tu_1", "make"), toolResult("tu_1", bigOutput("one"))}
	resp, _ := post(t, px.URL+"/v1/messages?beta=true", conversation(turn1...), hdr)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	first := up.last()
	if first.URI != "/v1/messages?beta=true" {
		t.Errorf("upstream got %q, want the query kept", first.URI)
	}
	if first.Header.Get("x-api-key") != "sk-ant-test" || first.Header.Get("anthropic-beta") != "a,b" {
		t.Errorf("headers not forwarded: %v", first.Header)
	}
	sent1 := messagesOf(first.Body)
	if len(sent1) != 3 || sent1[2] == turn1[2] {
		t.Fatalf("the pipeline should have cut the tool result: %d messages", len(sent1))
	}

	turn2 := append(append([]string{}, turn1...), toolUse("tu_2", "make test"), toolResult("tu_2", bigOutput("two")))
	post(t, px.URL+"/v1/messages?beta=true", conversation(turn2...), hdr)
	sent2 := messagesOf(up.last().Body)
	if len(sent2) != 5 {
		t.Fatalf("turn 2 sent %d messages, want 5", len(sent2))
	}
	for i := range sent1 {
		if sent2[i] != sent1[i] {
			t.Errorf("turn 2 message %d differs from what turn 1 sent:\n%s\n%s", i, sent2[i], sent1[i])
		}
	}
	if sent2[4] == turn2[4] {
		t.Errorf("turn 2's new tool result was not cut")
	}
	lines := strings.Split(strings.TrimSpace(waitLog(t, log, 4)), "\n")
	var rec Record
	for _, l := range lines {
		if strings.HasPrefix(l, "{") {
			json.Unmarshal([]byte(l), &rec)
		}
	}
	if !rec.Extended || rec.CachedMessages != 3 || rec.Saved <= 0 || len(rec.Tiers) == 0 || rec.Tiers[0].Tool != "ctx-budget" {
		t.Errorf("log line of turn 2: %+v", rec)
	}
}

// TestNoPipeForwardsBytes: with no pipeline, a conversation goes out byte for byte.
func TestNoPipeForwardsBytes(t *testing.T) {
	up := newUpstream(t)
	_, px, _ := proxyFor(t, up.URL, "", t.TempDir())
	body := conversation(userText("hi"))
	post(t, px.URL+"/v1/messages", body, nil)
	if got := string(up.last().Body); got != body {
		t.Errorf("sent %s\nwant %s", got, body)
	}
}

// TestSSEFlushedPerEvent: the client reads the first event while the upstream still holds
// the second back, and the stream arrives byte-identical.
func TestSSEFlushedPerEvent(t *testing.T) {
	up := newUpstream(t)
	release := make(chan struct{})
	ev1 := "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
	ev2 := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"héllo\"}}\n\n"
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ev1)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, ev2)
	}
	_, px, _ := proxyFor(t, up.URL, "", t.TempDir())
	resp, err := http.Post(px.URL+"/v1/messages", "application/json", strings.NewReader(conversation(userText("hi"))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	got := make([]byte, len(ev1))
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(br, got); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the first event did not arrive before the upstream sent the second")
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if string(got)+string(rest) != ev1+ev2 {
		t.Errorf("stream %q, want %q", string(got)+string(rest), ev1+ev2)
	}
}

// TestFallback: a pipeline that fails, runs out of time, or hands back a document that
// breaks a tool pair leaves the original body to be sent, and the log says why.
func TestFallback(t *testing.T) {
	broken := `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":"x"}]}]}`
	for name, c := range map[string]struct{ pipe, want string }{
		"fails":   {"ctx-budget --no-such-flag", "ctx-budget exited 2"},
		"timeout": {"sleep 3; cat", "did not finish"},
		"invalid": {"cat >/dev/null; echo '" + broken + "'", "ctx-repair --check"},
	} {
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t)
			s, px, log := proxyFor(t, up.URL, c.pipe, t.TempDir())
			s.Timeout = 300 * time.Millisecond
			body := conversation(userText("hi"), toolUse("t1", "ls"), toolResult("t1", bigOutput("x")))
			start := time.Now()
			resp, _ := post(t, px.URL+"/v1/messages", body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if got := string(up.last().Body); got != body {
				t.Errorf("the original body was not sent")
			}
			waitLog(t, log, 2)
			if !strings.Contains(log.String(), `"fallback":`) || !strings.Contains(log.String(), c.want) {
				t.Errorf("log %s does not say %q", log, c.want)
			}
		})
	}
}

// TestPassThrough: paths that carry no conversation, and bodies that are not one, go to
// the upstream untouched and come back untouched.
func TestPassThrough(t *testing.T) {
	up := newUpstream(t)
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 10 --keep-recent 0", t.TempDir())
	count := conversation(userText("hi"), toolUse("t1", "ls"), toolResult("t1", bigOutput("x")))
	resp, out := post(t, px.URL+"/v1/messages/count_tokens?beta=true", count, map[string]string{"x-api-key": "k"})
	if got := up.last(); string(got.Body) != count || got.URI != "/v1/messages/count_tokens?beta=true" {
		t.Errorf("count_tokens was changed: %s", got.URI)
	}
	if resp.Header.Get("X-Upstream") != "fake" || !strings.Contains(string(out), "count_tokens") {
		t.Errorf("response not passed back: %v %s", resp.Header, out)
	}
	for _, body := range []string{"not json at all", `{"input":"a plain string"}`} {
		post(t, px.URL+"/v1/responses", body, nil)
		if got := string(up.last().Body); got != body {
			t.Errorf("body %q sent as %q", body, got)
		}
	}
	req, _ := http.NewRequest(http.MethodHead, px.URL+"/", nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 200 || up.last().Method != http.MethodHead {
		t.Errorf("HEAD / not passed through: %v", err)
	}
	r, err := http.Get(px.URL + "/v1/models")
	if err != nil || r.StatusCode != 200 || up.last().URI != "/v1/models" {
		t.Errorf("GET /v1/models not passed through")
	}
	if log.Len() != 0 {
		t.Errorf("requests that carry no conversation were logged: %s", log)
	}
}

// TestWebSocketRefused: Codex's upgrade on GET /v1/responses is refused at once, and
// never reaches the upstream.
func TestWebSocketRefused(t *testing.T) {
	up := newUpstream(t)
	_, px, _ := proxyFor(t, up.URL, "", t.TempDir())
	req, _ := http.NewRequest(http.MethodGet, px.URL+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("status %d, want 426", resp.StatusCode)
	}
	if up.hits != 0 {
		t.Errorf("the upgrade reached the upstream")
	}
}

// TestNoCredentialLogged: keys in any header the client sends appear in no log line, on
// success or on a fallback, and reach the upstream intact.
func TestNoCredentialLogged(t *testing.T) {
	const key = "sk-planted-0123456789abcdef"
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "ctx-budget --no-such-flag", t.TempDir())
	hdr := map[string]string{"x-api-key": key, "Authorization": "Bearer " + key, "Cookie": "session=" + key}
	post(t, px.URL+"/v1/messages", conversation(userText("hi")), hdr)
	s.Pipe = nil
	post(t, px.URL+"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, hdr)
	if got := up.last().Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("authorization not forwarded: %q", got)
	}
	waitLog(t, log, 4)
	if strings.Contains(log.String(), key) {
		t.Errorf("the key is in the log:\n%s", log)
	}
}

// TestMarkersCapped: Claude Code marks the system prompt and moves its last marker to the
// newest message every turn; resent history keeps last turn's marker, and the request
// never holds more than four.
func TestMarkersCapped(t *testing.T) {
	up := newUpstream(t)
	srv, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	var want []int
	marked := func(m string) string {
		return strings.Replace(m, `"type":"tool_result"`, `"type":"tool_result","cache_control":{"type":"ephemeral"}`, 1)
	}
	sys := `{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],"messages":[`
	msgs := []string{userText("go")}
	for turn := 1; turn <= 5; turn++ {
		id := fmt.Sprintf("t%d", turn)
		msgs = append(msgs, toolUse(id, "ls"), toolResult(id, bigOutput(id)))
		req := append([]string{}, msgs...)
		req[len(req)-1] = marked(req[len(req)-1])
		post(t, px.URL+"/v1/messages", sys+strings.Join(req, ",")+"]}", map[string]string{"X-Claude-Code-Session-Id": "m"})
		body := up.last().Body
		if n := markers(body); n > MaxMarkers {
			t.Errorf("turn %d: %d cache_control markers", turn, n)
		}
		want = append(want, markers(body))
		sent := messagesOf(body)
		if !gjson.Get(sent[len(sent)-1], "content.0.cache_control").Exists() {
			t.Errorf("turn %d: the newest message lost its marker", turn)
		}
		if turn > 1 && !gjson.Get(sent[len(sent)-3], "content.0.cache_control").Exists() {
			t.Errorf("turn %d: last turn's marker was not kept where the cached prefix ends: %s", turn, body)
		}
	}
	// The log line counts the markers of what was sent.
	px.Close()
	srv.Close()
	var got []int
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec Record
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Conversation != "" {
			got = append(got, rec.Markers)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the log's markers are %v, what was sent has %v", got, want)
	}
}

// TestFirstMarksAfterResponse: a first request's messages are read for markers after the
// response, not before; the log counts them, the state keeps their marks for the next
// request, and a next request that comes before the first's finish step finds them itself:
// either way it holds no more than four.
func TestFirstMarksAfterResponse(t *testing.T) {
	s, _, _ := proxyFor(t, "http://127.0.0.1:1", "", t.TempDir())
	marked := func(m string) string {
		return strings.Replace(m, `"type":"text"`, `"type":"text","cache_control":{"type":"ephemeral"}`, 1)
	}
	// Three marked messages and one marked system block: four markers.
	msgs := []string{marked(userText("a")), toolUse("t1", "ls"), marked(userText("b")), toolUse("t2", "ls"), marked(userText("c"))}
	body := func(msgs ...string) []byte {
		return []byte(strings.Replace(conversation(msgs...), `"text":"You are a coding agent."`, `"text":"You are a coding agent.","cache_control":{"type":"ephemeral"}`, 1))
	}
	for _, early := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
		r.Header.Set("X-Claude-Code-Session-Id", fmt.Sprint("marks-", early))
		rec, p := s.rewrite(r, transcript.Anthropic, body(msgs...))
		if rec.Fallback != "" || rec.Extended {
			t.Fatalf("first request: fallback %q, extended %v", rec.Fallback, rec.Extended)
		}
		if st, _ := s.State.Get(rec.Conversation); st == nil || st.Marked {
			t.Fatalf("early %v: the first request's messages were read for markers before the response (state %v)", early, st)
		}
		// The next request moves the newest marker on: five markers unless one is dropped.
		next := append(append([]string{}, msgs...), toolUse("t3", "ls"), marked(userText("d")))
		// (msgs[4] resent with its marker, as Claude Code's history keeps last turn's.)
		finishFirst := func() {
			s.finish(rec, p)
			if rec.Markers != 4 {
				t.Errorf("early %v: %d markers logged, want 4", early, rec.Markers)
			}
		}
		if !early {
			finishFirst()
			st, _ := s.State.Get(rec.Conversation)
			if st == nil || !st.Marked || fmt.Sprint(st.Marks) != "[0 2 4]" {
				t.Fatalf("the state after the response: %+v, want marks [0 2 4]", st)
			}
		}
		rec2, p2 := s.rewrite(r, transcript.Anthropic, body(next...))
		if !rec2.Extended || rec2.Fallback != "" {
			t.Fatalf("early %v: next request: fallback %q, extended %v", early, rec2.Fallback, rec2.Extended)
		}
		if early {
			finishFirst()
		}
		s.finish(rec2, p2)
		if n := markers(rec2.body); n != MaxMarkers || rec2.Markers != n {
			t.Errorf("early %v: the next request holds %d markers, logged %d, want %d", early, n, rec2.Markers, MaxMarkers)
		}
	}
}

// TestStateSurvivesRestart: a new proxy on the same state directory rebuilds the next turn
// on what the old one sent.
func TestStateSurvivesRestart(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	pipe := "ctx-budget --cap 500 --keep-recent 0"
	s1, px1, _ := proxyFor(t, up.URL, pipe, dir)
	turn1 := []string{userText("go"), toolUse("a", "ls"), toolResult("a", bigOutput("a"))}
	post(t, px1.URL+"/v1/messages", conversation(turn1...), nil)
	sent1 := messagesOf(up.last().Body)
	px1.Close()
	s1.Close()

	// A pipeline that changes nothing: what the second proxy sends for the old messages
	// can only come from the state the first one left.
	_, px2, log := proxyFor(t, up.URL, "ctx-repair", dir)
	turn2 := append(append([]string{}, turn1...), `{"role":"assistant","content":[{"type":"text","text":"done"}]}`, userText("and now?"))
	post(t, px2.URL+"/v1/messages", conversation(turn2...), nil)
	sent2 := messagesOf(up.last().Body)
	for i := range sent1 {
		if sent2[i] != sent1[i] {
			t.Fatalf("after a restart message %d is not what was sent before:\n%s\n%s", i, sent2[i], sent1[i])
		}
	}
	if !strings.Contains(waitLog(t, log, 2), `"extended":true`) {
		t.Errorf("log: %s", log)
	}
}

// TestStatus: /ctxkit/status totals each conversation.
func TestStatus(t *testing.T) {
	up := newUpstream(t)
	_, px, _ := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	post(t, px.URL+"/v1/messages", conversation(userText("go"), toolUse("a", "ls"), toolResult("a", bigOutput("a"))), nil)
	var st struct {
		Conversations []struct {
			Requests, Saved int
		}
	}
	// The totals are added once the response has gone back: wait for them.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		r, err := http.Get(px.URL + "/ctxkit/status")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(r.Body).Decode(&st)
		r.Body.Close()
		if len(st.Conversations) == 1 && st.Conversations[0].Requests == 1 {
			break
		}
	}
	if len(st.Conversations) != 1 || st.Conversations[0].Requests != 1 || st.Conversations[0].Saved <= 0 {
		t.Errorf("status %+v", st)
	}
}

// TestConcurrentStreams: 200 streamed requests over 20 conversations at once all come
// back, each with its own answer, in bounded time.
func TestConcurrentStreams(t *testing.T) {
	up := newUpstream(t)
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		who := gjson.GetBytes(body, "messages.0.content.0.text").String()
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: {\"conv\":%q,\"n\":%d}\n\n", who, gjson.GetBytes(body, "messages.#").Int())
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}
	_, px, _ := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			conv := fmt.Sprintf("conversation-%d", i%20)
			msgs := []string{userText(conv)}
			for k := 0; k < i/20; k++ {
				id := fmt.Sprintf("t%d", k)
				msgs = append(msgs, toolUse(id, "ls"), toolResult(id, "out "+id))
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, px.URL+"/v1/messages", strings.NewReader(conversation(msgs...)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				errs <- err
				return
			}
			if strings.Count(string(out), fmt.Sprintf(`{"conv":%q,`, conv)) != 3 {
				errs <- fmt.Errorf("request %d got %s", i, out)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(up.requests()); n != 200 {
		t.Errorf("upstream got %d requests", n)
	}
}

// TestResponsesExtends: a Codex-like Responses request (input items, prompt_cache_key,
// session-id header) is rebuilt on what was sent, as an Anthropic one is.
func TestResponsesExtends(t *testing.T) {
	up := newUpstream(t)
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	items := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]}`,
		`{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"make\"}"}`,
		`{"type":"function_call_output","call_id":"c1","output":` + q(bigOutput("make")) + `}`,
	}
	req := func(items []string) string {
		return `{"model":"gpt-5","instructions":"You are Codex.","input":[` + strings.Join(items, ",") + `],"tools":[],"store":false,"stream":true,"prompt_cache_key":"thread-1"}`
	}
	hdr := map[string]string{"session-id": "thread-1", "Authorization": "Bearer sk-x"}
	post(t, px.URL+"/v1/responses", req(items), hdr)
	input := func(body []byte) []string {
		var out []string
		for _, m := range gjson.GetBytes(body, "input").Array() {
			out = append(out, m.Raw)
		}
		return out
	}
	sent1 := input(up.last().Body)
	if sent1[2] == items[2] {
		t.Fatalf("the pipeline did not cut the output")
	}
	items = append(items, `{"type":"function_call","call_id":"c2","name":"shell","arguments":"{\"cmd\":\"make test\"}"}`,
		`{"type":"function_call_output","call_id":"c2","output":"ok"}`)
	post(t, px.URL+"/v1/responses", req(items), hdr)
	sent2 := input(up.last().Body)
	if len(sent2) != 5 {
		t.Fatalf("sent %d items", len(sent2))
	}
	for i := range sent1 {
		if sent2[i] != sent1[i] {
			t.Errorf("item %d differs from what was sent before", i)
		}
	}
	if !gjson.GetBytes(up.last().Body, "stream").Bool() || gjson.GetBytes(up.last().Body, "prompt_cache_key").String() != "thread-1" {
		t.Errorf("top-level fields lost")
	}
	if !strings.Contains(waitLog(t, log, 4), `"format":"responses"`) {
		t.Errorf("log: %s", log)
	}
}

// TestInProcessTimeout: an in-process stage that is still running at --timeout does not
// hold the request: the original body goes to the upstream while the stage goes on, and
// the fallback is logged.
func TestInProcessTimeout(t *testing.T) {
	release := make(chan struct{})
	stuck := func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
		<-release
		io.Copy(stdout, stdin)
		return 0
	}
	defer close(release)
	pipe, err := replay.ParsePipe("stuck", map[string]cli.MainFunc{"stuck": stuck})
	if err != nil {
		t.Fatal(err)
	}
	if !pipe.InProcess() {
		t.Fatal("the pipeline is not run in process")
	}
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "", t.TempDir())
	s.Pipe, s.Timeout = pipe, 100*time.Millisecond
	body := conversation(userText("hi"), toolUse("t1", "ls"), toolResult("t1", "a\nb"))
	// (the stage is released only when the test ends: before the fix the request waited
	// for it, and this post never returned)
	resp, _ := post(t, px.URL+"/v1/messages", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := string(up.last().Body); got != body {
		t.Errorf("the original body was not sent")
	}
	waitLog(t, log, 1)
	if !strings.Contains(log.String(), `"fallback":"pipeline: did not finish within 100ms"`) {
		t.Errorf("log %s does not name the timeout", log)
	}
}

// TestOffloadedReadable: a result ctx-persist offloads through the proxy is named in its
// placeholder by an absolute path the agent's own file tools can open, holding the text.
func TestOffloadedReadable(t *testing.T) {
	up := newUpstream(t)
	out := bigOutput("persisted")
	_, px, _ := proxyFor(t, up.URL, "ctx-persist --threshold 1KB", t.TempDir())
	built := `{"role":"assistant","content":[{"type":"text","text":"built"}]}`
	body := conversation(userText("hi"), toolUse("t1", "make"), toolResult("t1", out), built, userText("and now?"))
	if resp, _ := post(t, px.URL+"/v1/messages", body, nil); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sent := string(up.last().Body)
	if sent == body {
		t.Fatal("ctx-persist did not offload the result")
	}
	m := regexp.MustCompile(`/[^"\s\\\]]+`).FindAllString(sent, -1)
	found := false
	for _, p := range m {
		if data, err := os.ReadFile(p); err == nil && string(data) == out {
			found = true
		}
	}
	if !found {
		t.Errorf("no absolute path in the sent body names a file holding the result:\n%s", sent)
	}
}

// TestReencodedMessagesExtend: Claude Code sends its newest user message as one text block
// with a cache marker and, one request later, the same message as a plain string (its
// first request's only message included, so the session's key must not change either).
// Re-encoded so, the request still extends the last one and reuses every message sent.
func TestReencodedMessagesExtend(t *testing.T) {
	up := newUpstream(t)
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": "s1"}
	marked := func(s string) string {
		return `{"role":"user","content":[{"type":"text","text":` + q(s) + `,"cache_control":{"type":"ephemeral"}}]}`
	}
	plain := func(s string) string { return `{"role":"user","content":` + q(s) + `}` }

	reqs := [][]string{
		{marked("build it <now>")},
		{plain("build it <now>"), toolUse("tu_1", "make"), toolResult("tu_1", bigOutput("one"))},
		{plain("build it <now>"), toolUse("tu_1", "make"), toolResult("tu_1", bigOutput("one")), `{"role":"assistant","content":"built"}`, marked("and test it")},
		{plain("build it <now>"), toolUse("tu_1", "make"), toolResult("tu_1", bigOutput("one")), `{"role":"assistant","content":"built"}`, plain("and test it"), toolUse("tu_2", "make test"), toolResult("tu_2", bigOutput("two"))},
	}
	for _, msgs := range reqs {
		if resp, _ := post(t, px.URL+"/v1/messages", conversation(msgs...), hdr); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	var recs []Record
	for _, l := range strings.Split(strings.TrimSpace(waitLog(t, log, 2*len(reqs))), "\n") {
		var rec Record
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Path != "" {
			recs = append(recs, rec)
		}
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d log lines, want %d", len(recs), len(reqs))
	}
	for i, rec := range recs[1:] {
		if rec.Conversation != recs[0].Conversation {
			t.Errorf("request %d: conversation %s, the first was %s", i+1, rec.Conversation, recs[0].Conversation)
		}
		if !rec.Extended || rec.CachedMessages != len(reqs[i]) {
			t.Errorf("request %d: extended %v, %d messages reused, want %d", i+1, rec.Extended, rec.CachedMessages, len(reqs[i]))
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{"role":"user","content":[{"type":"text","text":"x\u003c","cache_control":{"type":"ephemeral"}}]}`, `{"role":"user","content":"x\u003c"}`},
		{`{"role":"user","content":[{"type":"text","text":"x"}]}`, `{"role":"user","content":"x"}`},
		{`{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}`, `{"type":"message","role":"user","content":"x"}`},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x","cache_control":{"type":"ephemeral"}}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]}`},
	} {
		if canonical(c.a) != canonical(c.b) {
			t.Errorf("%s and %s differ: %s / %s", c.a, c.b, canonical(c.a), canonical(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{`{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}`, `{"role":"user","content":"xy"}`},
		{`{"role":"user","content":[{"type":"text","text":"x","citations":[]}]}`, `{"role":"user","content":"x"}`},
		{`{"role":"user","content":[{"type":"image","source":{}}]}`, `{"role":"user","content":""}`},
	} {
		if canonical(c.a) == canonical(c.b) {
			t.Errorf("%s and %s are the same prompt: %s", c.a, c.b, canonical(c.a))
		}
	}
}

// TestIdleClearingLive: an API body carries no times, so the proxy tells the stages when
// the conversation's previous request was answered. With --idle 5s, ctx-snip clears on the
// request that comes 6 s after an answer, not on one that comes 3 s after; a request that
// asks for a 1h cache is not taken for cold after 6 s.
func TestIdleClearingLive(t *testing.T) {
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "ctx-snip --idle 5s --keep 0", t.TempDir())
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	wait := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": "idle"}
	msgs := []string{userText("build it"), toolUse("tu_1", "make"), toolResult("tu_1", bigOutput("one"))}
	lines := 0
	send := func(body string) Record {
		t.Helper()
		if resp, _ := post(t, px.URL+"/v1/messages", body, hdr); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		lines += 2 // the record and the short stats line
		all := strings.Split(strings.TrimSpace(waitLog(t, log, lines)), "\n")
		var rec Record
		for _, l := range all {
			var r Record
			if json.Unmarshal([]byte(l), &r) == nil && r.Path != "" {
				rec = r
			}
		}
		return rec
	}
	send(conversation(msgs...))
	for i, c := range []struct {
		gap   time.Duration
		ttl   bool
		fires bool
	}{{3 * time.Second, false, false}, {6 * time.Second, true, false}, {6 * time.Second, false, true}} {
		wait(c.gap)
		id := fmt.Sprintf("tu_%d", i+2)
		msgs = append(msgs, toolUse(id, "make again"), toolResult(id, bigOutput(id)))
		body := conversation(msgs...)
		if c.ttl {
			body = strings.Replace(body, `"text":"You are a coding agent."}`, `"text":"You are a coding agent.","cache_control":{"type":"ephemeral","ttl":"1h"}}`, 1)
		}
		rec := send(body)
		fired := len(rec.Tiers) > 0 && rec.Tiers[0].Tool == "ctx-snip"
		if fired != c.fires {
			t.Errorf("request %d, %v after the last answer (1h cache %v): ctx-snip fired %v, want %v (%+v)", i+2, c.gap, c.ttl, fired, c.fires, rec.Tiers)
		}
	}
}

// TestUpstreamSummarizer: with --summarizer upstream, ctx-summarize's model call goes to
// the request's own upstream with the client's own key and the small model; the summary
// it writes is what the conversation carries on with, and the key is in no log line.
func TestUpstreamSummarizer(t *testing.T) {
	const key = "sk-ant-client-key-0123456789"
	var mu sync.Mutex
	var summaryCalls []seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if gjson.GetBytes(body, "model").String() == "claude-haiku-4-5" {
			mu.Lock()
			summaryCalls = append(summaryCalls, seen{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
			mu.Unlock()
			fmt.Fprintf(w, `{"id":"msg_s","type":"message","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":"end_turn"}`,
				q("<summary>\n## Goal and user requests\n- Goal: SUMMARY-FROM-THE-MODEL\n</summary>"))
			return
		}
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":%s}]}`, q(string(body)))
	}))
	t.Cleanup(up.Close)
	s, px, log := proxyFor(t, up.URL, "ctx-summarize --force --keep 10", t.TempDir())
	s.Summarizer = &UpstreamSummarizer{Timeout: 10 * time.Second}
	msgs := []string{userText("fix the parser"), `{"role":"assistant","content":` + q(bigOutput("looking")) + `}`, userText("now the tests"), `{"role":"assistant","content":` + q(bigOutput("done")) + `}`, userText("and ship it")}
	_, out := post(t, px.URL+"/v1/messages", conversation(msgs...), map[string]string{"x-api-key": key})
	if len(summaryCalls) != 1 {
		t.Fatalf("%d summary calls reached the upstream, want 1", len(summaryCalls))
	}
	c := summaryCalls[0]
	if c.URI != "/v1/messages" || c.Header.Get("X-Api-Key") != key {
		t.Errorf("summary call to %s with key %q", c.URI, c.Header.Get("X-Api-Key"))
	}
	sent := gjson.GetBytes(out, "content.0.text").String() // the fake echoes what it was sent
	if !strings.Contains(sent, "SUMMARY-FROM-THE-MODEL") {
		t.Errorf("the request sent on does not carry the model's summary: %.300s", sent)
	}
	if l := waitLog(t, log, 1); strings.Contains(l, key) || strings.Contains(l, "client-key") {
		t.Errorf("the key reached the log: %s", l)
	}
	// No credential, no model call: the local summary.
	summaryCalls = nil
	post(t, px.URL+"/v1/messages", conversation(append(msgs, `{"role":"assistant","content":"shipped"}`, userText("thanks"))...), nil)
	if len(summaryCalls) != 0 {
		t.Errorf("a request without a key made %d model calls", len(summaryCalls))
	}
	// A Claude Code login sends a bearer token, not a key: passed on as such.
	post(t, px.URL+"/v1/messages", conversation(append(msgs, `{"role":"assistant","content":"shipped"}`, userText("bye"))...), map[string]string{"Authorization": "Bearer oauth-token-xyz"})
	if len(summaryCalls) != 1 || summaryCalls[0].Header.Get("Authorization") != "Bearer oauth-token-xyz" || summaryCalls[0].Header.Get("X-Api-Key") != "" {
		t.Errorf("bearer login: %d model calls, headers %v", len(summaryCalls), summaryCalls)
	}
}

// markers counts the cache_control markers of a Messages API body, the slow way.
func markers(body []byte) int {
	n := 0
	for _, path := range []string{"tools.#.cache_control", "system.#.cache_control"} {
		n += len(gjson.GetBytes(body, path).Array())
	}
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		n += len(m.Get("content.#.cache_control").Array())
	}
	return n
}
