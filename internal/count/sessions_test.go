package count

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ttyBuffer is a stderr a person watches.
type ttyBuffer struct{ bytes.Buffer }

func (*ttyBuffer) IsTerminal() bool { return true }

// TestFolderNote: a folder's newest session is named on stderr when stderr is a terminal,
// and not otherwise (the report names it; a script reading stderr is not disturbed).
func TestFolderNote(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for _, name := range []string{"a.jsonl", "b.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), doc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(filepath.Join(dir, "b.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var tty ttyBuffer
	if code := Main([]string{dir}, nil, &out, &tty, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, tty.String())
	}
	want := "ctx-count: note: " + dir + ": the newest of 2 sessions: " + filepath.Join(dir, "a.jsonl") + " (--all counts each)\n"
	if tty.String() != want {
		t.Errorf("stderr %q, want %q", tty.String(), want)
	}
	var plain bytes.Buffer
	out.Reset()
	if code := Main([]string{dir}, nil, &out, &plain, nil); code != 0 || plain.Len() != 0 || !strings.Contains(out.String(), `"file":"`+filepath.Join(dir, "a.jsonl")+`"`) {
		t.Errorf("exit %d, stderr %q, report %.80s", code, plain.String(), out.String())
	}
}
