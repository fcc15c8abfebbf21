// Package llm owns ctxkit's calls to a model provider: one request, one text answer, over
// the Anthropic Messages API or the OpenAI Chat Completions API (and every server that
// speaks it: Ollama, llama.cpp, vLLM, LM Studio), and Anthropic's count_tokens, whose
// answers a CountCache keeps so a document is never sent twice. It retries what is worth
// retrying (429, 529, 5xx, timeouts) with backoff, honouring retry-after; it tells a
// prompt that is too long and an answer that was cut off from other failures; and a
// circuit breaker, whose state is a file, stops calling a backend that keeps failing.
//
// The server is the caller's base URL, else the one the provider's own SDKs read from the
// environment (ANTHROPIC_BASE_URL, OPENAI_BASE_URL), else the public API. A connection
// refused on this machine is not retried: nothing listens there, and waiting will not
// start it.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/redact"
)

// anthropicVersion is the Messages API version ctxkit speaks.
const anthropicVersion = "2023-06-01"

// Backends.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

// Client calls one backend.
type Client struct {
	Backend string // Anthropic or OpenAI
	// BaseURL is the server; when empty, the backend's BaseURLVar names it, else the
	// public API: https://api.anthropic.com or https://api.openai.com/v1.
	BaseURL string
	APIKey  string
	// AuthToken, for Anthropic when APIKey is empty, is sent as a bearer token instead
	// (ANTHROPIC_AUTH_TOKEN, as the SDK reads it; a Claude Code login's credential, which
	// ctx-proxy passes on).
	AuthToken string
	Model     string
	// Getenv reads BaseURLVar. nil reads the process's environment, so that a caller
	// that builds a Client without it still honours the variable its user set.
	Getenv func(string) string
	// Timeout bounds one attempt; Retries is how many times a retryable failure is tried
	// again; Backoff is the first wait (doubled each time, at most MaxBackoff) when the
	// server does not say how long to wait.
	Timeout             time.Duration
	Retries             int
	Backoff, MaxBackoff time.Duration
	// MaxWait is the longest retry-after honoured (default 2 minutes): a server that asks
	// for longer (a quota spent for the day) gets no retry, so a filter never sits in a
	// pipeline for an hour.
	MaxWait time.Duration
	HTTP    *http.Client
	// Sleep waits between attempts (tests make it instant); nil sleeps for real,
	// cancellable by the context.
	Sleep func(ctx context.Context, d time.Duration) error
	// Redact, when set, redacts the system prompt and the prompt before they are sent
	// (DESIGN §4.11: a backend may be another provider, or a server of someone else's).
	// Errors are redacted whether it is set or not.
	Redact *redact.Redactor
}

// BaseURLVar is the environment variable that names a backend's server when the caller
// gives none: the one the provider's own SDK reads, so that a gateway or a local server
// set up for it serves ctxkit too. OPENAI_BASE_URL ends in the API's version
// (http://localhost:11434/v1), ANTHROPIC_BASE_URL does not, as for the SDKs.
func BaseURLVar(backend string) string {
	if backend == OpenAI {
		return "OPENAI_BASE_URL"
	}
	return "ANTHROPIC_BASE_URL"
}

// Request is one call: a system prompt, one user message, a cap on the answer.
type Request struct {
	System, Prompt string
	MaxTokens      int
}

// Errors a caller acts on.
var (
	// ErrPromptTooLong: the model's context cannot hold the prompt; send less.
	ErrPromptTooLong = errors.New("the prompt is too long for the model")
	// ErrCutOff: the answer stopped at the token cap; it is incomplete.
	ErrCutOff = errors.New("the answer was cut off at the token limit")
	// ErrRedirect: the server redirected the request to another host (or scheme, or
	// port). The request carries the API key, so it is not followed.
	ErrRedirect = errors.New("redirected to another host; not followed, so the API key stays with the host it is for")
)

