package convstate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// turns puts n states of one conversation, each extending the one before by a message, and
// returns them.
func turns(t *testing.T, d *Dir, n int) []*State {
	t.Helper()
	var out []*State
	prev := &State{Key: "k"}
	for i := 0; i < n; i++ {
		s := *prev
		m := fmt.Sprintf(`{"role":"user","content":"turn %d <%s>"}`, i, strings.Repeat("x", 200))
		s.Orig = append(append([]string{}, prev.Orig...), Hash(m))
		s.Sent = append(append([]string{}, prev.Sent...), m)
		s.Requests = i + 1
		if err := d.Put(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, &s)
		prev = &s
	}
	return out
}

func reopen(t *testing.T, dir string) *Dir {
	t.Helper()
	d, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func same(a, b *State) bool {
	return a != nil && b != nil && reflect.DeepEqual(hashes(a), hashes(b)) && reflect.DeepEqual(a.Sent, b.Sent) && a.Requests == b.Requests
}

// hashes are s's hashes of the messages received, those not hashed yet hashed.
func hashes(s *State) []string {
	out := make([]string, len(s.Orig))
	for i, h := range s.Orig {
		if h == "" {
			h = Hash(origRaw(s, i))
		}
		out[i] = h
	}
	return out
}

// records cuts a format 3 log into its header and its records, each whole.
func records(t *testing.T, file []byte) []string {
	t.Helper()
	if !bytes.HasPrefix(file, []byte(magicLog)) {
		t.Fatalf("not a format 3 log: %.40q", file)
	}
	out := []string{magicLog}
	rest := file[len(magicLog):]
	for len(rest) > 0 {
		_, _, more, ok := nextRecord(rest)
		if !ok {
			t.Fatalf("a record cut short: %.60q", rest)
		}
		out = append(out, string(rest[:len(rest)-len(more)]))
		rest = more
	}
	return out
}

// TestLogAppends: a turn that extends the conversation appends a record of what it added,
// no more; the file read again is the last state; past twice the state's size the log is
// written again whole.
func TestLogAppends(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	path := filepath.Join(dir, fileName("k"))
	states := turns(t, d, 3)
	file, _ := os.ReadFile(path)
	lines := records(t, file)
	if len(lines) != 4 {
		t.Fatalf("want the header and 3 records, got %d", len(lines))
	}
	if last := lines[3]; strings.Contains(last, "turn 0") || !strings.Contains(last, "turn 2") {
		t.Errorf("the last record repeats the history or misses the new message: %s", last)
	}
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, states[2]) {
		t.Errorf("read back %+v, %v", got, err)
	}
	states = append(states, turns(t, d, 40)...)
	file, _ = os.ReadFile(path)
	if max := 2*sizeOf(states[len(states)-1]) + 4096; len(file) > max {
		t.Errorf("the log is %d bytes, more than %d: never written again whole", len(file), max)
	}
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, states[len(states)-1]) {
		t.Errorf("after compaction, read back %+v, %v", got, err)
	}
}

// TestLogTorn: a record cut short (a crash mid-write) or altered ends the state at the
// record before it, not in an error; the next write writes the file whole.
func TestLogTorn(t *testing.T) {
	dir := t.TempDir()
	states := turns(t, reopen(t, dir), 3)
	path := filepath.Join(dir, fileName("k"))
	file, _ := os.ReadFile(path)
	for name, f := range map[string][]byte{
		"torn":    file[:len(file)-5],
		"no LF":   file[:len(file)-1],
		"altered": bytes.Replace(file, []byte("turn 2"), []byte("turn 9"), 1),
	} {
		os.WriteFile(path, f, 0o600)
		d := reopen(t, dir)
		got, err := d.Get("k")
		if err != nil || !same(got, states[1]) {
			t.Errorf("%s: read %+v, %v; want the state before the last", name, got, err)
			continue
		}
		next := *got
		next.Requests = 7
		if err := d.Put(&next); err != nil {
			t.Fatal(err)
		}
		if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, &next) {
			t.Errorf("%s: the write after it reads back as %+v, %v", name, got, err)
		}
		os.WriteFile(path, file, 0o600)
	}
}

// TestLogChained: records cannot be moved, dropped from the middle or taken from another
// conversation's log: what follows such a change is not read.
func TestLogChained(t *testing.T) {
	dir := t.TempDir()
	states := turns(t, reopen(t, dir), 3)
	path := filepath.Join(dir, fileName("k"))
	file, _ := os.ReadFile(path)
	lines := records(t, file)
	other := t.TempDir()
	turns(t, reopen(t, other), 3)
	foreign, _ := os.ReadFile(filepath.Join(other, fileName("k")))
	flines := records(t, foreign)
	for name, c := range map[string]struct {
		file string
		want *State
	}{
		"swapped":        {lines[0] + lines[1] + lines[3] + lines[2], states[0]},
		"middle dropped": {lines[0] + lines[1] + lines[3], states[0]},
		"foreign record": {lines[0] + lines[1] + lines[2] + flines[3], states[1]},
		"first dropped":  {lines[0] + lines[2] + lines[3], nil},
	} {
		os.WriteFile(path, []byte(c.file), 0o600)
		got, err := reopen(t, dir).Get("k")
		if c.want == nil {
			if got != nil || !errors.Is(err, ErrNotAuthenticated) {
				t.Errorf("%s: read %+v, %v; want not authenticated", name, got, err)
			}
			continue
		}
		if err != nil || !same(got, c.want) {
			t.Errorf("%s: read %+v, %v; want %+v", name, got, err, c.want)
		}
	}
}

