package count

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
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

// TestSessionsCache: a second listing takes an unchanged session's figures from the cache
// (a planted figure shows), and measures a session again once it changed.
func TestSessionsCache(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	home, cache := t.TempDir(), t.TempDir()
	log := filepath.Join(home, ".claude", "projects", "-src-app", "a.jsonl")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		return map[string]string{"HOME": home, "CTX_CACHE_DIR": cache}[k]
	}
	list := func() string {
		t.Helper()
		var out, errs bytes.Buffer
		if code := Main([]string{"--sessions", "--all-projects"}, nil, &out, &errs, env); code != 0 || errs.Len() > 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		return out.String()
	}
	first := list()
	if !strings.Contains(first, `"tokens":`) || strings.Contains(first, `"tokens":7,`) {
		t.Fatalf("first listing %s", first)
	}
	file := filepath.Join(cache, listCacheName)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	planted := regexp.MustCompile(`"tokens":[0-9]+`).ReplaceAll(b, []byte(`"tokens":7`))
	if err := os.WriteFile(file, planted, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := list(); !strings.Contains(got, `"tokens":7,`) {
		t.Errorf("second listing did not read the cache: %s", got)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(log, later, later); err != nil {
		t.Fatal(err)
	}
	if got := list(); strings.Contains(got, `"tokens":7,`) {
		t.Errorf("a changed session kept its cached figures: %s", got)
	}
}