// RefusedError is a connection the server's host refused: nothing listens at the
// address. On this machine (Local) that is final: the server is not running, or listens
// elsewhere, and the retries would only make the user wait for the same answer. A remote
// host is tried again, since a server behind it may be restarting.
type RefusedError struct {
	Host  string // host:port, never the URL (which may carry a token)
	Local bool   // a loopback address or localhost
	From  string // the variable the base URL came from, "" when the caller gave it, "default"
	Err   error
}

func (e *RefusedError) Error() string { return fmt.Sprintf("connection to %s refused", e.Host) }

func (e *RefusedError) Unwrap() error { return e.Err }

// Hint tells the user what to do (cli prints it as a hint line).
func (e *RefusedError) Hint() string {
	where := "the base URL given"
	switch e.From {
	case "":
	case "default":
		return fmt.Sprintf("is %s reachable? check the network and any proxy settings", e.Host)
	default:
		where = e.From
	}
	if e.Local {
		return fmt.Sprintf("nothing listens at %s: start the server, or point %s where one runs", e.Host, where)
	}
	return fmt.Sprintf("is the server at %s up? check %s", e.Host, where)
}

// StatusError is an HTTP failure with what the server said.
type StatusError struct {
	Code       int
	Message    string
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message)
}

// retryable reports whether a status is worth another try: rate limits, Anthropic's
// overload (529) and server errors.
func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == 529 || code >= 500
}

// Complete sends the request and returns the answer's text, retrying what is worth it.
func (c *Client) Complete(ctx context.Context, r Request) (string, error) {
	r.System, r.Prompt = c.Redact.String(r.System), c.Redact.String(r.Prompt)
	body, url, headers, err := c.encode(r)
	if err != nil {
		return "", err
	}
	var text string
	err = c.post(ctx, url, headers, body, func(data []byte) (err error) {
		text, err = c.decode(data)
		return err
	})
	if err != nil {
		return "", err
	}
	return text, nil
}

// post sends body to url until an attempt succeeds, a failure is final, or the retries
// are spent. decode reads a 200 answer that is JSON; its error fails the attempt.
func (c *Client) post(ctx context.Context, url string, headers map[string]string, body []byte, decode func([]byte) error) error {
	wait := c.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	var last error
	for attempt := 0; attempt <= c.Retries; attempt++ {
		if attempt > 0 {
			d := wait
			var se *StatusError
			if errors.As(last, &se) && se.RetryAfter > 0 {
				d = se.RetryAfter
				if d > c.maxWait() {
					return fmt.Errorf("the server asks to wait %s before trying again, longer than %s: %w", d.Round(time.Second), c.maxWait(), last)
				}
			} else {
				wait = min(wait*2, c.maxBackoff())
			}
			if err := c.sleep(ctx, d); err != nil {
				return err
			}
		}
		err := c.attempt(ctx, url, headers, body, decode)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		last = err
		var se *StatusError
		var re *RefusedError
		switch {
		case errors.Is(err, ErrPromptTooLong), errors.Is(err, ErrCutOff), errors.Is(err, ErrRedirect):
			return err
		case errors.As(err, &re) && re.Local:
			return err
		case errors.As(err, &se) && !retryable(se.Code):
			return err
		}
	}
	return fmt.Errorf("gave up after %d attempts: %w", c.Retries+1, last)
}

func (c *Client) maxBackoff() time.Duration {
	if c.MaxBackoff > 0 {
		return c.MaxBackoff
	}
	return 30 * time.Second
}

