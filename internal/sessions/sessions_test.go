package sessions

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestLastTime: a log's Last is the timestamp of its last record that has one, read from
// the end (growing past a long last line), never after the file's modification time, and
// the modification time when no record within reach has one.
func TestLastTime(t *testing.T) {
	dir := t.TempDir()
	mod := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	t1, t2 := "2026-10-01T10:00:00.5Z", "2026-10-02T11:30:00.000Z"
	record := func(ts string) string {
		return `{"type":"assistant","message":{"content":"hi"},"uuid":"u","timestamp":"` + ts + `"}` + "\n"
	}
	big := func(n int, ts string) string {
		return `{"type":"user","message":{"content":"` + strings.Repeat("x", n) + `"},"timestamp":"` + ts + `","toolUseResult":{"stdout":"` + strings.Repeat("y", n) + `"}}` + "\n"
	}
	for _, c := range []struct {
		name, body, want string // want "" is mod
	}{
		{"claude code", record(t1) + record(t2), t2},
		{"codex", `{"timestamp":"` + t1 + `","type":"session_meta","payload":{"timestamp":"2020-01-01T00:00:00Z"}}` + "\n" + `{"timestamp":"` + t2 + `","type":"event_msg","payload":{}}` + "\n", t2},
		{"last lines without one", record(t1) + `{"type":"file-history-snapshot","snapshot":{"timestamp":"2026-10-30T00:00:00Z"}}` + "\n" + `{"type":"summary","summary":"s"}` + "\n", t1},
		{"a line being written", record(t1) + `{"type":"user","message":{"content":"ab`, t1},
		{"no newline at the end", record(t1) + strings.TrimSuffix(record(t2), "\n"), t2},
		{"a long last line", record(t1) + big(300<<10, t2), t2},
		{"a long last line without one", record(t1) + big(300<<10, "not a time"), t1},
		{"past the bound", record(t1) + big(3<<20, t2), ""},
		{"none", `{"type":"summary"}` + "\n" + `{"timestamp":12}` + "\n", ""},
		{"empty", "", ""},
		{"after the file was modified", record("2027-01-01T00:00:00Z"), ""},
		{"nested only", `{"type":"x","payload":{"timestamp":"` + t1 + `"}}` + "\n", ""},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		want := mod
		if c.want != "" {
			want, _ = time.Parse(time.RFC3339Nano, c.want)
		}
		if got := lastTime(path, mod); !got.Equal(want) {
			t.Errorf("%s: got %v, want %v", c.name, got, want)
		}
	}
	if got := lastTime(filepath.Join(dir, "absent"), mod); !got.Equal(mod) {
		t.Errorf("a missing file: got %v", got)
	}
}

