package ctxkit_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proxyProcess is ctx-proxy running as a process of its own (this test binary under the
// name testscript gives it in $PATH), for what only a process shows: signals, exit
// status, its peak memory, the temporary directory it leaves.
type proxyProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	tmp    string // its $TMPDIR
	done   chan struct{}
	err    error
}

var listeningRe = regexp.MustCompile(`ctx-proxy: listening on http://(\S+)`)

// startProxyProcess runs ctx-proxy on a free loopback port with args, and waits until it
// listens. It is killed when the test ends, if it has not exited by then.
func startProxyProcess(t *testing.T, args ...string) *proxyProcess {
	t.Helper()
	return startProxyShell(t, "", args...)
}

// startProxyShell is startProxyProcess with ctx-proxy started by sh after the shell
// command pre (a ulimit).
func startProxyShell(t *testing.T, pre string, args ...string) *proxyProcess {
	t.Helper()
	if _, err := exec.LookPath("ctx-proxy"); err != nil {
		t.Skip("ctx-proxy is not in $PATH (testscript puts it there): ", err)
	}
	p := &proxyProcess{stderr: &lockedBuffer{}, tmp: t.TempDir(), done: make(chan struct{})}
	args = append([]string{"--listen", "127.0.0.1:0"}, args...)
	if pre != "" {
		p.cmd = exec.Command("sh", append([]string{"-c", pre + ` && exec ctx-proxy "$@"`, "sh"}, args...)...)
	} else {
		p.cmd = exec.Command("ctx-proxy", args...)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CTX_") && !strings.HasPrefix(kv, "TMPDIR=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "TMPDIR="+p.tmp, "CTX_CACHE_DIR=off", "XDG_STATE_HOME="+t.TempDir())
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if m := listeningRe.FindSubmatch(p.stderr.Bytes()); m != nil {
			p.addr = string(m[1])
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("ctx-proxy exited: %v\n%s", p.err, p.stderr.Bytes())
		default:
		}
	}
	t.Fatalf("ctx-proxy did not listen within 30 s:\n%s", p.stderr.Bytes())
	return nil
}

// wait waits up to d for the process to exit and returns its exit status.
func (p *proxyProcess) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("ctx-proxy still running %v after it was asked to stop:\n%s", d, p.stderr.Bytes())
	}
	return p.cmd.ProcessState.ExitCode()
}

// vmHWM is a process's peak resident set (Linux's VmHWM), in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// TestProxyHugeBody: a 1 GB body is answered 413 with the proxy's peak memory under
// 100 MB, declared by its Content-Length (refused before any of it is read) or not
// (chunked: refused at --max-body, 64 MiB by default, as it is read).
func TestProxyHugeBody(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	if testing.Short() {
		t.Skip("-short: sends up to 2 GB over loopback")
	}
	var mu sync.Mutex
	var upBytes int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		upBytes += n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message"}`)
	}))
	defer up.Close()
	p := startProxyProcess(t, "--upstream", up.URL, "--store", t.TempDir(), "--pipe", "none")
	const size = 1 << 30
	for _, c := range []struct{ name, path, header string }{
		{"Content-Length", "/v1/messages", "Content-Length: " + strconv.Itoa(size)},
		{"chunked", "/v1/messages", "Transfer-Encoding: chunked"},
		{"chunked, passed through", "/v1/messages/count_tokens", "Transfer-Encoding: chunked"},
	} {
		conn, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(120 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nx-api-key: k\r\n%s\r\n\r\n", c.path, p.addr, c.header)
		sent := make(chan int64, 1)
		go func() {
			chunk := bytes.Repeat([]byte(" "), 1<<20)
			var n int64
			for n < size {
				var err error
				if strings.HasPrefix(c.header, "Transfer") {
					_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
				} else {
					_, err = conn.Write(chunk)
				}
				if err != nil {
					break
				}
				n += int64(len(chunk))
			}
			sent <- n
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		n := <-sent
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"request_too_large"`) {
			t.Errorf("%s: status %d: %s", c.name, resp.StatusCode, body)
		}
		t.Logf("%s: %d MB sent before the proxy answered %d", c.name, n>>20, resp.StatusCode)
	}
	hwm := vmHWM(t, p.cmd.Process.Pid)
	mu.Lock()
	t.Logf("ctx-proxy peak RSS %d MB; the upstream got %d MB", hwm>>20, upBytes>>20)
	mu.Unlock()
	if hwm > 100<<20 {
		t.Errorf("ctx-proxy's peak RSS is %d MB, over 100 MB", hwm>>20)
	}
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit %d:\n%s", code, p.stderr.Bytes())
	}
}

// TestProxyFdLimit: with its descriptors limited to 256, ctx-proxy is held open by 300
// idle keep-alive connections and 300 that send a body slowly; the timeouts close them,
// and a legitimate request sent after all of them is answered.
func TestProxyFdLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -n on Linux")
	}
	if testing.Short() {
		t.Skip("-short: holds 600 connections for a few seconds")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"type":"message"}`)
	}))
	defer up.Close()
	p := startProxyShell(t, "ulimit -n 256", "--upstream", up.URL, "--store", t.TempDir(), "--pipe", "none",
		"--idle-timeout", "1s", "--read-timeout", "1s")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 600; i++ {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		if i < 300 { // a request, and the connection kept open after its answer
			fmt.Fprintf(c, "GET /ctxkit/status HTTP/1.1\r\nHost: %s\r\n\r\n", p.addr)
		} else { // a body promised, and a few bytes of it
			fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n{", p.addr)
		}
	}
	start := time.Now()
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post("http://"+p.addr+"/v1/messages", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatalf("the legitimate request: %v\n%s", err, p.stderr.Bytes())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the legitimate request: status %d", resp.StatusCode)
	}
	t.Logf("answered %v after it was sent, behind 600 connections, descriptors limited to 256", time.Since(start).Round(100*time.Millisecond))
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit %d:\n%s", code, p.stderr.Bytes())
	}
}

