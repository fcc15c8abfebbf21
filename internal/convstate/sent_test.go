package convstate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// request is an API request of the messages msgs, its tools after them as Claude Code
// sends them.
func request(msgs []string) []byte {
	return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"system":"be brief","tools":[{"name":"Bash","description":"` + strings.Repeat("runs it. ", 50) + `"}]}`)
}

// sendTurns writes n requests of one conversation as sent, each two messages longer than
// the one before, and returns them.
func sendTurns(t *testing.T, d *Dir, from, n int) [][]byte {
	t.Helper()
	var msgs []string
	var out [][]byte
	for i := 0; i < from+n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"turn %d %s"}`, i, strings.Repeat("y", 300)),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d\n"}`, i))
		if i < from {
			continue
		}
		body := request(msgs)
		st := &State{Key: "k", Orig: []string{"x"}}
		if err := d.PrepareSent(st, body, &Sent{Format: "anthropic", Answered: time.Now()})(); err != nil {
			t.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

func sentLog(dir string) string {
	return filepath.Join(dir, SentDir, strings.TrimSuffix(fileName("k"), ".json")+logSuffix)
}

// TestSentAppends: a request that extends the last one appends what it added (not the
// history, nor the tools that follow the messages) to the log; the log reads back as the
// last request, byte for byte; past twice the request's size it is written whole again.
func TestSentAppends(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	bodies := sendTurns(t, d, 0, 3)
	file, _ := os.ReadFile(sentLog(dir))
	if n := bytes.Count(file, []byte("runs it.")); n != 50 {
		t.Errorf("the tools are written %d times, want once", n/50)
	}
	if n := bytes.Count(file, []byte(`"turn 0 `)); n != 1 {
		t.Errorf("the first message is written %d times, want once", n)
	}
	if got, err := SentDocument(sentLog(dir)); err != nil || !bytes.Equal(got, bodies[2]) {
		t.Fatalf("read back %q, %v\nwant %q", got, err, bodies[2])
	}
	bodies = sendTurns(t, d, 3, 40)
	file, _ = os.ReadFile(sentLog(dir))
	last := bodies[len(bodies)-1]
	if len(file) > 2*len(last)+4096 {
		t.Errorf("the log is %d bytes, for a request of %d: never written whole again", len(file), len(last))
	}
	if got, err := SentDocument(sentLog(dir)); err != nil || !bytes.Equal(got, last) {
		t.Errorf("after compaction: %q, %v", got, err)
	}
	// A proxy started again knows no last request: it writes the log whole.
	d = reopen(t, dir)
	d.Put(&State{Key: "k"})
	bodies = sendTurns(t, d, 43, 1)
	if got, err := SentDocument(sentLog(dir)); err != nil || !bytes.Equal(got, bodies[0]) {
		t.Errorf("after a restart: %q, %v", got, err)
	}
}

// TestSentCutAnywhere: a write of the log cut at any byte (the proxy killed half way) reads
// as the request before it, whole; so does a record altered after it was written.
func TestSentCutAnywhere(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	bodies := sendTurns(t, d, 0, 2)
	before, _ := os.ReadFile(sentLog(dir))
	bodies = append(bodies, sendTurns(t, d, 2, 1)...)
	after, _ := os.ReadFile(sentLog(dir))
	if !bytes.HasPrefix(after, before) || len(after)-len(before) > 1000 {
		t.Fatalf("the third request was not appended: %d bytes then %d", len(before), len(after))
	}
	for cut := len(before); cut < len(after); cut++ {
		os.WriteFile(sentLog(dir), after[:cut], 0o600)
		if got, err := SentDocument(sentLog(dir)); err != nil || !bytes.Equal(got, bodies[1]) {
			t.Fatalf("cut at %d of %d: %q, %v; want the request before", cut, len(after), got, err)
		}
	}
	altered := bytes.Replace(after, []byte(`answer 2`), []byte(`answer 9`), 1)
	os.WriteFile(sentLog(dir), altered, 0o600)
	if got, err := SentDocument(sentLog(dir)); err != nil || !bytes.Equal(got, bodies[1]) {
		t.Errorf("altered: %q, %v; want the request before", got, err)
	}
	for cut := len(magicSent); cut < len(before)-len(before)/2; cut += 7 {
		os.WriteFile(sentLog(dir), before[:cut], 0o600)
		if got, err := SentDocument(sentLog(dir)); err == nil {
			t.Fatalf("cut at %d in the first request: read %q", cut, got)
		}
	}
}

// TestSentOldBody: a request as sent by the previous version (the body itself, .json) is
// read as it is, and replaced by a log at the conversation's next write.
func TestSentOldBody(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	d.Put(&State{Key: "k"})
	os.MkdirAll(filepath.Join(dir, SentDir), 0o700)
	old := filepath.Join(dir, SentDir, fileName("k"))
	os.WriteFile(old, []byte(`{"messages":[]}`), 0o600)
	os.WriteFile(filepath.Join(dir, SentDir, strings.TrimSuffix(fileName("k"), ".json")+metaSuffix), []byte(`{"conversation":"k","format":"anthropic"}`), 0o600)
	got := ReadSent(dir)
	if len(got) != 1 || got[0].Path != old {
		t.Fatalf("ReadSent = %+v", got)
	}
	if doc, err := SentDocument(old); err != nil || string(doc) != `{"messages":[]}` {
		t.Errorf("old body: %q, %v", doc, err)
	}
	sendTurns(t, reopen(t, dir), 0, 1)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old body is still there: %v", err)
	}
	if got := ReadSent(dir); len(got) != 1 || got[0].Path != sentLog(dir) {
		t.Errorf("ReadSent after the write = %+v", got)
	}
}
