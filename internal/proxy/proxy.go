// Package proxy owns ctx-proxy's HTTP side: which paths carry a conversation, forwarding a
// request to the provider with every header the client sent, and streaming the answer back
// unchanged, flushed as it arrives. What happens to a conversation's body on the way is
// rewrite.go's job; the memory of each conversation is package convstate's.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Default upstreams: the providers' public APIs.
const (
	AnthropicAPI = "https://api.anthropic.com"
	OpenAIAPI    = "https://api.openai.com"
)

// Server is the proxy. Fill its fields, then serve it with net/http.
type Server struct {
	// Upstream, when set, receives every request; else Anthropic paths go to Anthropic
	// and the rest to OpenAI.
	Upstream, Anthropic, OpenAI string
	// Pipe is what each conversation's body goes through; nil forwards bodies as they are.
	Pipe    *replay.Pipeline
	Timeout time.Duration
	// Env is set for every stage (the CTX_ variables of the shared flags); Getenv reads
	// the rest.
	Env    map[string]string
	Getenv func(string) string
	// State remembers conversations between requests; nil: each request stands alone.
	State *convstate.Dir
	// Counter gives the token counter for a format and model.
	Counter func(transcript.Format, string) (tokens.Counter, error)
	// Store, when set, is the offload store the stages write: they leave its syncing to
	// the proxy (store.SyncEnv), which makes what a request wrote durable once the
	// response has gone back, so that no request waits for the disk.
	Store string
	// Summarizer, when set, has ctx-summarize write with the upstream's model; nil keeps
	// the local summarizer.
	Summarizer *UpstreamSummarizer
	// TempDir holds each request's stats file.
	TempDir string
	// Log receives one JSON line per conversation request; Stats a short line. Both are
	// redacted with Redact (nil: --no-redact).
	Log, Stats io.Writer
	Redact     *redact.Redactor
	Client     *http.Client
	Now        func() time.Time

	// Listen is the host the proxy was asked to listen on (--listen): a Host header naming
	// it is this proxy's, as are localhost, 127.0.0.1 and [::1], and AllowHosts.
	Listen     string
	AllowHosts []string
	// AllowOrigins are the browser origins served; any other request carrying an Origin
	// header is refused.
	AllowOrigins []string
	// AuthToken, when set, must come with every request (guard.go).
	AuthToken string
	// ReadTimeout bounds the reading of a request: its headers, and its body plus a second
	// per MiB it declares (0: DefaultReadTimeout). IdleTimeout closes a connection idle
	// between requests (0: DefaultIdleTimeout). WriteTimeout cuts an answer the client
	// has taken nothing of for that long (0: DefaultWriteTimeout); a stream that goes on
	// is never cut.
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// MaxBody is the most bytes a request body may have (0: DefaultMaxBody; negative:
	// no limit); a longer one is answered 413.
	MaxBody int64

	logMu  sync.Mutex
	once   sync.Once
	qMu    sync.Mutex
	queue  chan finishing
	done   chan struct{}
	closed bool

	actMu   sync.Mutex
	active  int           // requests in ServeHTTP
	drained chan struct{} // closed when active comes down to 0, for Close

	// Each conversation's last request, for its next one to be read from: the
	// pipeline's output, and the client's body as parsed to check the output by.
	docs    lastOf[*pipeline.Doc]
	clients lastOf[clientMemo]
}

// ErrStopped is the cause the server's base context is cancelled with when it stops with
// requests still running: their answers are cut, and their log lines say so.
var ErrStopped = errors.New("the proxy stopped before the answer ended (--drain)")

func (s *Server) enter() {
	s.actMu.Lock()
	s.active++
	s.actMu.Unlock()
}

func (s *Server) leave() {
	s.actMu.Lock()
	s.active--
	if s.active == 0 && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
	s.actMu.Unlock()
}

// Active is the number of requests being served.
func (s *Server) Active() int {
	s.actMu.Lock()
	defer s.actMu.Unlock()
	return s.active
}

