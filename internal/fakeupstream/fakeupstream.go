// Package fakeupstream is a stand-in for the Anthropic and OpenAI APIs on loopback, for tests
// that drive real clients (Claude Code, Codex CLI, the official SDKs) and ctx-proxy without a
// network or a key. It owns the wire formats those clients expect back (Anthropic Messages,
// OpenAI Responses and Chat Completions, streamed as SSE or not), a script of replies (a tool
// call, then the next, then a final text), a record of every request it was sent, and a minimal
// check of each conversation body the way the real API would refuse it.
//
// Replies are chosen from the request alone, not from a counter: turn k+1 of the script answers
// a request that carries the result of turn k's tool call (whose id the upstream made, so it
// knows it), turn 0 answers a request that offers tools and carries none of its results. A
// client's retries and its side requests (title generation, quota probes, requests without
// tools) therefore never move the script on; side requests get a short text reply, so a client
// never waits on the upstream.
package fakeupstream

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Turn is one scripted reply. With Tool set it is a tool call (Anthropic tool_use, Responses
// function_call, Chat Completions tool_calls) whose arguments are Input, a JSON object;
// otherwise it is the text Text. Status above 0 answers with that HTTP status and the API's
// error body instead; Cut ends the connection after that many SSE events (a cut stream);
// Delay waits before each event (a slow upstream).
type Turn struct {
	Text   string
	Tool   string
	Input  string
	Status int
	Cut    int
	Delay  time.Duration
}

// Request is one request as the upstream saw it and what it answered.
type Request struct {
	Method, Path, Query string
	Header              http.Header // credentials redacted
	Body                []byte
	API                 string // "anthropic", "responses", "chat", or "" for anything else
	Step                int    // the script turn answered, or -1 for a side request
	Status              int
	Response            []byte   // the bytes written back, events and all
	Violations          []string // what the real API would refuse in Body
}

// Upstream is the fake API. Script it with turns, start it with Start (or use it as an
// http.Handler), and read what it saw with Requests.
type Upstream struct {
	// Script is answered in order as the conversation moves on. For a client whose tool is
	// named differently per API, set Tools: the name to call for a request of that API
	// ("responses" → "shell"), overriding Turn.Tool when the request offers it.
	Script []Turn
	Tools  map[string]string
	// Model is echoed in replies when a request names none.
	Model string

	mu       sync.Mutex
	requests []Request
}

// New returns an upstream answering script.
func New(script ...Turn) *Upstream { return &Upstream{Script: script, Model: "fake-model"} }

// Start serves u on 127.0.0.1 until the test ends.
func (u *Upstream) Start(t interface{ Cleanup(func()) }) *httptest.Server {
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	return srv
}

// Requests returns a copy of everything received so far, in arrival order.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.requests...)
}

// Scripted returns the requests that were answered from the script, in arrival order.
func (u *Upstream) Scripted() []Request {
	var out []Request
	for _, r := range u.Requests() {
		if r.Step >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Violations lists every violation of every request, each prefixed with its path.
func (u *Upstream) Violations() []string {
	var out []string
	for _, r := range u.Requests() {
		for _, v := range r.Violations {
			out = append(out, r.Method+" "+r.Path+": "+v)
		}
	}
	return out
}

// credentialHeaders are never recorded: tests print what they saw.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie", "Proxy-Authorization"}

// Redact returns h with the value of every credential header replaced.
func Redact(h http.Header) http.Header {
	h = h.Clone()
	for _, k := range credentialHeaders {
		if h.Get(k) != "" {
			h.Set(k, "REDACTED")
		}
	}
	return h
}

// ServeHTTP answers one request and records it.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := &recorder{w: w, status: http.StatusOK}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: Redact(r.Header), Body: body, Step: -1}
	defer func() {
		req.Status, req.Response = rec.status, rec.buf.Bytes()
		u.mu.Lock()
		u.requests = append(u.requests, req)
		u.mu.Unlock()
	}()

	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		// Codex tries a WebSocket first and retries it for seconds unless refused outright.
		http.Error(rec, "websocket not supported", http.StatusUpgradeRequired)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(rec, http.StatusOK, fmt.Sprintf(`{"input_tokens":%d}`, approxTokens(body)))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		req.API = "anthropic"
		req.Violations = checkAnthropic(body, r.Header.Get("Anthropic-Beta"))
		req.Step = u.serve(rec, r, &req, anthropicWire{})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		req.API = "responses"
		req.Violations = checkResponses(body)
		req.Step = u.serve(rec, r, &req, responsesWire{})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		req.API = "chat"
		req.Violations = checkChat(body)
		req.Step = u.serve(rec, r, &req, chatWire{})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(rec, http.StatusOK, `{"object":"list","data":[],"models":[]}`)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		// Claude Code probes HEAD / before its first request; any other GET gets an empty
		// answer rather than a hang or a 404 a client might retry.
		writeJSON(rec, http.StatusOK, `{}`)
	default:
		writeJSON(rec, http.StatusNotFound, `{"type":"error","error":{"type":"not_found_error","message":"fakeupstream: no such endpoint"}}`)
	}
}

