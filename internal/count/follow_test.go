package count

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a stdout written by the run while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFollow: --follow writes one JSON report when it starts and one more each time the
// file grows by whole lines; a partial last line (an agent halfway through writing it) is
// waited for, neither an error nor a report; --follow-timeout ends it with exit 0.
func TestFollow(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(doc), "\n")
	half := len(lines) / 2
	path := filepath.Join(t.TempDir(), "live.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:half], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- Main([]string{"--follow", "--follow-timeout", "6s", path}, nil, &stdout, &stderr, nil)
	}()
	reports := func() int { return strings.Count(stdout.String(), "\n") }
	waitFor := func(n int) {
		t.Helper()
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if reports() >= n {
				return
			}
		}
		t.Fatalf("%d reports, want %d; stderr %q", reports(), n, stderr.String())
	}
	appendTo := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(1)

	next := lines[half]
	appendTo(next[:len(next)/2])
	time.Sleep(3 * pollEvery)
	if n := reports(); n != 1 || stderr.String() != "" {
		t.Fatalf("after a partial line: %d reports, stderr %q", n, stderr.String())
	}
	appendTo(next[len(next)/2:] + strings.Join(lines[half+1:], ""))
	waitFor(2)

	if code := <-done; code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if stderr.String() != "" {
		t.Errorf("stderr %q", stderr.String())
	}
	var first, second struct{ Tokens int }
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(got) != 2 {
		t.Fatalf("%d reports, want 2", len(got))
	}
	if json.Unmarshal([]byte(got[0]), &first) != nil || json.Unmarshal([]byte(got[1]), &second) != nil || second.Tokens <= first.Tokens {
		t.Errorf("tokens %d then %d: the second report should count the lines added", first.Tokens, second.Tokens)
	}
}

// TestFollowTerminal: on a terminal each drawing clears the screen first, so the picture
// replaces the one before.
func TestFollowTerminal(t *testing.T) {
	var out ttyBuffer
	var errs bytes.Buffer
	path := filepath.Join("..", "..", "testdata", "session.jsonl")
	if code := Main([]string{"--follow", "--follow-timeout", "700ms", path}, nil, &out, &errs, func(k string) string {
		if k == "COLUMNS" {
			return "80"
		}
		return ""
	}); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if !strings.HasPrefix(out.String(), clearScreen) || strings.Count(out.String(), clearScreen) != 1 || strings.HasPrefix(out.String()[len(clearScreen):], "{") {
		t.Errorf("want one cleared screen and a picture, got %.120q", out.String())
	}
}

// TestFollowRename: a file replaced by a rename (as ctx-proxy writes each request as sent)
// is read again at once, even when the new one has the same size as the old.
func TestFollowRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sent.json")
	doc := func(text string) []byte {
		return []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"` + text + `"}]}`)
	}
	first, second := doc(strings.Repeat("word ", 200)), doc(strings.Repeat("wordy", 200))
	if len(first) != len(second) {
		t.Fatal("the two documents should have one size")
	}
	if err := os.WriteFile(path, first, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- Main([]string{"--follow", "--follow-timeout", "7s", path}, nil, &stdout, &stderr, nil)
	}()
	reports := func() int { return strings.Count(stdout.String(), "\n") }
	waitFor := func(n int) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if reports() >= n {
				return
			}
		}
		t.Fatalf("%d reports, want %d; stderr %q", reports(), n, stderr.String())
	}
	waitFor(1)
	tmp := filepath.Join(dir, ".sent.json.tmp")
	if err := os.WriteFile(tmp, second, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(2)
	if code := <-done; code != 0 || stderr.String() != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	var a, b struct{ Tokens int }
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(got) != 2 || json.Unmarshal([]byte(got[0]), &a) != nil || json.Unmarshal([]byte(got[1]), &b) != nil || a.Tokens == b.Tokens {
		t.Errorf("reports %q: want two, of the old document and the new", got)
	}
}