// waitIdle waits until no request is being served.
func (s *Server) waitIdle() {
	s.actMu.Lock()
	if s.active == 0 {
		s.actMu.Unlock()
		return
	}
	if s.drained == nil {
		s.drained = make(chan struct{})
	}
	ch := s.drained
	s.actMu.Unlock()
	<-ch
}

// finishing is a request whose counts and log line are still to do.
type finishing struct {
	rec *Record
	p   *pending
}

// queueLen bounds the requests waiting to be counted and logged; when it is full the
// handler does the work itself, which slows the client rather than growing memory.
const queueLen = 64

// later counts and logs a request once its handler has returned: the next request on the
// same connection is not read before then, so counting in the handler would add to it.
func (s *Server) later(rec *Record, p *pending) {
	s.once.Do(func() {
		s.queue = make(chan finishing, queueLen)
		s.done = make(chan struct{})
		go func() {
			defer close(s.done)
			for f := range s.queue {
				s.finish(f.rec, f.p)
				s.record(f.rec)
			}
		}()
	})
	s.qMu.Lock()
	queued := false
	if !s.closed {
		select {
		case s.queue <- finishing{rec, p}:
			queued = true
		default:
		}
	}
	s.qMu.Unlock()
	if queued {
		return
	}
	s.finish(rec, p)
	s.record(rec)
}

// Close waits for the requests being served to end, then for every request's counts, log
// line and state to be written. Call it once the HTTP server has stopped taking requests
// (and, to stop at once, cancelled their context and closed their connections).
func (s *Server) Close() {
	s.waitIdle()
	s.once.Do(func() {})
	s.qMu.Lock()
	wasClosed := s.closed
	s.closed = true
	if s.queue != nil && !wasClosed {
		close(s.queue)
	}
	s.qMu.Unlock()
	if s.queue != nil {
		<-s.done
	}
}

// hopByHop are the headers that concern one connection, not the request (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// formatOf is the conversation format a path carries, "" for any other path.
func formatOf(path string) transcript.Format {
	switch strings.TrimSuffix(path, "/") {
	case "/v1/messages":
		return transcript.Anthropic
	case "/v1/chat/completions":
		return transcript.OpenAI
	case "/v1/responses":
		return transcript.Responses
	}
	return ""
}

func (s *Server) upstreamFor(path string) string {
	switch {
	case s.Upstream != "":
		return s.Upstream
	case strings.HasPrefix(path, "/v1/messages"):
		return orDefault(s.Anthropic, AnthropicAPI)
	}
	return orDefault(s.OpenAI, OpenAIAPI)
}

func orDefault(v, d string) string {
	if v != "" {
		return v
	}
	return d
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.enter()
	defer s.leave()
	s.deadlines(w, r)
	r, ok := s.admit(w, r)
	if !ok {
		return
	}
	if r.URL.Path == "/ctxkit/status" && r.Method == http.MethodGet {
		s.status(w)
		return
	}
	if r.Method == http.MethodGet && formatOf(r.URL.Path) == transcript.Responses &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// Codex tries a WebSocket first and retries for seconds; a plain refusal makes it
		// fall back to POST at once. The proxy rewrites bodies, so it speaks HTTP only.
		http.Error(w, "ctx-proxy speaks HTTP only: use POST /v1/responses", http.StatusUpgradeRequired)
		return
	}
	if !s.limitBody(w, r) {
		return
	}
	format := formatOf(r.URL.Path)
	if r.Method != http.MethodPost || format == "" {
		// Streamed to the upstream as it comes, never held.
		_, ferr := s.forward(w, r, r.Body, -1)
		abortIf(ferr)
		return
	}
	start := time.Now()
	body, err := readBody(r)
	if err != nil {
		s.bodyError(w, r, err)
		return
	}
	rec, p := s.rewrite(r, format, body)
	rec.AddedMS = float64(time.Since(start).Microseconds()) / 1000
	status, ferr := s.forward(w, r, bytes.NewReader(rec.body), int64(len(rec.body)))
	if rec.Conversation != "" {
		rec.Status = status
		if ferr != nil {
			rec.Error = ferr.Error()
		}
		s.later(rec, p)
	}
	abortIf(ferr)
}

