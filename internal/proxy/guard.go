package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// TokenHeader is the header a client may send the proxy's --auth-token in; the other way
// is a base URL ending in /t/TOKEN, for clients that can set only their base URL.
const TokenHeader = "X-Ctxkit-Token"

// admit decides whether the proxy serves r at all, before anything is read, forwarded,
// piped or kept, and answers the refusals itself (in the provider's error shape). It
// returns r as the rest of the proxy sees it: the token taken out of its path and headers.
//
//   - Only origin-form request targets ("/v1/messages") are served: an absolute-form one
//     ("POST http://elsewhere/...") or an authority-form one (CONNECT) asks a forward
//     proxy to go elsewhere, which this proxy never does.
//   - The Host must name this proxy (hostAllowed): a web page whose name an attacker
//     points at 127.0.0.1 (DNS rebinding) sends its own name.
//   - A request with an Origin header comes from a web page; none is served unless
//     --allow-origin names its origin. A page can post text/plain without a preflight,
//     and that would run the pipeline and write the store and the state.
//   - With AuthToken set, the token must come in TokenHeader or as /t/TOKEN.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if !strings.HasPrefix(r.RequestURI, "/") {
		apiError(w, r, http.StatusBadRequest, "ctx-proxy serves paths only (a request line such as POST /v1/messages): it is not a forward proxy")
		return nil, false
	}
	if !s.hostAllowed(r.Host) {
		apiError(w, r, http.StatusForbidden, fmt.Sprintf("ctx-proxy: Host %q does not name this proxy; start it with --allow-host NAME to serve a name that points here", r.Host))
		return nil, false
	}
	if origin, ok := r.Header["Origin"]; ok && !s.originAllowed(origin) {
		apiError(w, r, http.StatusForbidden, "ctx-proxy: requests from web pages (an Origin header) are refused; start it with --allow-origin ORIGIN to serve one")
		return nil, false
	}
	if s.AuthToken != "" {
		var ok bool
		if r, ok = s.authorize(r); !ok {
			apiError(w, r, http.StatusUnauthorized, "ctx-proxy: this proxy needs its token, in the "+TokenHeader+" header or as a base URL ending in /t/TOKEN")
			return nil, false
		}
	}
	r.Header.Del(TokenHeader)
	return r, true
}

// hostAllowed reports whether a Host header names this proxy, whatever its port:
// localhost, a loopback address, the --listen host, an --allow-host name. When the proxy
// listens beyond loopback any IP address is taken too: it is reached at whatever address
// the network gives it (a container's published port, a NAT), and a page can send an IP
// address as its Host only when it was loaded from that address, never through a name an
// attacker controls.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = normalHost(host)
	if host == "" || host == "localhost" {
		return true // no Host (HTTP/1.0): no browser sends that
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || beyondLoopback(s.Listen)) {
		return true
	}
	if s.Listen != "" && host == normalHost(s.Listen) {
		return true
	}
	for _, a := range s.AllowHosts {
		if host == normalHost(a) {
			return true
		}
	}
	return false
}

// normalHost is a host name or address as compared: lower case, without brackets or a
// final dot.
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
}

// beyondLoopback reports whether a listen host ("" and "::" included: every address)
// is reached from other machines.
func beyondLoopback(host string) bool {
	if host == "" {
		return false // unknown (a test's server): the strict rule
	}
	h := normalHost(host)
	if h == "localhost" {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

func (s *Server) originAllowed(origin []string) bool {
	if len(origin) != 1 {
		return false
	}
	o := strings.TrimSuffix(origin[0], "/")
	for _, a := range s.AllowOrigins {
		if strings.EqualFold(o, strings.TrimSuffix(a, "/")) {
			return true
		}
	}
	return false
}

// authorize checks r's token: in TokenHeader, or as the first segments of its path
// (/t/TOKEN/v1/messages), which it returns r without. Tokens are compared in constant
// time (their hashes, so that not even the length leaks).
func (s *Server) authorize(r *http.Request) (*http.Request, bool) {
	if tokenEqual(r.Header.Get(TokenHeader), s.AuthToken) {
		return r, true
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/t/")
	if !ok {
		return r, false
	}
	tok, after, _ := strings.Cut(rest, "/")
	if !tokenEqual(tok, s.AuthToken) {
		return r, false
	}
	path, err := url.PathUnescape("/" + after)
	if err != nil {
		return r, false
	}
	u := *r.URL
	u.Path, u.RawPath = path, "/"+after
	r = r.WithContext(r.Context())
	r.URL = &u
	return r, true
}

func tokenEqual(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// ValidToken says what is wrong with an --auth-token, "" if nothing: it must be long
// enough not to be guessed and fit in a path segment and a header as it is.
func ValidToken(tok string) string {
	if len(tok) < 16 {
		return "must be at least 16 characters (openssl rand -hex 32 makes one)"
	}
	for _, c := range tok {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-._~", c)) {
			return "may hold only letters, digits and - . _ ~"
		}
	}
	return ""
}

// targetURL is where r goes: the upstream for its path, with r's path and query appended
// as they came. It is built from parts, never by parsing a string made from the request,
// so that nothing the client sends can name another host; the upstream's user:password,
// if it has one, is left out (Go's client would send it as Basic auth on every request).
func (s *Server) targetURL(r *http.Request) (*url.URL, error) {
	base, err := url.Parse(s.upstreamFor(r.URL.Path))
	if err != nil {
		return nil, err
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, errors.New("the upstream is not an http or https URL")
	}
	basePath := strings.TrimSuffix(base.Path, "/")
	baseRaw := strings.TrimSuffix(base.EscapedPath(), "/")
	return &url.URL{
		Scheme:   base.Scheme,
		Host:     base.Host,
		Path:     basePath + r.URL.Path,
		RawPath:  baseRaw + r.URL.EscapedPath(),
		RawQuery: r.URL.RawQuery,
	}, nil
}

// anthropicShaped reports whether r's client expects the Messages API's error bodies: its
// path is Anthropic's (after a /t/TOKEN), or it sends Anthropic's headers (HEAD /,
// /v1/models from an Anthropic SDK).
func anthropicShaped(r *http.Request) bool {
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/t/"); ok { // a refused token's path
		_, path, _ = strings.Cut(rest, "/")
		path = "/" + path
	}
	return strings.HasPrefix(path, "/v1/messages") || r.Header.Get("Anthropic-Version") != "" ||
		r.Header.Get("X-Api-Key") != ""
}

// apiError answers r with status and msg in the error body its provider would send, so
// that the client's SDK reads the message and treats the status as it would the
// provider's (a 413 or 400 is not retried, a 502 is).
func apiError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var body any
	if anthropicShaped(r) {
		type inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		body = struct {
			Type  string `json:"type"`
			Error inner  `json:"error"`
		}{"error", inner{anthropicType(status), msg}}
	} else {
		type inner struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		}
		body = struct {
			Error inner `json:"error"`
		}{inner{msg, openAIType(status), nil, openAICode(status)}}
	}
	out, _ := json.Marshal(body)
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(out, '\n'))
}

// anthropicType is the Messages API's error type for status.
func anthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// openAIType and openAICode are the OpenAI API's error type and code for status.
func openAIType(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

func openAICode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusRequestTimeout:
		return "request_timeout"
	case http.StatusBadGateway:
		return "upstream_error"
	}
	return "invalid_request"
}
