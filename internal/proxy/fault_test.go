package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The fault run: faultConvs conversations of faultTurns turns at once, each turn retried
// (as a client does) until it gets an answer, at most faultAttempts times.
const (
	faultConvs    = 20
	faultTurns    = 5
	faultAttempts = 4
)

// fault is what the fake upstream does with one attempt of one turn.
type fault int

const (
	faultNone   fault = iota // a stream of four events
	faultReset               // two events, then a TCP reset
	faultStall               // one event, half a second of nothing, the rest
	fault429                 // 429, rate_limit_error
	fault529                 // 529, overloaded_error
	faultCancel              // a stream the client gives up on after its first event
)

var faultNames = map[fault]string{faultNone: "ok", faultReset: "reset", faultStall: "stall",
	fault429: "429", fault529: "529", faultCancel: "client gone"}

// faultOf is the plan: about half of the first two attempts fail one way or another; the
// later ones are answered, so every conversation gets to its end.
func faultOf(c, k, a int) fault {
	if a >= 2 {
		return faultNone
	}
	switch (c*7 + k*3 + a*5) % 10 {
	case 1:
		return faultReset
	case 3:
		return faultStall
	case 5:
		return fault429
	case 7:
		return fault529
	case 9:
		return faultCancel
	}
	return faultNone
}

// faultKey names one attempt: "c/k/a". The client sends it in faultHeader, which the
// proxy forwards untouched.
const faultHeader = "X-Fault-Request"

// faultUpstream answers by the plan and keeps, per attempt, the body it got and the bytes
// it meant to send (all of them, for the attempts it cut).
type faultUpstream struct {
	mu     sync.Mutex
	bodies map[string][]byte
	meant  map[string][]byte
	status map[string]int
}

