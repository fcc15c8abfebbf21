package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	claude := filepath.Join(root, "claude")
	w := Where{ClaudeDirs: []string{claude}, CodexHome: filepath.Join(root, "codex")}
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
	write(filepath.Join(claude, "projects", "-src-my_app", "a.jsonl"), "{}\n", 3*time.Hour)
	write(filepath.Join(claude, "projects", "-src-my_app", "agent-1.jsonl"), "{}\n", 0)
	write(filepath.Join(claude, "projects", "-src-other", "b.jsonl"), "{}\n", 0)
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
	none, err := Find(Where{ClaudeDirs: []string{filepath.Join(root, "absent")}, CodexHome: filepath.Join(root, "absent")}, Query{})
	if err != nil || len(none) != 0 {
		t.Errorf("no folders: %v %v", none, err)
	}
}

// env is a getenv of the variables given.
func env(vars ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		m[vars[i]] = vars[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestLocate: unset, Claude Code's folders are ~/.claude and $XDG_CONFIG_HOME/claude
// (~/.config/claude); CLAUDE_CONFIG_DIR replaces both and may list several, separated by
// commas, each once; CODEX_HOME replaces ~/.codex.
func TestLocate(t *testing.T) {
	for _, c := range []struct {
		name   string
		getenv func(string) string
		claude []string
		codex  string
	}{
		{"defaults", env("HOME", "/h"), []string{"/h/.claude", "/h/.config/claude"}, "/h/.codex"},
		{"XDG_CONFIG_HOME", env("HOME", "/h", "XDG_CONFIG_HOME", "/x"), []string{"/h/.claude", "/x/claude"}, "/h/.codex"},
		{"relative XDG_CONFIG_HOME is ignored", env("HOME", "/h", "XDG_CONFIG_HOME", "x"), []string{"/h/.claude", "/h/.config/claude"}, "/h/.codex"},
		{"one CLAUDE_CONFIG_DIR", env("HOME", "/h", "CLAUDE_CONFIG_DIR", "/c", "CODEX_HOME", "/k"), []string{"/c"}, "/k"},
		{"a list", env("HOME", "/h", "CLAUDE_CONFIG_DIR", " /a , /b/,,/a"), []string{"/a", "/b"}, "/h/.codex"},
		{"no HOME", env("XDG_CONFIG_HOME", "/x"), []string{"/x/claude"}, ""},
		{"nothing", env(), nil, ""},
	} {
		w := Locate(c.getenv)
		if !slices.Equal(w.ClaudeDirs, c.claude) || w.CodexHome != c.codex {
			t.Errorf("%s: got %q and %q, want %q and %q", c.name, w.ClaudeDirs, w.CodexHome, c.claude, c.codex)
		}
	}
}

// TestFindEveryClaudeDir: the sessions of ~/.claude and of ~/.config/claude are found
// together; a folder reached twice (~/.config/claude a link to ~/.claude, a project
// folder linked into the other, a folder named twice in CLAUDE_CONFIG_DIR) lists its
// sessions once.
func TestFindEveryClaudeDir(t *testing.T) {
	home := t.TempDir()
	write := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	names := func(w Where, q Query) []string {
		t.Helper()
		found, err := Find(w, q)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, s := range found {
			rel, _ := filepath.Rel(home, s.Path)
			n = append(n, rel)
		}
		slices.Sort(n)
		return n
	}
	write(filepath.Join(home, ".claude", "projects", "-src-app", "a.jsonl"))
	write(filepath.Join(home, ".config", "claude", "projects", "-src-app", "b.jsonl"))
	write(filepath.Join(home, ".config", "claude", "projects", "-src-other", "c.jsonl"))
	w := Locate(env("HOME", home))
	if got, want := names(w, Query{Dirs: []string{"/src/app"}}), []string{".claude/projects/-src-app/a.jsonl", ".config/claude/projects/-src-app/b.jsonl"}; !slices.Equal(got, want) {
		t.Errorf("both folders: got %q, want %q", got, want)
	}
	if got := names(w, Query{}); len(got) != 3 {
		t.Errorf("every project of both: got %q", got)
	}

	// A project folder linked into the other configuration folder.
	link(filepath.Join(home, ".claude", "projects", "-src-app"), filepath.Join(home, ".config", "claude", "projects", "-src-app2"))
	if got := names(w, Query{}); len(got) != 3 {
		t.Errorf("a linked project folder: got %q", got)
	}

	// ~/.config/claude a link to ~/.claude (a dotfiles setup), and a folder named twice.
	other := t.TempDir()
	write(filepath.Join(other, ".claude", "projects", "-src-app", "a.jsonl"))
	link(filepath.Join(other, ".claude"), filepath.Join(other, ".config", "claude"))
	w = Locate(env("HOME", other))
	if got := w.ClaudeProjects(); len(got) != 1 {
		t.Errorf("a linked configuration folder is read once: %q", got)
	}
	if got, err := Find(w, Query{}); err != nil || len(got) != 1 {
		t.Errorf("a linked configuration folder: %v %v", got, err)
	}
	w = Locate(env("CLAUDE_CONFIG_DIR", filepath.Join(other, ".claude")+","+filepath.Join(other, ".config", "claude")+","+filepath.Join(home, ".claude")))
	if got, err := Find(w, Query{}); err != nil || len(got) != 2 {
		t.Errorf("CLAUDE_CONFIG_DIR listing a folder twice, and another: %v %v", got, err)
	}
}
