package proxy

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
