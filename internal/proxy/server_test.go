package proxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// sseEvents are the first events of an Anthropic stream: a tool call begun, not finished.
const sseEvents = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":\"Bash\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"rm\"}}\n\n"

// resetAfter writes events and then resets the TCP connection (RST, not FIN): what a
// provider's load balancer or a dropped network does to a stream.
func resetAfter(w http.ResponseWriter, events string) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, events)
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// TestUpstreamResetAbortsClient: an upstream cut mid-stream reaches the client as a broken
// transfer, never as a response that ended normally with half a tool call; on a conversation
// path and on a path passed through.
func TestUpstreamResetAbortsClient(t *testing.T) {
	up := newUpstream(t)
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) { resetAfter(w, sseEvents) }
	_, px, log := proxyFor(t, up.URL, "", t.TempDir())
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/messages", conversation(userText("hi"))},
		{http.MethodPost, "/v1/messages/count_tokens", conversation(userText("hi"))},
		{http.MethodGet, "/v1/models", ""},
	} {
		req, _ := http.NewRequest(c.method, px.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s %s: the stream cut by the upstream ended normally for the client (%d bytes)", c.method, c.path, len(got))
		} else if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Logf("%s %s: client read error %v", c.method, c.path, err)
		}
		if !strings.HasPrefix(sseEvents, string(got)) {
			t.Errorf("%s %s: the client got bytes the upstream never sent: %q", c.method, c.path, got)
		}
	}
	// The proxy still serves.
	up.sse = nil
	if resp, _ := post(t, px.URL+"/v1/messages", conversation(userText("again")), nil); resp.StatusCode != 200 {
		t.Errorf("after the resets: status %d", resp.StatusCode)
	}
	// The conversation request's log line says its answer was cut.
	recs := waitRecords(t, log, 2)
	if recs[0].Status != 200 || !strings.HasPrefix(recs[0].Error, "answer cut: upstream: ") || recs[1].Error != "" {
		t.Errorf("log lines: %+v", recs)
	}
}

// waitRecords waits for the log to hold n JSON lines and returns them (the stats lines,
// which proxyFor writes to the same buffer, left out).
func waitRecords(t testing.TB, log *syncBuffer, n int) []Record {
	t.Helper()
	var recs []Record
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		recs = recs[:0]
		for _, line := range strings.Split(log.String(), "\n") {
			var rec Record
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil {
				recs = append(recs, rec)
			}
		}
		if len(recs) >= n {
			return recs
		}
	}
	t.Fatalf("the log holds %d records, want %d: %s", len(recs), n, log.String())
	return nil
}

