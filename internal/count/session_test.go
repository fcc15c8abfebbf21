package count

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// writeSession writes a generated Claude Code session in dir, named after its session id,
// with a subagent in each layout (<id>/subagents/agent-*.jsonl; agent-*.jsonl beside it
// naming the session) and another session's subagent beside it. It returns the session's
// path and the figures each log records (requests, prompt tokens), the main log's first.
func writeSession(t *testing.T, dir string) (string, [][2]int) {
	t.Helper()
	gen := func(seed int64, size int) []byte {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: "claude-code", Size: size, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	idOf := func(doc []byte) string { return gjson.GetBytes(doc[:bytes.IndexByte(doc, '\n')], "sessionId").String() }
	sub := func(seed int64, session string) []byte {
		doc := gen(seed, 40_000)
		doc = bytes.ReplaceAll(doc, []byte(`"isSidechain":false`), []byte(`"isSidechain":true`))
		return bytes.ReplaceAll(doc, []byte(idOf(doc)), []byte(session))
	}
	var figures [][2]int
	write := func(path string, doc []byte, count bool) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		if count {
			tr, err := transcript.Parse(doc, transcript.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := [2]int{len(tr.Usage), 0}
			for _, u := range tr.Usage {
				f[1] += u.Input
			}
			figures = append(figures, f)
		}
		return path
	}
	main := gen(1, 80_000)
	id := idOf(main)
	session := write(filepath.Join(dir, id+".jsonl"), main, true)
	write(filepath.Join(dir, id, "subagents", "agent-a4ca7529859c158c2.jsonl"), sub(2, id), true)
	write(filepath.Join(dir, "agent-c63fe96c.jsonl"), sub(3, id), true)
	write(filepath.Join(dir, "agent-3ea04571.jsonl"), sub(4, "11111111-2222-3333-4444-555555555555"), false)
	return session, figures
}

// A session's figures are given for the main log alone and with its subagents (both
// layouts), labelled, in ctx-count on the session and in ctx-count --sessions: both saw
// the main log only (a session with 6 subagents sent 832,157 prompt tokens in its main
// log and 2,856,814 with them, as ccusage counts).
func TestSessionFiguresWithSubagents(t *testing.T) {
	home, cache := t.TempDir(), t.TempDir()
	session, figures := writeSession(t, filepath.Join(home, ".claude", "projects", "-src-app"))
	main, with := figures[0], [2]int{}
	for _, f := range figures {
		with[0], with[1] = with[0]+f[0], with[1]+f[1]
	}
	if main[0] < 5 || figures[1][0] < 2 || figures[2][0] < 2 {
		t.Fatalf("figures %v: the test needs requests in every log", figures)
	}
	env := func(k string) string {
		return map[string]string{"HOME": home, "CTX_CACHE_DIR": cache}[k]
	}

	var out, errs bytes.Buffer
	if code := Main([]string{"--json", session}, nil, &out, &errs, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	s := r.Session
	if s == nil || s.Requests != main[0] || s.PromptTokens != main[1] || len(s.Subagents) != 2 || s.WithSubagents == nil ||
		s.WithSubagents.Requests != with[0] || s.WithSubagents.PromptTokens != with[1] {
		t.Errorf("session %s; want the main log's %v and %v with its 2 subagents", gjson.GetBytes(out.Bytes(), "session").Raw, main, with)
	}
	var human bytes.Buffer
	Render(&human, &r, false, 200)
	if !strings.Contains(human.String(), "(the main log); with its 2 subagents: ") {
		t.Errorf("the picture does not label the two:\n%s", human.String())
	}

	list := func() SessionLine {
		t.Helper()
		var out, errs bytes.Buffer
		if code := Main([]string{"--sessions", "--all-projects"}, nil, &out, &errs, env); code != 0 || errs.Len() > 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		var l SessionLine
		if err := json.Unmarshal(out.Bytes(), &l); err != nil || bytes.Count(out.Bytes(), []byte("\n")) != 1 {
			t.Fatalf("listing %s: %v", out.String(), err)
		}
		return l
	}
	l := list()
	if l.File != session || l.Requests != main[0] || l.PromptTokens != main[1] || l.Subagents != 2 ||
		l.RequestsWithSubagents != with[0] || l.PromptTokensWithSubagents != with[1] {
		t.Errorf("listing %+v; want the main log's %v and %v with its 2 subagents", l, main, with)
	}
	// A subagent's log that appears later is counted, though the session's own did not change.
	if err := os.Remove(filepath.Join(filepath.Dir(session), "agent-c63fe96c.jsonl")); err != nil {
		t.Fatal(err)
	}
	if l := list(); l.Subagents != 1 || l.PromptTokensWithSubagents != with[1]-figures[2][1] {
		t.Errorf("after a subagent's log went: %+v", l)
	}
}