// cutError is an answer that did not reach the client whole. upstream: the upstream's
// side broke (a reset, a stall cut by a deadline, the proxy shutting down), and the client
// must be told; else the client went away.
type cutError struct {
	upstream bool
	err      error
}

func (e *cutError) Error() string {
	if errors.Is(e.err, ErrStopped) {
		return "answer cut: " + e.err.Error()
	}
	if e.upstream {
		return "answer cut: upstream: " + redact.Userinfo(e.err.Error())
	}
	return "answer cut: client: " + e.err.Error()
}

// abortIf breaks the client's connection when the upstream broke off its answer: the
// client sees an unterminated chunked body (or a reset HTTP/2 stream) and can retry,
// where ending the response normally would hand it half an answer as if it were whole.
func abortIf(cut error) {
	var c *cutError
	if errors.As(cut, &c) && c.upstream {
		panic(http.ErrAbortHandler)
	}
}

// forward sends r to the upstream with body and copies the answer back as it comes. It
// returns the upstream's status (0: none came, and the client got a 502 or a refusal, said
// by the error) and, when the answer did not reach the client whole, a *cutError saying
// why.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body io.Reader, length int64) (int, error) {
	target, err := s.targetURL(r)
	if err != nil {
		apiError(w, r, http.StatusBadGateway, "ctx-proxy: upstream: "+redact.Userinfo(err.Error()))
		return 0, nil
	}
	var sending *bodyReader
	if length == 0 || r.Body == http.NoBody && length < 0 {
		body = http.NoBody
	} else if length < 0 {
		sending = &bodyReader{ReadCloser: r.Body}
		body = sending
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), body)
	if err != nil {
		apiError(w, r, http.StatusBadGateway, "ctx-proxy: "+redact.Userinfo(err.Error()))
		return 0, nil
	}
	out.Header = r.Header.Clone()
	dropHopByHop(out.Header)
	if length >= 0 {
		out.ContentLength = length
		out.Header.Del("Content-Length")
	} else {
		out.ContentLength = r.ContentLength
	}
	client := s.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(out)
	if err != nil && sending != nil && sending.failed() != nil {
		// The upstream request failed for the client's body: too large, or cut short.
		s.bodyError(w, r, sending.failed())
		return 0, nil
	}
	if err != nil {
		// The error names the upstream, never a header: no credential is in it.
		if stopped(r) {
			err = ErrStopped
		}
		msg := "upstream: " + redact.Userinfo(err.Error())
		apiError(w, r, http.StatusBadGateway, "ctx-proxy: "+msg)
		return 0, errors.New(msg)
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	dropHopByHop(h)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			// A client that takes nothing for the write timeout is gone; one that reads
			// on gets the time again with every write, however long the stream.
			rc.SetWriteDeadline(time.Now().Add(s.writeTimeout()))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return resp.StatusCode, &cutError{err: werr}
			}
			// Each read is what the upstream has sent so far: an SSE event reaches the
			// client as soon as it reached the proxy.
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return resp.StatusCode, &cutError{err: ferr}
			}
		}
		if err == io.EOF {
			// The end of the body (a chunked one's last chunk) is written once the handler
			// returns: the time again for it, however long the upstream was quiet.
			rc.SetWriteDeadline(time.Now().Add(s.writeTimeout()))
			return resp.StatusCode, nil
		}
		if err != nil {
			if r.Context().Err() != nil && !stopped(r) {
				// The client went away: net/http cancelled its request, and with it the
				// upstream's.
				return resp.StatusCode, &cutError{err: errors.New("went away")}
			}
			if stopped(r) {
				err = ErrStopped
			}
			return resp.StatusCode, &cutError{upstream: true, err: err}
		}
	}
}

// stopped reports whether r was cancelled because the proxy stopped (ErrStopped).
func stopped(r *http.Request) bool {
	return errors.Is(context.Cause(r.Context()), ErrStopped)
}

