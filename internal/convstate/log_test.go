package convstate

import (
	"bytes"
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
	return a != nil && b != nil && reflect.DeepEqual(a.Orig, b.Orig) && reflect.DeepEqual(a.Sent, b.Sent) && a.Requests == b.Requests
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
	lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
	if len(lines) != 4 || lines[0]+"\n" != magicLog {
		t.Fatalf("want the header and 3 records, got %d lines", len(lines))
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
	lines := strings.SplitAfter(string(file), "\n")[:4]
	other := t.TempDir()
	turns(t, reopen(t, other), 3)
	foreign, _ := os.ReadFile(filepath.Join(other, fileName("k")))
	flines := strings.SplitAfter(string(foreign), "\n")
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
	if !bytes.HasPrefix(file, []byte(magicLog)) || bytes.Count(file, []byte("\n")) != 2 {
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
		again, _, err := snapshot(testKey, s)
		if err != nil {
			t.Fatal(err)
		}
		back, end, err := decode(testKey, again)
		if err != nil || end == nil || !same(back, s) || back.Key != s.Key {
			t.Fatalf("read %+v, written whole and read back %+v, %v", s, back, err)
		}
	})
}
