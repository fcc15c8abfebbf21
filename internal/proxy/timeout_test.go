package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveTest serves s with its own HTTPServer (the timeouts main uses) on loopback.
func serveTest(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return "http://" + ln.Addr().String()
}

// closedBy reads conn to its end and reports whether the server closed it before the
// deadline (an EOF or a reset; a timeout is the connection still open).
func closedBy(conn net.Conn, deadline time.Time) error {
	conn.SetReadDeadline(deadline)
	_, err := io.Copy(io.Discard, conn)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("still open")
	}
	return nil
}

// TestConnectionTimeouts: idle keep-alive connections, connections that send a body
// slowly and ones that send headers slowly are all closed within the timeouts (plus
// slack for a loaded machine), and a legitimate request is answered while they are open;
// a stream slower than the write timeout between its events still arrives whole.
func TestConnectionTimeouts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: holds 650 connections for a few seconds")
	}
	const timeout = time.Second
	const slack = 10 * time.Second
	up := newUpstream(t)
	s, _, _ := proxyFor(t, up.URL, "", t.TempDir())
	s.ReadTimeout, s.IdleTimeout, s.WriteTimeout = timeout, timeout, timeout
	px := serveTest(t, s)
	addr := strings.TrimPrefix(px, "http://")

	// Every connection is watched from the moment it is opened: how long the server
	// kept it, and whether it closed it at all before the deadline.
	type watched struct {
		kind   string
		opened time.Time
		lived  time.Duration
		err    error
	}
	var conns []net.Conn
	var all []*watched
	var wg sync.WaitGroup
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(timeout + slack)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial (after %d connections): %v", len(conns), err)
		}
		conns = append(conns, c)
		return c
	}
	watch := func(c net.Conn, kind string, opened time.Time) {
		w := &watched{kind: kind, opened: opened}
		all = append(all, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.err = closedBy(c, deadline)
			w.lived = time.Since(w.opened)
		}()
	}
	for i := 0; i < 300; i++ { // idle: one request answered, then nothing
		c := dial()
		fmt.Fprintf(c, "GET /ctxkit/status HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		buf := make([]byte, 512)
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		watch(c, "idle", time.Now())
	}
	for i := 0; i < 300; i++ { // a body promised, a few bytes of it sent
		c := dial()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"messages\":[", addr)
		watch(c, "slow body", time.Now())
	}
	for i := 0; i < 50; i++ { // headers never finished
		c := dial()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\n", addr)
		watch(c, "slow headers", time.Now())
	}

	// A legitimate request, meanwhile: a stream whose events come further apart than the
	// write timeout, the request's body and headers long since read.
	var events []string
	for i := 0; i < 4; i++ {
		events = append(events, fmt.Sprintf("event: content_block_delta\ndata: {\"n\":%d}\n\n", i))
	}
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			time.Sleep(timeout * 3 / 2)
		}
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post(px+"/v1/messages", "application/json", strings.NewReader(conversation(userText("hi"))))
	if err != nil {
		t.Fatalf("a legitimate request with %d connections open: %v", len(conns), err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(out) != strings.Join(events, "") {
		t.Errorf("the slow stream: %v, %q", err, out)
	}

	wg.Wait()
	open := map[string]int{}
	longest := map[string]time.Duration{}
	for _, w := range all {
		if w.err != nil {
			open[w.kind]++
		} else {
			longest[w.kind] = max(longest[w.kind], w.lived)
		}
	}
	if len(open) > 0 {
		t.Fatalf("connections still open %v after the first was opened (timeouts %v): %v", timeout+slack, timeout, open)
	}
	t.Logf("%d connections closed; the longest kept, with timeouts of %v: %v", len(all), timeout, longest)
}

// TestWriteTimeoutCutsStuckClient: a client that stops reading a stream is cut once the
// write timeout passes with no progress; the handler returns and logs the cut.
func TestWriteTimeoutCutsStuckClient(t *testing.T) {
	up := newUpstream(t)
	stop := make(chan struct{})
	defer close(stop)
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := "data: " + strings.Repeat("x", 64<<10) + "\n\n"
		for i := 0; i < 2000; i++ { // 128 MB at most: far more than the socket buffers hold
			if _, err := io.WriteString(w, ev); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			default:
			}
		}
	}
	s, _, log := proxyFor(t, up.URL, "", t.TempDir())
	s.WriteTimeout = time.Second
	px := serveTest(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(px, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := conversation(userText("hi"))
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	buf := make([]byte, 4096)
	conn.Read(buf) // the headers and the stream's start, then nothing more is read
	recs := waitRecords(t, log, 1)
	if !strings.HasPrefix(recs[0].Error, "answer cut: client: ") {
		t.Errorf("log line: %+v", recs[0])
	}
}
