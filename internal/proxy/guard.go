package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// admit decides whether the proxy serves r at all, before anything is read or forwarded,
// and answers the refusals itself. Only origin-form request targets ("/v1/messages") are
// served: an absolute-form one ("POST http://elsewhere/...") or an authority-form one
// (CONNECT) asks a forward proxy to go elsewhere, which this proxy never does.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.RequestURI, "/") {
		apiError(w, r, http.StatusBadRequest, "ctx-proxy serves paths only (a request line such as POST /v1/messages): it is not a forward proxy")
		return false
	}
	return true
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
// path is Anthropic's, or it sends Anthropic's headers (HEAD /, /v1/models from an
// Anthropic SDK).
func anthropicShaped(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v1/messages") || r.Header.Get("Anthropic-Version") != "" ||
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