func (u *faultUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get(faultHeader)
	var c, k, a int
	fmt.Sscanf(key, "%d/%d/%d", &c, &k, &a)
	f := faultOf(c, k, a)
	var events []string
	for i := 0; i < 4; i++ {
		events = append(events, fmt.Sprintf("event: content_block_delta\ndata: {\"req\":%q,\"n\":%d,\"text\":%q}\n\n", key, i, strings.Repeat("y", 40+c)))
	}
	status, all := http.StatusOK, strings.Join(events, "")
	switch f {
	case fault429:
		status, all = http.StatusTooManyRequests, fmt.Sprintf(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down %s"}}`, key)
	case fault529:
		status, all = 529, fmt.Sprintf(`{"type":"error","error":{"type":"overloaded_error","message":"overloaded %s"}}`, key)
	}
	u.mu.Lock()
	u.bodies[key], u.meant[key], u.status[key] = body, []byte(all), status
	u.mu.Unlock()
	if status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		io.WriteString(w, all)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range events {
		if f == faultReset && i == 2 {
			resetAfter(w, "")
			return
		}
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
		pause := 5 * time.Millisecond
		if f == faultStall && i == 0 {
			pause = 500 * time.Millisecond
		}
		if f == faultCancel {
			pause = 200 * time.Millisecond
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(pause):
		}
	}
}

// attempt is what one client attempt got.
type attempt struct {
	key    string
	fault  fault
	status int
	body   []byte
	err    error
}

// openFDs counts this process's open descriptors (-1 where /proc/self/fd is not).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// settle waits up to 10 s for f() to come back to at most want, and returns what it was.
func settle(want int, f func() int) int {
	now := f()
	for end := time.Now().Add(10 * time.Second); now > want && time.Now().Before(end); now = f() {
		time.Sleep(20 * time.Millisecond)
	}
	return now
}

// TestFaults: 20 conversations of 5 turns at once through the proxy (the default pipeline,
// the server as main builds it) while the upstream resets streams, stalls, answers 429 and
// 529, and clients give up mid-stream, each turn retried as a client would. Each attempt
// gets the upstream's own answer for it, byte for byte, or an error, never another's and
// never a cut stream ended as if whole; every body the upstream got holds only its own
// conversation; every conversation gets to its end; goroutines and descriptors come back
// to what they were. Bounded: 30 s.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the fault run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The network poller's descriptors exist before the count.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	defaultClient.CloseIdleConnections()
	goroutines, fds := runtime.NumGoroutine(), openFDs()

	u := &faultUpstream{bodies: map[string][]byte{}, meant: map[string][]byte{}, status: map[string]int{}}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upSrv := &http.Server{Handler: u}
	go upSrv.Serve(upLn)

	pipe, err := replay.ParsePipe(replay.DefaultPipe, replay.Tools())
	if err != nil {
		t.Fatal(err)
	}
	state, err := convstate.Open(t.TempDir(), convstate.Options{Canonical: canonical}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	s := &Server{
		Upstream: "http://" + upLn.Addr().String(),
		Pipe:     pipe,
		Timeout:  5 * time.Second,
		Env:      map[string]string{"CTX_STORE": t.TempDir(), "CTX_CACHE_DIR": "off"},
		State:    state,
		TempDir:  t.TempDir(),
		Log:      log,
		Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
			return tokens.New(tokens.DefaultTokenizer(string(f)))
		},
	}
	pxLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pxSrv := s.HTTPServer()
	go pxSrv.Serve(pxLn)
	px := "http://" + pxLn.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: faultConvs, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}

	var mu sync.Mutex
	var attempts []attempt
	finished := make([]int, faultConvs) // turns each conversation got an answer for
	var wg sync.WaitGroup
	for c := 0; c < faultConvs; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= faultTurns; k++ {
				answered := false
				for a := 0; a < faultAttempts && !answered && ctx.Err() == nil; a++ {
					at := send(ctx, client, px, c, k, a)
					mu.Lock()
					attempts = append(attempts, at)
					mu.Unlock()
					answered = at.err == nil && at.status == http.StatusOK
				}
				if !answered {
					return
				}
				finished[c] = k
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("the run did not end within 30 s")
	}

	// Stop everything, then the counts must come back.
	tr.CloseIdleConnections()
	pxSrv.Close()
	s.Close()
	upSrv.Close()
	defaultClient.CloseIdleConnections()

	counts := map[string]int{}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, at := range attempts {
		counts[faultNames[at.fault]]++
		meant, reached := u.meant[at.key]
		switch {
		case at.err != nil:
			counts["errors"]++
			if at.fault == faultNone {
				t.Errorf("%s (no fault): %v", at.key, at.err)
			}
		case !reached:
			t.Errorf("%s: status %d, %q, but the upstream never got it", at.key, at.status, at.body)
		case at.status != u.status[at.key] || !bytes.Equal(at.body, meant):
			t.Errorf("%s (%s): got %d %q, the upstream sent %d %q", at.key, faultNames[at.fault], at.status, at.body, u.status[at.key], meant)
		case at.fault == faultReset || at.fault == faultCancel:
			t.Errorf("%s (%s): a cut stream reached the client as a whole answer: %q", at.key, faultNames[at.fault], at.body)
		}
	}
	for key, body := range u.bodies {
		var c int
		fmt.Sscanf(key, "%d/", &c)
		for i, m := range messagesOf(body) {
			if anyOther(convTag.FindAllStringSubmatch(m, -1), fmt.Sprint(c)) {
				t.Errorf("request %s: message %d is another conversation's: %.200s", key, i, m)
			}
		}
	}
	for c, k := range finished {
		if k != faultTurns {
			t.Errorf("conversation %d got to turn %d of %d", c, k, faultTurns)
		}
	}
	// Every attempt that reached the upstream has its log line; each reset says it was cut.
	recs, resets := 0, 0
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		recs++
		if strings.Contains(sc.Text(), `"error":"answer cut: upstream: `) {
			resets++
		}
	}
	if recs != len(u.bodies) || resets != counts["reset"] {
		t.Errorf("%d log lines, %d of them cut by the upstream; the upstream got %d requests, reset %d", recs, resets, len(u.bodies), counts["reset"])
	}

	g := settle(goroutines, runtime.NumGoroutine)
	if g > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the run, %d before:\n%s", g, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if fds >= 0 {
		if n := settle(fds, openFDs); n > fds {
			t.Errorf("%d descriptors open after the run, %d before", n, fds)
		}
	}
	t.Logf("%d attempts: %v; %d conversations of %d turns all answered; goroutines %d → %d, descriptors %d → %d",
		len(attempts), counts, faultConvs, faultTurns, goroutines, runtime.NumGoroutine(), fds, openFDs())
}

// send is one attempt of turn k of conversation c.
func send(ctx context.Context, client *http.Client, px string, c, k, a int) attempt {
	key := fmt.Sprintf("%d/%d/%d", c, k, a)
	at := attempt{key: key, fault: faultOf(c, k, a)}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, px+"/v1/messages", strings.NewReader(loadBody(c, k)))
	if err != nil {
		at.err = err
		return at
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-fault")
	req.Header.Set(faultHeader, key)
	resp, err := client.Do(req)
	if err != nil {
		at.err = err
		return at
	}
	defer resp.Body.Close()
	at.status = resp.StatusCode
	if at.fault == faultCancel {
		// Read the first event, then give up: the client goes away mid-stream.
		br := bufio.NewReader(resp.Body)
		line, err := br.ReadString('\n')
		at.body = []byte(line)
		at.err = errors.New("gave up after the first line")
		if err != nil {
			at.err = err
		}
		return at
	}
	at.body, at.err = io.ReadAll(resp.Body)
	return at
}
