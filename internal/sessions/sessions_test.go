package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMangle holds Mangle to the folder names Claude Code writes: every UTF-16 unit that
// is not an ASCII letter or digit is one dash (the corpus's folders, and names reported
// for '_', '.', spaces and non-Latin letters).
func TestMangle(t *testing.T) {
	for dir, want := range map[string]string{
		"/Users/dain/workspace/JSSoundRecorder": "-Users-dain-workspace-JSSoundRecorder",
		"/home/me/src/my_app":                   "-home-me-src-my-app",
		"/home/me/.local/x y":                   "-home-me--local-x-y",
		"/home/me/Проект":                       "-home-me-------",
		"/home/me/a😀":                           "-home-me-a--",
	} {
		if got := Mangle(dir); got != want {
			t.Errorf("Mangle(%q) = %q, want %q", dir, got, want)
		}
	}
}

// TestFind: the newest first across both agents; a project folder an older Claude Code
// named keeping '_' is found; subagents' logs and other directories' rollouts are not.
func TestFind(t *testing.T) {
	root := t.TempDir()
	w := Where{ClaudeDir: filepath.Join(root, "claude"), CodexHome: filepath.Join(root, "codex")}
	write := func(path, body string, age time.Duration) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(path, when, when); err != nil {
			t.Fatal(err)
		}
	}
	here := "/src/my_app"
	write(filepath.Join(w.ClaudeDir, "projects", "-src-my_app", "a.jsonl"), "{}\n", 3*time.Hour)
	write(filepath.Join(w.ClaudeDir, "projects", "-src-my_app", "agent-1.jsonl"), "{}\n", 0)
	write(filepath.Join(w.ClaudeDir, "projects", "-src-other", "b.jsonl"), "{}\n", 0)
	meta := `{"type":"session_meta","payload":{"cwd":"%s"}}` + "\n"
	write(filepath.Join(w.CodexHome, "sessions", "2026", "11", "24", "rollout-1.jsonl"), fmt.Sprintf(meta, here), time.Hour)
	write(filepath.Join(w.CodexHome, "sessions", "2026", "11", "24", "rollout-2.jsonl"), fmt.Sprintf(meta, "/elsewhere"), 0)

	got, err := Find(w, Query{Dirs: []string{here}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Agent != Codex || got[1].Agent != ClaudeCode || filepath.Base(got[1].Path) != "a.jsonl" {
		t.Fatalf("got %+v", got)
	}
	if got[0].Dir != here {
		t.Errorf("codex dir %q", got[0].Dir)
	}
	all, err := Find(w, Query{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("every project, bounded to 3: got %d", len(all))
	}
	none, err := Find(Where{ClaudeDir: filepath.Join(root, "absent"), CodexHome: filepath.Join(root, "absent")}, Query{})
	if err != nil || len(none) != 0 {
		t.Errorf("no folders: %v %v", none, err)
	}
}