// TestProxySIGTERM: SIGTERM (kill, systemd, docker stop) mid-stream drains like SIGINT.
// 50 streams are in flight through the binary: those that end within --drain end whole,
// the others are cut with an error the client sees (never ended as if complete); every
// request has its log line, the exit status is 0, and the temporary directory is gone.
func TestProxySIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM")
	}
	if testing.Short() {
		t.Skip("-short: 50 streams for a few seconds")
	}
	const streams = 50
	var arrived sync.WaitGroup
	arrived.Add(streams)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i, _ := strconv.Atoi(r.Header.Get("X-Stream"))
		arrived.Done()
		w.Header().Set("Content-Type", "text/event-stream")
		// Even streams end about a second after all have arrived, odd ones would take a
		// minute: past --drain.
		events := 10
		if i%2 == 1 {
			events = 600
		}
		for k := 0; k < events; k++ {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"stream\":%d,\"n\":%d}\n\n", i, k)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		fmt.Fprintf(w, "event: message_stop\ndata: {\"stream\":%d}\n\n", i)
	}))
	defer up.Close()
	dir := t.TempDir()
	p := startProxyProcess(t, "--upstream", up.URL, "--store", dir+"/store", "--log", dir+"/log.jsonl", "--pipe", "none", "--drain", "3s")

	type outcome struct {
		body []byte
		err  error
	}
	results := make([]outcome, streams)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{}, Timeout: 120 * time.Second}
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"stream %d"}]}`, i)
			req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Stream", strconv.Itoa(i))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				results[i] = outcome{err: err}
				arrived.Done() // it will never reach the upstream
				return
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] = outcome{out, err}
		}()
	}
	waited := make(chan struct{})
	go func() { arrived.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		t.Fatal("the 50 requests did not all reach the upstream in 60 s")
	}
	time.Sleep(300 * time.Millisecond) // a few events into every stream
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 60*time.Second)
	wg.Wait()

	complete, cut, silent := 0, 0, 0
	for i, r := range results {
		switch whole := bytes.HasSuffix(r.body, []byte(fmt.Sprintf("event: message_stop\ndata: {\"stream\":%d}\n\n", i))); {
		case r.err == nil && whole:
			complete++
		case r.err != nil:
			cut++
		default:
			silent++
			t.Errorf("stream %d ended normally without its end (%d bytes): a silent truncation", i, len(r.body))
		}
	}
	t.Logf("SIGTERM with %d streams in flight: %d complete, %d cut with an error, %d silently truncated; exit %d",
		streams, complete, cut, silent, code)
	if code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0:\n%s", code, p.stderr.Bytes())
	}
	if complete == 0 {
		t.Errorf("no stream completed within --drain 3s")
	}
	log, err := os.ReadFile(dir + "/log.jsonl")
	if err != nil {
		t.Fatalf("no log: %v\n%s", err, p.stderr.Bytes())
	}
	lines := strings.Count(string(log), "\n")
	cutLines := strings.Count(string(log), `"error":"answer cut`)
	if lines != streams || cutLines != cut {
		t.Errorf("%d log lines, %d saying the answer was cut; want %d and %d", lines, cutLines, streams, cut)
	}
	if left, _ := filepath.Glob(filepath.Join(p.tmp, "ctx-proxy-*")); len(left) != 0 {
		t.Errorf("temporary directory left behind: %v", left)
	}
	if cut > 0 && !strings.Contains(string(p.stderr.Bytes()), "cut") {
		t.Errorf("stderr does not say requests were cut:\n%s", p.stderr.Bytes())
	}
}