// TestOldFormatRead: a format 1 file (one sealed JSON state) is read, and the next write
// replaces it with a log.
func TestOldFormatRead(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	st := &State{Key: "k", Updated: time.Now(), Orig: []string{Hash("a")}, Sent: []string{`{"role":"user","content":"a"}`}}
	var buf bytes.Buffer
	data, _ := json.Marshal(st)
	buf.Write(seal(testKey, data))
	path := filepath.Join(dir, fileName("k"))
	os.WriteFile(path, buf.Bytes(), 0o600)
	got, err := d.Get("k")
	if err != nil || !same(got, st) {
		t.Fatalf("format 1: %+v, %v", got, err)
	}
	next := *got
	next.Sent = append(append([]string{}, got.Sent...), `{"role":"assistant","content":"b"}`)
	next.Orig = append(append([]string{}, got.Orig...), Hash("b"))
	if err := d.Put(&next); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(path)
	if !bytes.HasPrefix(file, []byte(magicLog)) || len(records(t, file)) != 2 {
		t.Errorf("not rewritten as a log of one record: %q", file)
	}
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, &next) {
		t.Errorf("read back %+v, %v", got, err)
	}
}

// FuzzDecode: whatever a state file holds, reading it neither panics nor gives a state its
// records do not make; a state read is written whole and read back the same.
func FuzzDecode(f *testing.F) {
	dir := f.TempDir()
	d, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		f.Fatal(err)
	}
	prev := &State{Key: "k"}
	for i := 0; i < 3; i++ {
		s := *prev
		s.Orig = append(append([]string{}, prev.Orig...), Hash(fmt.Sprint(i)))
		s.Sent = append(append([]string{}, prev.Sent[:len(prev.Sent)/2]...), fmt.Sprintf(`{"role":"user","content":"%d"}`, i))
		if err := d.Put(&s); err != nil {
			f.Fatal(err)
		}
		prev = &s
	}
	file, _ := os.ReadFile(filepath.Join(dir, fileName("k")))
	f.Add(file)
	f.Add([]byte(magicLog))
	f.Fuzz(func(t *testing.T, file []byte) {
		s, _, err := decode(testKey, file)
		if err != nil {
			return
		}
		again, _, err := snapshot(testKey, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, end, err := decode(testKey, again)
		if err != nil || end == nil || !same(back, s) || back.Key != s.Key {
			t.Fatalf("read %+v, written whole and read back %+v, %v", s, back, err)
		}
	})
}

// format2 is a format 2 file of the states, each a record after the one before, as the
// proxy wrote them before format 3.
func format2(states []*State) []byte {
	out := []byte(magicLog2)
	mac := seed(testKey, magicLog2)
	var prev *State
	for _, s := range states {
		r := record{State: *s}
		if prev != nil {
			r.KeepOrig, r.KeepSent = CommonPrefix(prev.Orig, s.Orig), CommonPrefix(prev.Sent, s.Sent)
			r.Orig, r.Sent = s.Orig[r.KeepOrig:], s.Sent[r.KeepSent:]
		}
		data, _ := json.Marshal(&r)
		mac = chain(testKey, mac, data)
		out = hex.AppendEncode(out, mac)
		out = append(out, ' ')
		out = append(append(out, data...), '\n')
		prev = s
	}
	return out
}

// TestFormat2Read: a format 2 log (the messages as JSON strings, a line a record) is read,
// its last record cut short gives the state before, and the next write replaces it with a
// format 3 log that reads back the same.
func TestFormat2Read(t *testing.T) {
	dir := t.TempDir()
	var states []*State
	prev := &State{Key: "k", Updated: time.Now()}
	for i := 0; i < 3; i++ {
		s := *prev
		m := fmt.Sprintf(`{"role":"user","content":"<b>turn %d</b>\n"}`, i)
		s.Orig = append(append([]string{}, prev.Orig...), Hash(m))
		s.Sent = append(append([]string{}, prev.Sent...), m)
		s.Requests = i + 1
		states = append(states, &s)
		prev = &s
	}
	file := format2(states)
	path := filepath.Join(dir, fileName("k"))
	os.WriteFile(path, file, 0o600)
	d := reopen(t, dir)
	got, err := d.Get("k")
	if err != nil || !same(got, states[2]) {
		t.Fatalf("format 2: %+v, %v", got, err)
	}
	os.WriteFile(path, file[:len(file)-3], 0o600)
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, states[1]) {
		t.Fatalf("format 2 cut short: %+v, %v; want the state before", got, err)
	}
	os.WriteFile(path, file, 0o600)
	d = reopen(t, dir)
	got, _ = d.Get("k")
	next := *got
	next.Sent = append(append([]string{}, got.Sent...), `{"role":"assistant","content":"b"}`)
	next.Orig = append(append([]string{}, got.Orig...), Hash("b"))
	if err := d.Put(&next); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(path)
	if len(records(t, back)) != 2 {
		t.Errorf("not written whole as format 3")
	}
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, &next) {
		t.Errorf("read back %+v, %v", got, err)
	}
}