// rawRequest sends text as it is on a new connection to the server at url and reads the
// answer: for request lines and headers a Go client would not send.
func rawRequest(t testing.TB, url, text string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", strings.SplitN(text, "\r\n", 2)[0], err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestRequestTargetSSRF: only origin-form request targets ("/path") are served; an
// absolute-form or authority-form target never makes the proxy send anywhere but the
// upstream, and the user:password of a configured upstream is never sent as Basic auth.
func TestRequestTargetSSRF(t *testing.T) {
	up := newUpstream(t)
	other := newUpstream(t) // where an attacker would like the request (and its key) to go
	otherHost := strings.TrimPrefix(other.URL, "http://")
	upHost := strings.TrimPrefix(up.URL, "http://")
	_, px, _ := proxyFor(t, "http://user:secret@"+upHost, "", t.TempDir())
	body := conversation(userText("hi"))
	for _, target := range []string{
		"http:@" + otherHost + "/v1/messages",
		"http://" + otherHost + "/v1/messages",
		"http://127.0.0.1@" + otherHost + "/v1/messages",
		otherHost,
	} {
		method := http.MethodPost
		if target == otherHost {
			method = "CONNECT"
		}
		resp, out := rawRequest(t, px.URL, method+" "+target+" HTTP/1.1\r\nHost: "+strings.TrimPrefix(px.URL, "http://")+
			"\r\nx-api-key: sk-ant-victim\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\nConnection: close\r\n\r\n"+body)
		if resp.StatusCode != http.StatusBadRequest || gjson.Get(out, "error.type").String() != "invalid_request_error" {
			t.Errorf("%s %s: status %d, want 400 in the Messages API's error shape: %s", method, target, resp.StatusCode, out)
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("%d requests reached another host: %+v", n, other.requests())
	}
	// OPTIONS * is net/http's to answer (200, empty); it goes nowhere.
	rawRequest(t, px.URL, "OPTIONS * HTTP/1.1\r\nHost: "+strings.TrimPrefix(px.URL, "http://")+"\r\nConnection: close\r\n\r\n")
	if n := len(up.requests()) + len(other.requests()); n != 0 {
		t.Errorf("%d requests forwarded", n)
	}
	// Origin-form paths that look like hosts stay paths on the upstream.
	for _, path := range []string{"//" + otherHost + "/v1/messages", "/@" + otherHost + "/v1/messages"} {
		rawRequest(t, px.URL, "POST "+path+" HTTP/1.1\r\nHost: "+strings.TrimPrefix(px.URL, "http://")+
			"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
		if got := up.last().URI; got != path {
			t.Errorf("%s reached the upstream as %s", path, got)
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("%d requests reached another host", n)
	}
	// The upstream's user:password is not sent; the client's own credentials are.
	post(t, px.URL+"/v1/messages?beta=true", body, map[string]string{"x-api-key": "sk-ant-own"})
	got := up.last()
	if a := got.Header.Get("Authorization"); a != "" {
		t.Errorf("the upstream's userinfo went out as %q", a)
	}
	if got.URI != "/v1/messages?beta=true" || got.Header.Get("X-Api-Key") != "sk-ant-own" {
		t.Errorf("forwarded as %s with key %q", got.URI, got.Header.Get("X-Api-Key"))
	}
}

// TestHostOriginToken: DNS rebinding (a Host the proxy is not), a browser's cross-origin
// request (any Origin header) and, with a token set, a request without it are refused in
// the provider's error shape before anything is read, forwarded, piped or kept.
func TestHostOriginToken(t *testing.T) {
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "", t.TempDir())
	addr := strings.TrimPrefix(px.URL, "http://")
	get := func(host, path string, header ...string) (*http.Response, string) {
		req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
		for _, h := range header {
			req += h + "\r\n"
		}
		return rawRequest(t, px.URL, req+"Connection: close\r\n\r\n")
	}
	for _, host := range []string{"attacker.example", "attacker.example:" + strings.Split(addr, ":")[1], "localhost.attacker.example", "127.0.0.1.nip.io", "10.0.0.1"} {
		if resp, out := get(host, "/ctxkit/status"); resp.StatusCode != http.StatusForbidden || strings.Contains(out, "conversations") {
			t.Errorf("Host %s: status %d: %s", host, resp.StatusCode, out)
		}
		if resp, _ := get(host, "/v1/models", "x-api-key: sk-ant-victim"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s: /v1/models status %d", host, resp.StatusCode)
		}
	}
	for _, host := range []string{addr, "localhost", "localhost:8377", "LOCALHOST.:1", "127.0.0.1", "[::1]:8377", "[::1]"} {
		if resp, out := get(host, "/ctxkit/status"); resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: status %d: %s", host, resp.StatusCode, out)
		}
	}
	s.AllowHosts = []string{"proxy.internal"}
	if resp, _ := get("proxy.internal:8377", "/ctxkit/status"); resp.StatusCode != http.StatusOK {
		t.Errorf("--allow-host proxy.internal: status %d", resp.StatusCode)
	}

	// A page in a browser posting text/plain (no preflight) to the proxy.
	body := conversation(userText("written by a web page"))
	for _, origin := range []string{"https://evil.example", "null", "http://127.0.0.1:8377"} {
		req, _ := http.NewRequest(http.MethodPost, px.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || gjson.GetBytes(out, "error.type").String() != "permission_error" {
			t.Errorf("Origin %s: status %d: %s", origin, resp.StatusCode, out)
		}
	}
	if n := len(up.requests()); n != 0 || log.Len() != 0 || len(s.State.All()) != 0 {
		t.Fatalf("refused requests reached the upstream (%d), the log (%q) or the state (%d)", n, log.String(), len(s.State.All()))
	}
	s.AllowOrigins = []string{"https://app.example"}
	req, _ := http.NewRequest(http.MethodPost, px.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Origin", "https://app.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("--allow-origin https://app.example: %v %v", resp, err)
	}

	// With a token: in a header or as the path's first segments, stripped either way.
	const token = "tok_0123456789abcdefABCDEF"
	s.AuthToken = token
	n := len(up.requests())
	for _, c := range []struct {
		path   string
		header map[string]string
		want   int
	}{
		{"/v1/messages", nil, http.StatusUnauthorized},
		{"/v1/messages", map[string]string{"X-Ctxkit-Token": "tok_0123456789abcdefABCDEx"}, http.StatusUnauthorized},
		{"/v1/messages", map[string]string{"X-Ctxkit-Token": token[:len(token)-1]}, http.StatusUnauthorized},
		{"/t/tok_0123456789abcdefABCDEx/v1/messages", nil, http.StatusUnauthorized},
		{"/t//v1/messages", nil, http.StatusUnauthorized},
		{"/v1/messages?beta=true", map[string]string{"X-Ctxkit-Token": token}, http.StatusOK},
		{"/t/" + token + "/v1/messages?beta=true", nil, http.StatusOK},
	} {
		resp, out := postStatus(t, px.URL+c.path, body, c.header)
		if resp.StatusCode != c.want {
			t.Errorf("%s %v: status %d, want %d: %s", c.path, c.header, resp.StatusCode, c.want, out)
		}
		if c.want == http.StatusUnauthorized && gjson.Get(out, "error.type").String() != "authentication_error" {
			t.Errorf("%s: refusal %s", c.path, out)
		}
	}
	reqs := up.requests()[n:]
	if len(reqs) != 2 {
		t.Fatalf("%d requests reached the upstream, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.URI != "/v1/messages?beta=true" || r.Header.Get("X-Ctxkit-Token") != "" {
			t.Errorf("forwarded as %s, token header %q", r.URI, r.Header.Get("X-Ctxkit-Token"))
		}
	}
	// A base URL of /t/TOKEN: Claude Code's HEAD of the base URL itself is HEAD /.
	for _, path := range []string{"/t/" + token, "/t/" + token + "/"} {
		rawRequest(t, px.URL, "HEAD "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		if got := up.last(); got.Method != http.MethodHead || got.URI != "/" {
			t.Errorf("HEAD %s went out as %s %s", path, got.Method, got.URI)
		}
	}
	if resp, out := get(addr, "/t/"+token+"/ctxkit/status"); resp.StatusCode != 200 || !strings.Contains(out, `"conversations"`) {
		t.Errorf("status page with the token in the path: %d %s", resp.StatusCode, out)
	}
	if resp, _ := get(addr, "/ctxkit/status"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status page without the token: %d", resp.StatusCode)
	}
	waitRecords(t, log, 3)
	if strings.Contains(log.String(), token) || strings.Contains(log.String(), "/t/") {
		t.Errorf("the token reached the log: %s", log.String())
	}
}

// postStatus posts body to url and returns the response whatever its status.
func postStatus(t testing.TB, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	resp, out := post(t, url, body, header)
	return resp, string(out)
}

// TestHostAllowed: which Host headers name the proxy, by where it listens.
func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		listen, host string
		want         bool
	}{
		{"127.0.0.1", "127.0.0.1:8377", true},
		{"127.0.0.1", "127.0.0.2", true},
		{"127.0.0.1", "localhost:1", true},
		{"127.0.0.1", "[::1]:8377", true},
		{"127.0.0.1", "", true},
		{"127.0.0.1", "10.0.0.5:8377", false},
		{"127.0.0.1", "devbox:8377", false},
		{"127.0.0.1", "localhost.evil.example", false},
		{"localhost", "localhost", true},
		{"0.0.0.0", "10.0.0.5:8377", true},
		{"0.0.0.0", "0.0.0.0:8377", true},
		{"::", "[fe80::1]:8377", true},
		{"0.0.0.0", "devbox:8377", false},
		{"devbox", "DEVBOX:8377", true},
		{"devbox", "evil.example:8377", false},
	} {
		s := &Server{Listen: c.listen}
		if got := s.hostAllowed(c.host); got != c.want {
			t.Errorf("listening on %q, Host %q: %v, want %v", c.listen, c.host, got, c.want)
		}
	}
}

// TestStatusFlagToken: --status sends the token; without it, it says the proxy needs one.
func TestStatusFlagToken(t *testing.T) {
	up := newUpstream(t)
	s, px, _ := proxyFor(t, up.URL, "", t.TempDir())
	s.AuthToken = "tok_0123456789abcdef"
	addr := strings.TrimPrefix(px.URL, "http://")
	getenv := func(string) string { return "" }
	var stdout, stderr strings.Builder
	if code := Main([]string{"--status", "--listen", addr, "--auth-token", s.AuthToken}, nil, &stdout, &stderr, getenv); code != 0 || !strings.Contains(stdout.String(), `"conversations"`) {
		t.Errorf("with the token: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := Main([]string{"--status", "--listen", addr}, nil, &stdout, &stderr, getenv); code != 4 ||
		!strings.Contains(stderr.String(), "needs its token") || stdout.Len() != 0 {
		t.Errorf("without: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
}

// chunked is a body of n bytes of JSON-ish filler whose length the client does not
// declare: sent with Transfer-Encoding: chunked.
type chunked struct{ n int }

func (c *chunked) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n)
	for i := range p[:k] {
		p[i] = ' '
	}
	c.n -= k
	return k, nil
}

// TestMaxBody: a body over MaxBody is answered 413 in the provider's error shape, whether
// its Content-Length says so up front or it runs over while it is read, on conversation
// paths and paths passed through; the upstream never gets it whole.
func TestMaxBody(t *testing.T) {
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "", t.TempDir())
	s.MaxBody = 4096
	small := conversation(userText("hi"))
	big := conversation(userText(strings.Repeat("x", 5000)))
	for _, c := range []struct {
		path, kind string
		body       io.Reader
		length     int64
		want       int
	}{
		{"/v1/messages", "request_too_large", strings.NewReader(big), int64(len(big)), 413},
		{"/v1/messages", "request_too_large", &chunked{5000}, -1, 413},
		{"/v1/chat/completions", "invalid_request_error", strings.NewReader(big), int64(len(big)), 413},
		{"/v1/responses", "invalid_request_error", &chunked{1 << 20}, -1, 413},
		{"/v1/messages/count_tokens", "request_too_large", strings.NewReader(big), int64(len(big)), 413},
		{"/v1/messages/count_tokens", "request_too_large", &chunked{1 << 20}, -1, 413},
		{"/v1/messages", "", strings.NewReader(small), int64(len(small)), 200},
		{"/v1/messages", "", io.MultiReader(strings.NewReader(small), &chunked{4096 - len(small)}), -1, 200},
	} {
		req, _ := http.NewRequest(http.MethodPost, px.URL+c.path, c.body)
		req.ContentLength = c.length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s (length %d): status %d, want %d: %.200s", c.path, c.length, resp.StatusCode, c.want, out)
			continue
		}
		if c.want != 413 {
			continue
		}
		kind := gjson.GetBytes(out, "error.type").String()
		if gjson.GetBytes(out, "type").String() != "error" && gjson.GetBytes(out, "error.code").String() != "request_too_large" || kind != c.kind {
			t.Errorf("%s: refusal %s", c.path, out)
		}
	}
	for _, r := range up.requests() {
		if len(r.Body) > 4096 {
			t.Errorf("the upstream got a body of %d bytes for %s", len(r.Body), r.URI)
		}
	}
	if recs := waitRecords(t, log, 2); len(recs) != 2 {
		t.Errorf("log: %+v", recs)
	}
}

// TestPassThroughStreams: a body on a path passed through reaches the upstream as it is
// sent, not once it has all been read: the upstream reads the first part while the client
// still holds the rest back.
func TestPassThroughStreams(t *testing.T) {
	got := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1024)
		io.ReadFull(r.Body, buf)
		once.Do(func() { close(got) })
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n+1024)
	}))
	defer up.Close()
	_, px, _ := proxyFor(t, up.URL, "", t.TempDir())
	pr, pw := io.Pipe()
	go func() {
		pw.Write(make([]byte, 1<<20))
		select {
		case <-got:
		case <-time.After(20 * time.Second):
		}
		pw.Write(make([]byte, 1<<20))
		pw.Close()
	}()
	resp, err := http.Post(px.URL+"/v1/files", "application/octet-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	select {
	case <-got:
	default:
		t.Fatal("the upstream got nothing before the whole body was sent")
	}
	if string(out) != fmt.Sprint(2<<20) {
		t.Errorf("the upstream read %s bytes, want %d", out, 2<<20)
	}
}