func (c *Client) maxWait() time.Duration {
	if c.MaxWait > 0 {
		return c.MaxWait
	}
	return 2 * time.Minute
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) encode(r Request) ([]byte, string, map[string]string, error) {
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 4096
	}
	if err := c.checkBase(); err != nil {
		return nil, "", nil, err
	}
	switch c.Backend {
	case Anthropic:
		body, err := marshal(map[string]any{
			"model": c.Model, "max_tokens": maxTokens, "system": r.System,
			"messages": []map[string]string{{"role": "user", "content": r.Prompt}},
		})
		return body, c.base() + "/v1/messages", c.anthropicHeaders(), err
	case OpenAI:
		body, err := marshal(map[string]any{
			"model": c.Model, MaxTokensField(c.Model): maxTokens,
			"messages": []map[string]string{{"role": "system", "content": r.System}, {"role": "user", "content": r.Prompt}},
		})
		h := map[string]string{}
		if c.APIKey != "" {
			h["Authorization"] = "Bearer " + c.APIKey
		}
		return body, c.base() + "/chat/completions", h, err
	}
	return nil, "", nil, fmt.Errorf("unknown backend %q (want anthropic or openai)", c.Backend)
}

// MaxTokensField is the member of a Chat Completions request that caps the answer of
// model. OpenAI's reasoning models (o1, o3, o4-mini..., GPT-5 and later) refuse
// max_tokens, which the API replaced with max_completion_tokens; the servers that copy
// the API (Ollama, llama.cpp, vLLM) and the older models all take max_tokens, which some
// of those servers alone know. A router's prefix (openai/gpt-5) is not the family.
func MaxTokensField(model string) string {
	name := strings.ToLower(model)
	name = name[strings.LastIndexByte(name, '/')+1:]
	if n, ok := strings.CutPrefix(name, "gpt-"); ok {
		if v, _ := leadingNumber(n); v >= 5 {
			return "max_completion_tokens"
		}
		return "max_tokens"
	}
	if n, ok := strings.CutPrefix(name, "o"); ok {
		if _, rest := leadingNumber(n); rest != n && (rest == "" || rest[0] == '-') {
			return "max_completion_tokens"
		}
	}
	return "max_tokens"
}

// leadingNumber reads the digits s opens with: their value (-1 when none, or more than a
// version number has) and the rest.
func leadingNumber(s string) (int, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 6 {
		return -1, s[i:]
	}
	v, _ := strconv.Atoi(s[:i])
	return v, s[i:]
}

// base is the server's URL without its trailing slash (see Client.BaseURL).
func (c *Client) base() string {
	base, _ := c.baseFrom()
	return base
}

// Base is the server the client calls: BaseURL, else the backend's BaseURLVar, else the
// public API. It may hold a token; it is for keys (a breaker's file name), not messages.
func (c *Client) Base() string { return c.base() }