// TestFindByLastRecord: sessions are ordered by their last record's time, not the file's
// (a copied folder gives every file the same one); Last says it, and a log without one
// falls back to its modification time.
func TestFindByLastRecord(t *testing.T) {
	root := t.TempDir()
	w := Where{ClaudeDirs: []string{filepath.Join(root, "claude")}, CodexHome: filepath.Join(root, "codex")}
	now := time.Now().Truncate(time.Second)
	write := func(path string, mod time.Time, lines ...string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	at := func(d time.Duration) string { return now.Add(-d).UTC().Format(time.RFC3339Nano) }
	project := filepath.Join(root, "claude", "projects", "-src-app")
	// All copied a minute ago; a ran 3 hours ago, b 1 hour ago, c (no timestamps) is the
	// copy's time; the rollout (this directory's) 2 hours ago, modified later than all.
	write(filepath.Join(project, "a.jsonl"), now.Add(-time.Minute), `{"timestamp":"`+at(5*time.Hour)+`"}`, `{"timestamp":"`+at(3*time.Hour)+`"}`)
	write(filepath.Join(project, "b.jsonl"), now.Add(-time.Minute), `{"timestamp":"`+at(time.Hour)+`"}`)
	write(filepath.Join(project, "c.jsonl"), now.Add(-time.Minute), `{"type":"summary"}`)
	write(filepath.Join(root, "codex", "sessions", "2026", "11", "24", "rollout-1.jsonl"), now,
		`{"timestamp":"`+at(4*time.Hour)+`","type":"session_meta","payload":{"cwd":"/src/app"}}`,
		`{"timestamp":"`+at(2*time.Hour)+`","type":"event_msg","payload":{}}`)

	got, err := Find(w, Query{Dirs: []string{"/src/app"}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range got {
		order = append(order, filepath.Base(s.Path))
	}
	if want := []string{"c.jsonl", "b.jsonl", "rollout-1.jsonl", "a.jsonl"}; !slices.Equal(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}
	for i, want := range []time.Time{now.Add(-time.Minute), now.Add(-time.Hour), now.Add(-2 * time.Hour), now.Add(-3 * time.Hour)} {
		if !got[i].Last.Equal(want) {
			t.Errorf("%s: Last %v, want %v", order[i], got[i].Last, want)
		}
	}
	if got[2].Dir != "/src/app" || !got[2].Mod.Equal(now) {
		t.Errorf("rollout: %+v", got[2])
	}
	one, err := Find(w, Query{Dirs: []string{"/src/app"}, Limit: 2})
	if err != nil || len(one) != 2 || one[1].Path != got[1].Path {
		t.Errorf("bounded to 2: %+v %v", one, err)
	}
}

// TestNewestBound: reading files only while they could still be among the newest gives
// what ordering them all would, whatever the times (ties, copies, records after the file).
func TestNewestBound(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for round := range 50 {
		var list []Session
		for i := range 1 + rng.IntN(30) {
			path := filepath.Join(dir, fmt.Sprintf("%d-%d.jsonl", round, i))
			mod := base.Add(time.Duration(rng.IntN(10)) * time.Hour)
			body := `{"type":"summary"}` + "\n"
			if rng.IntN(4) > 0 {
				body = fmt.Sprintf(`{"timestamp":"%s"}`+"\n", base.Add(time.Duration(rng.IntN(12))*time.Hour).Format(time.RFC3339))
			}
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			list = append(list, Session{Path: path, Mod: mod})
		}
		all := Newest(slices.Clone(list), 0)
		for _, limit := range []int{1, 2, 5, 40} {
			got := Newest(slices.Clone(list), limit)
			want := all[:min(limit, len(all))]
			if !slices.EqualFunc(got, want, func(a, b Session) bool { return a.Path == b.Path && a.Last.Equal(b.Last) }) {
				t.Fatalf("round %d, limit %d: got %v, want %v", round, limit, got, want)
			}
		}
	}
}

// TestSubagents: a session's subagents in both layouts, the newer folder and the older
// logs beside it that name the session; another session's, a log of a subagent itself and
// a session with none have none of them.
func TestSubagents(t *testing.T) {
	dir := t.TempDir()
	id := "0d3a8e6f-290f-4105-a327-a2496e5e2a83"
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	session := write(id+".jsonl", `{"type":"user","sessionId":"`+id+`"}`+"\n")
	other := write("11111111-2222-3333-4444-555555555555.jsonl", "{}\n")
	newer := write(id+"/subagents/agent-a4ca7529859c158c2.jsonl", `{"type":"user","isSidechain":true,"sessionId":"`+id+`"}`+"\n")
	write(id+"/subagents/agent-a4ca7529859c158c2.meta.json", `{"agentType":"general-purpose"}`)
	older := write("agent-c63fe96c.jsonl", `{"parentUuid":null,"isSidechain":true,"sessionId":"`+id+`","type":"user"}`+"\n")
	write("agent-3ea04571.jsonl", `{"isSidechain":true,"sessionId":"11111111-2222-3333-4444-555555555555","type":"user"}`+"\n")
	for _, c := range []struct {
		path string
		want []string
	}{
		{session, []string{newer, older}},
		{other, []string{filepath.Join(dir, "agent-3ea04571.jsonl")}},
		{older, nil},
		{filepath.Join(t.TempDir(), id+".jsonl"), nil},
	} {
		if got := Subagents(c.path); !slices.Equal(got, c.want) {
			t.Errorf("Subagents(%s) = %v, want %v", filepath.Base(c.path), got, c.want)
		}
	}
}