// TestLogCutAnywhere: a write cut at any byte (the process killed half way through it, the
// machine stopped before the page reached the disk) leaves a file that reads as the state
// before that write, whole: never part of the new record, never an error.
func TestLogCutAnywhere(t *testing.T) {
	dir := t.TempDir()
	d := reopen(t, dir)
	states := turns(t, d, 2)
	path := filepath.Join(dir, fileName("k"))
	before, _ := os.ReadFile(path)
	states = append(states, turns(t, d, 1)...) // (turns starts again from turn 0: a whole rewrite)
	next := *states[1]
	next.Sent = append(append([]string{}, next.Sent...), `{"role":"assistant","content":"a\nb"}`)
	next.Orig = append(append([]string{}, next.Orig...), "")
	next.OrigRaw = make([]string, len(next.Orig))
	next.OrigRaw[len(next.OrigRaw)-1] = next.Sent[len(next.Sent)-1]
	next.Requests = 9
	os.WriteFile(path, before, 0o600)
	d = reopen(t, dir)
	if _, err := d.Get("k"); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(&next); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the turn did not append to the log")
	}
	for cut := len(before); cut < len(after); cut++ {
		os.WriteFile(path, after[:cut], 0o600)
		got, err := reopen(t, dir).Get("k")
		if err != nil || !same(got, states[1]) {
			t.Fatalf("cut at %d of %d: read %+v, %v; want the state before the write", cut, len(after), got, err)
		}
	}
	os.WriteFile(path, after, 0o600)
	if got, err := reopen(t, dir).Get("k"); err != nil || !same(got, &next) {
		t.Errorf("whole: read %+v, %v", got, err)
	}
}

// TestOrigSentAsReceived: a message received that was sent as it came is written without
// its hash, as "the message sent at its place", and read back as known; one the proxy sent
// otherwise is hashed at the write, in the canonical form, even when a later request
// changed what was sent in its place.
func TestOrigSentAsReceived(t *testing.T) {
	dir := t.TempDir()
	canon := func(s string) string { return strings.ToLower(s) }
	d, err := Open(dir, Options{Key: testKey, Canonical: canon}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := `{"role":"user","content":"A"}`, `{"role":"assistant","content":"B"}`
	s1 := &State{Key: "k", Orig: []string{"", ""}, OrigRaw: []string{a, b}, Sent: []string{a, b}}
	if err := d.Put(s1); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(filepath.Join(dir, fileName("k")))
	if bytes.Contains(file, []byte(Hash(canon(a)))) || !bytes.Contains(file, []byte(`"orig":["",""]`)) {
		t.Errorf("messages sent as received were hashed: %s", file)
	}
	got, err := reopen(t, dir).Get("k")
	if err != nil || !reflect.DeepEqual(got.OrigRaw, []string{a, b}) || !reflect.DeepEqual(got.Orig, []string{"", ""}) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	// The next request keeps what was received, and sends the first message otherwise.
	s2 := &State{Key: "k", Orig: []string{"", ""}, OrigRaw: []string{a, b}, Sent: []string{`{"role":"user","content":"[cleared]"}`, b}}
	if err := d.Put(s2); err != nil {
		t.Fatal(err)
	}
	d2, _ := Open(dir, Options{Key: testKey, Canonical: canon}, nil)
	got, err = d2.Get("k")
	if err != nil || !reflect.DeepEqual(got.Sent, s2.Sent) || got.OrigRaw[0] != a || got.Orig[1] != "" {
		t.Fatalf("after the second request: %+v, %v", got, err)
	}
	// Written whole (compaction), the first message received is hashed, canonical.
	file, mac, err := snapshot(testKey, got, canon)
	if err != nil {
		t.Fatal(err)
	}
	_ = mac
	if !bytes.Contains(file, []byte(`"orig":["`+Hash(canon(a))+`",""]`)) {
		t.Errorf("written whole: %s", file)
	}
}

// TestRecordOutgrowsItsRoom: a record made in place that outgrows the room made for it
// (text escaped six times its size) is whole all the same.
func TestRecordOutgrowsItsRoom(t *testing.T) {
	s := &State{Key: "k", Orig: []string{"x"}, Sent: []string{`{"a":1}`}, SentHead: strings.Repeat("\x01", 300), SentTail: "}"}
	for _, out := range [][]byte{nil, make([]byte, 0, 64), []byte(magicLog)} {
		file, _, err := appendRecord(append([]byte(magicLog), out...)[:len(magicLog)], testKey, seed(testKey, magicLog), nil, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := decode(testKey, file)
		if err != nil || got.SentHead != s.SentHead || got.SentTail != "}" || !same(got, s) {
			t.Fatalf("read back %+v, %v", got, err)
		}
	}
}