// baseFrom is base and where it came from: "" (the caller), a variable's name, or
// "default".
func (c *Client) baseFrom() (string, string) {
	if base := strings.TrimRight(strings.TrimSpace(c.BaseURL), "/"); base != "" {
		return base, ""
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	v := BaseURLVar(c.Backend)
	if base := strings.TrimRight(strings.TrimSpace(getenv(v)), "/"); base != "" {
		return base, v
	}
	return DefaultBaseURL(c.Backend), "default"
}

// DefaultBaseURL is a backend's public API.
func DefaultBaseURL(backend string) string {
	if backend == OpenAI {
		return "https://api.openai.com/v1"
	}
	return "https://api.anthropic.com"
}

// checkBase refuses a base URL that is not http(s)://host before any request: without
// this, a value missing its scheme (localhost:11434) fails in the transport, and that
// failure would be retried as if the network were down. The value is not repeated: it
// may carry a token.
func (c *Client) checkBase() error {
	base, from := c.baseFrom()
	u, err := url.Parse(base)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	what := "the base URL"
	if from != "" {
		what = from
	}
	return fmt.Errorf("%s is not an http:// or https:// URL with a host", what)
}

// hostPort is u's host and port, the port named even where the scheme implies it.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// isLocal reports whether host (a URL's Hostname) is this machine.
func isLocal(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func (c *Client) anthropicHeaders() map[string]string {
	if c.APIKey == "" && c.AuthToken != "" {
		return map[string]string{"Authorization": "Bearer " + c.AuthToken, "anthropic-version": anthropicVersion}
	}
	return map[string]string{"x-api-key": c.APIKey, "anthropic-version": anthropicVersion}
}

// marshal encodes a request body as it is: no HTML escaping of <, > and & (prompts are
// full of them).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

func (c *Client) attempt(ctx context.Context, url string, headers map[string]string, body []byte, decode func([]byte) error) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			_, from := c.baseFrom()
			return fmt.Errorf("request failed: %w", &RefusedError{Host: hostPort(req.URL), Local: isLocal(req.URL.Hostname()), From: from, Err: syscall.ECONNREFUSED})
		}
		return fmt.Errorf("request failed: %w", scrub(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return c.statusError(resp, data)
	}
	if !gjson.ValidBytes(data) {
		return fmt.Errorf("the answer is not JSON (cut off?): %d bytes", len(data))
	}
	return decode(data)
}

// httpClient is c.HTTP (or a default client) that follows redirects only within the
// origin the request was sent to. Go's client drops Authorization on a redirect to
// another domain, but not x-api-key, and keeps both for another port of the same host:
// a key must never reach a host it is not for.
func (c *Client) httpClient() *http.Client {
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
			return fmt.Errorf("%s: %w", req.URL.Host, ErrRedirect)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &hc
}

// scrub keeps a transport error from repeating anything but its kind (no URLs with keys).
// Redact returns an error message or a log line s with the secrets in it replaced: every
// shape redact knows, the keys given, and any long run of key characters (redact's Loose:
// an error message holds no data that looks like one).
func Redact(s string, keys ...string) string {
	return redact.New().WithKeys(keys...).Loose().String(s)
}

func scrub(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("timed out")
		}
		return ue.Unwrap()
	}
	return err
}

func (c *Client) statusError(resp *http.Response, data []byte) error {
	msg := gjson.GetBytes(data, "error.message").String()
	if msg == "" {
		msg = strings.TrimSpace(string(data[:min(len(data), 300)]))
	}
	// Servers echo the key they refused ("Incorrect API key provided: sk-..."); the message
	// goes to stderr and the breaker's file, so it is redacted here, where the key is known.
	msg = c.Redact.WithKeys(c.APIKey, c.AuthToken).Loose().String(msg)
	e := &StatusError{Code: resp.StatusCode, Message: msg, RetryAfter: retryAfter(resp.Header.Get("retry-after"))}
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge {
		code := gjson.GetBytes(data, "error.code").String()
		low := strings.ToLower(msg)
		if code == "context_length_exceeded" || resp.StatusCode == http.StatusRequestEntityTooLarge || tooLong(low) {
			return fmt.Errorf("%w (%s)", ErrPromptTooLong, e)
		}
	}
	return e
}

// tooLong recognises the ways servers say a prompt does not fit: Anthropic ("prompt is too
// long"), OpenAI and vLLM ("maximum context length"), llama.cpp ("exceeds the available
// context size"), others ("context window", "too many tokens").
func tooLong(msg string) bool {
	for _, s := range []string{"prompt is too long", "context length", "maximum context", "context size", "context window", "too many tokens"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryAfter reads a retry-after header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func (c *Client) decode(data []byte) (string, error) {
	switch c.Backend {
	case Anthropic:
		var b strings.Builder
		for _, blk := range gjson.GetBytes(data, "content").Array() {
			if blk.Get("type").String() == "text" {
				b.WriteString(blk.Get("text").String())
			}
		}
		if gjson.GetBytes(data, "stop_reason").String() == "max_tokens" {
			return b.String(), ErrCutOff
		}
		return b.String(), nil
	default:
		choice := gjson.GetBytes(data, "choices.0")
		if !choice.Exists() {
			return "", errors.New("the answer has no choices")
		}
		if choice.Get("finish_reason").String() == "length" {
			return choice.Get("message.content").String(), ErrCutOff
		}
		return choice.Get("message.content").String(), nil
	}
}