// defaultClient leaves compression alone (the body goes back as the upstream encoded it)
// and never follows a redirect (the client sees it, as it would without the proxy).
var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func dropHopByHop(h http.Header) {
	for _, c := range h.Values("Connection") {
		for _, f := range strings.Split(c, ",") {
			h.Del(strings.TrimSpace(f))
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
}

// Record is the log line of one conversation request.
type Record struct {
	Time         time.Time `json:"time"`
	Conversation string    `json:"conversation,omitempty"`
	Path         string    `json:"path"`
	Format       string    `json:"format"`
	TokensIn     int       `json:"tokens_in"`
	TokensSent   int       `json:"tokens_sent"`
	Saved        int       `json:"saved"`
	// Tiers are the stages that changed the request, with what each saved.
	Tiers []replay.Firing `json:"tiers"`
	// Extended: the request extended the conversation's last one and was rebuilt on what
	// was sent then. MessagesSent: the messages of the body sent. CachedMessages/CachedBytes:
	// the sent messages identical to last time's (in canonical form).
	Extended       bool    `json:"extended"`
	MessagesSent   int     `json:"messages_sent"`
	CachedMessages int     `json:"cached_messages"`
	CachedBytes    int     `json:"cached_bytes"`
	Markers        int     `json:"cache_control_markers,omitempty"`
	AddedMS        float64 `json:"added_ms"`
	Fallback       string  `json:"fallback,omitempty"`
	// Status is the upstream's answer (0: none came, the client got a 502 or a refusal);
	// Error, when the answer did not reach the client whole: the upstream broke it off
	// (the client's connection was then broken too, so that it sees the cut), or the
	// client went away.
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Warning is what went wrong after the request was sent as decided (the store or the
	// state not written): not a fallback, the body went out as processed.
	Warning string `json:"warning,omitempty"`

	body []byte // what was forwarded
}

func (s *Server) record(rec *Record) {
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	line = s.Redact.Bytes(line) // an error may quote a key (DESIGN §4.11)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.Log != nil {
		s.Log.Write(append(line, '\n'))
	}
	if s.Stats != nil {
		fb := ""
		if rec.Fallback != "" {
			fb = " fallback: " + rec.Fallback
		}
		if rec.Error != "" {
			fb += "; " + rec.Error
		}
		fmt.Fprintf(s.Stats, "ctx-proxy: %s %s %d -> %d tokens, %d cached messages, +%.1f ms%s\n",
			short(rec.Conversation), human.Safe(s.Redact.String(rec.Path)), rec.TokensIn, rec.TokensSent, rec.CachedMessages, rec.AddedMS, human.Safe(s.Redact.String(fb)))
	}
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// statusConv is one conversation's line of /ctxkit/status.
type statusConv struct {
	Conversation string    `json:"conversation"`
	Updated      time.Time `json:"updated"`
	Requests     int       `json:"requests"`
	TokensIn     int       `json:"tokens_in"`
	TokensSent   int       `json:"tokens_sent"`
	Saved        int       `json:"saved"`
	Fallbacks    int       `json:"fallbacks"`
	Messages     int       `json:"messages"`
	// The last request as sent: its model, tokens, the model's effective window and the
	// share of it the request filled (0 when the window is not known).
	Model       string  `json:"model,omitempty"`
	LastSent    int     `json:"last_sent"`
	Window      int     `json:"window,omitempty"`
	Utilization float64 `json:"utilization"`
}

// statusPage is /ctxkit/status: what the server writes and ctx-proxy --status reads.
type statusPage struct {
	Conversations []statusConv `json:"conversations"`
}

// status writes every remembered conversation's totals.
func (s *Server) status(w http.ResponseWriter) {
	out := statusPage{Conversations: []statusConv{}}
	if s.State != nil {
		for _, st := range s.State.All() {
			out.Conversations = append(out.Conversations, statusOf(st))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// withTimeout bounds one pipeline run; 0 leaves it unbounded.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return context.WithCancel(ctx)
}
