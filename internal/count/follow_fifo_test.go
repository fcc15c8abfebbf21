//go:build unix

package count

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// followFIFO runs ctx-count --follow on a new FIFO with args, and returns its path, the
// run's stdout and its exit status, which is -1 when the run has not ended 60 s later (a
// generous bound: the machine may be loaded) and -2 when it wrote to stderr.
func followFIFO(t *testing.T, args ...string) (fifo string, stdout *lockedBuffer, code <-chan int) {
	t.Helper()
	fifo = filepath.Join(t.TempDir(), "live.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	stdout = &lockedBuffer{}
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(append(append([]string{"--follow"}, args...), fifo), nil, stdout, &stderr, nil)
	}()
	out := make(chan int, 1)
	go func() {
		// (no t.Errorf here: this goroutine may outlive the test; an unexpected stderr
		// is an exit status the test cannot want)
		select {
		case c := <-done:
			if stderr.String() != "" {
				c = -2
			}
			out <- c
		case <-time.After(60 * time.Second):
			// (the run is left blocked: it ignored the timeout or the signal)
			out <- -1
		}
	}()
	return fifo, stdout, out
}

// TestFollowFIFO: --follow on a FIFO ends at --follow-timeout, with no writer (open(2)
// waited for one, deaf to the timeout and to every signal but SIGKILL) and with a writer
// that keeps it open (the read waited for the end of the stream); what the writer wrote is
// reported under the FIFO's name.
func TestFollowFIFO(t *testing.T) {
	t.Run("no writer", func(t *testing.T) {
		start := time.Now()
		_, _, code := followFIFO(t, "--follow-timeout", "1s")
		if c := <-code; c != 0 {
			t.Fatalf("exit %d after %s, want 0 after the timeout", c, time.Since(start).Round(time.Millisecond))
		}
	})
	t.Run("an open writer", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		fifo, stdout, code := followFIFO(t, "--follow-timeout", "2s")
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // (waits for the reader)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Write(doc); err != nil {
			t.Fatal(err)
		}
		if c := <-code; c != 0 {
			t.Fatalf("exit %d, want 0 at the timeout with the writer still open", c)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var last struct {
			File   string `json:"file"`
			Tokens int    `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.File != fifo || last.Tokens == 0 {
			t.Errorf("last report %v: file %q, %d tokens; want the FIFO's name and its tokens\n%s", err, last.File, last.Tokens, stdout.String())
		}
	})
}

// TestFollowFIFOSignals: SIGINT and SIGTERM end --follow on a FIFO whose writer keeps it
// open, with exit 0.
func TestFollowFIFOSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo, stdout, code := followFIFO(t)
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// (a record of a session, which reads: the first report is either of the empty
			// spool or of this line, whichever the run sees first)
			w.WriteString(`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello"}}` + "\n")
			// A report drawn: the run is past setting up its signal handling, so the
			// signal goes to it and not to the test.
			for end := time.Now().Add(60 * time.Second); stdout.String() == ""; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatal("no report")
				}
			}
			if err := syscall.Kill(os.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			if c := <-code; c != 0 {
				t.Fatalf("exit %d after %s, want 0", c, sig)
			}
		})
	}
}