// wire is one API's reply format.
type wire interface {
	// results lists the call ids of the tool results the body carries.
	results(body []byte) []string
	// offersTools says whether the request lets the model call a tool.
	offersTools(body []byte) bool
	// callID is the id the upstream gives turn k's tool call.
	callID(k int) string
	// reply writes turn t (numbered k) as the API would, streamed or not.
	reply(e *emitter, model string, k int, t Turn, stream bool)
	// errorBody is the API's error document for an HTTP status.
	errorBody(status int) string
}

// serve picks the turn the request answers and writes it; it returns the turn's number or -1.
func (u *Upstream) serve(w *recorder, r *http.Request, req *Request, api wire) int {
	body := req.Body
	step := -1
	have := map[string]bool{}
	for _, id := range api.results(body) {
		have[id] = true
	}
	for k := len(u.Script) - 1; k >= 0; k-- {
		if have[api.callID(k)] {
			step = k + 1
			break
		}
	}
	if step < 0 && api.offersTools(body) {
		step = 0
	}
	t := Turn{Text: "ok"}
	if step >= 0 && step < len(u.Script) {
		t = u.Script[step]
		if name, ok := u.Tools[req.API]; ok && t.Tool != "" {
			t.Tool = name
		}
	} else {
		step = -1 // beyond the script, or a side request: a short text
	}
	if t.Tool != "" && t.Input == "" {
		t.Input = "{}"
	}
	model := gjson.GetBytes(body, "model").String()
	if model == "" {
		model = u.Model
	}
	if t.Status > 0 {
		writeJSON(w, t.Status, api.errorBody(t.Status))
		return step
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	e := &emitter{w: w, cut: t.Cut, delay: t.Delay, ctx: r.Context()}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	api.reply(e, model, step, t, stream)
	return step
}

// approxTokens is a rough count for replies' usage: clients only show it.
func approxTokens(body []byte) int { return len(body)/4 + 1 }

func writeJSON(w http.ResponseWriter, status int, doc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, doc)
}

// recorder keeps a copy of what is written back and flushes each write, so SSE events reach
// the client one by one.
type recorder struct {
	w      http.ResponseWriter
	buf    bytes.Buffer
	status int
}

func (r *recorder) Header() http.Header { return r.w.Header() }
func (r *recorder) WriteHeader(s int)   { r.status = s; r.w.WriteHeader(s) }
func (r *recorder) Write(p []byte) (int, error) {
	r.buf.Write(p)
	n, err := r.w.Write(p)
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

// emitter writes SSE events, slowly or cut short when the turn says so.
type emitter struct {
	w     io.Writer
	n     int
	cut   int
	delay time.Duration
	ctx   interface{ Done() <-chan struct{} }
}

// event writes one SSE event; name "" writes a data-only event (Chat Completions).
func (e *emitter) event(name, data string) {
	if e.cut > 0 && e.n >= e.cut {
		// Abort the connection mid-stream, as a dropped upstream does.
		panic(http.ErrAbortHandler)
	}
	if e.delay > 0 {
		select {
		case <-time.After(e.delay):
		case <-e.ctx.Done():
			panic(http.ErrAbortHandler)
		}
	}
	e.n++
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, data)
	} else {
		fmt.Fprintf(e.w, "data: %s\n\n", data)
	}
}
