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

// The request as sent around its messages in these tests: its tools after them, as
// Claude Code sends them.
const (
	testHead = `{"model":"m","messages":`
	testTail = `,"system":"be brief","tools":[{"name":"Bash","description":"runs it. runs it. runs it. runs it. runs it."}]}`
)

// sendTurns writes the state of n requests of one conversation, from the request from on,
// each two messages longer than the one before, with their requests as sent, and returns
// the states.
func sendTurns(t *testing.T, d *Dir, from, n int) []*State {
	t.Helper()
	var msgs []string
	var out []*State
	for i := 0; i < from+n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"turn %d %s"}`, i, strings.Repeat("y", 300)),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d\n"}`, i))
		if i < from {
			continue
		}
		st := &State{Key: "k", Requests: i, Orig: make([]string, len(msgs)), OrigRaw: append([]string{}, msgs...),
			Sent: append([]string{}, msgs...), SentHead: testHead, SentTail: testTail}
		if err := d.PrepareSent(st, &Sent{Format: "anthropic", Answered: time.Now()})(); err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// request is the request as sent of a state sendTurns wrote.
func request(s *State) []byte {
	return []byte(testHead + "[" + strings.Join(s.Sent, ",") + "]" + testTail)
}

// TestSentInState: the request as sent is read from the state file, byte for byte; a turn
// that extends the conversation appends its new messages once (the tools that follow them
// in the request are not written again).
func TestSentInState(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	states := sendTurns(t, d, 0, 3)
	path := filepath.Join(dir, fileName("k"))
	if got := ReadSent(dir); len(got) != 1 || got[0].Path != path {
		t.Fatalf("ReadSent = %+v", got)
	}
	file, _ := os.ReadFile(path)
	if n := bytes.Count(file, []byte("runs it.")); n != 5 {
		t.Errorf("the tools are written %d times, want once", n/5)
	}
	if n := bytes.Count(file, []byte(`turn 0 `)); n != 1 {
		t.Errorf("the first message is written %d times, want once", n)
	}
	if got, err := SentDocument(path); err != nil || !bytes.Equal(got, request(states[2])) {
		t.Fatalf("read back %q, %v\nwant %q", got, err, request(states[2]))
	}
	// A request whose JSON the client indents is kept whole; the next one read as before.
	whole := *states[2]
	whole.SentHead, whole.SentTail, whole.SentWhole = "", "", "{\n  \"messages\": []\n}"
	if err := d.PrepareSent(&whole, &Sent{})(); err != nil {
		t.Fatal(err)
	}
	if got, err := SentDocument(path); err != nil || string(got) != whole.SentWhole {
		t.Errorf("a request kept whole: %q, %v", got, err)
	}
	states = sendTurns(t, d, 3, 40)
	if got, err := SentDocument(path); err != nil || !bytes.Equal(got, request(states[len(states)-1])) {
		t.Errorf("after compaction: %q, %v", got, err)
	}
}

// TestSentCutAnywhere: a write cut at any byte (the proxy killed half way through it) gives
// readers the request before it, whole; so does a record altered after it was written.
func TestSentCutAnywhere(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	path := filepath.Join(dir, fileName("k"))
	states := sendTurns(t, d, 0, 2)
	before, _ := os.ReadFile(path)
	states = append(states, sendTurns(t, d, 2, 1)...)
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) || len(after)-len(before) > 1000 {
		t.Fatalf("the third request was not appended: %d bytes then %d", len(before), len(after))
	}
	for cut := len(before); cut < len(after); cut++ {
		os.WriteFile(path, after[:cut], 0o600)
		if got, err := SentDocument(path); err != nil || !bytes.Equal(got, request(states[1])) {
			t.Fatalf("cut at %d of %d: %q, %v; want the request before", cut, len(after), got, err)
		}
	}
	// Altered so that it still reads (the same length, still JSON): a reader without the
	// key cannot tell, and shows it; the proxy's reading refuses it.
	altered := bytes.Replace(after, []byte(`answer 2`), []byte(`answer 9`), 1)
	os.WriteFile(path, altered, 0o600)
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, states[1]) {
		t.Errorf("altered: the proxy read %+v, %v; want the state before", got, err)
	}
	for cut := len(magicLog); cut < len(before)/2; cut += 7 {
		os.WriteFile(path, before[:cut], 0o600)
		if got, err := SentDocument(path); err == nil {
			t.Fatalf("cut at %d in the first record: read %q", cut, got)
		}
	}
}

// TestSentOldBody: a request as sent by the previous version (the body itself, in the sent
// folder) is read as it is, and removed at the conversation's next write; a state file of
// an older format holds no request.
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
	path := filepath.Join(dir, fileName("k"))
	if got := ReadSent(dir); len(got) != 1 || got[0].Path != path {
		t.Errorf("ReadSent after the write = %+v", got)
	}
	os.WriteFile(path, format2([]*State{{Key: "k", Orig: []string{"x"}, Sent: []string{`{}`}}}), 0o600)
	if doc, err := SentDocument(path); err == nil || !strings.Contains(err.Error(), "older ctx-proxy") {
		t.Errorf("a format 2 state: %q, %v", doc, err)
	}
}
