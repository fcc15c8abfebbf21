package proxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
