package replay

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// subagentSession writes a Claude Code session with two subagents in dir, one in each
// layout (newer: <id>/subagents/agent-*.jsonl; older: agent-*.jsonl beside it, naming the
// session), and another session's subagent beside it. It returns the session's path and
// its subagents'.
func subagentSession(t *testing.T, dir string) (string, []string) {
	t.Helper()
	gen := func(seed int64, size int) []byte {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: "claude-code", Size: size, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	write := func(path string, b []byte) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	main := gen(1, 120_000)
	id := gjson.GetBytes(main[:bytes.IndexByte(main, '\n')], "sessionId").String()
	// A subagent's log: its records are a sidechain of the session's.
	sub := func(seed int64, session string) []byte {
		doc := gen(seed, 50_000)
		doc = bytes.ReplaceAll(doc, []byte(`"isSidechain":false`), []byte(`"isSidechain":true`))
		other := gjson.GetBytes(doc[:bytes.IndexByte(doc, '\n')], "sessionId").String()
		return bytes.ReplaceAll(doc, []byte(other), []byte(session))
	}
	session := write(filepath.Join(dir, id+".jsonl"), main)
	newer := write(filepath.Join(dir, id, "subagents", "agent-a4ca7529859c158c2.jsonl"), sub(2, id))
	older := write(filepath.Join(dir, "agent-c63fe96c.jsonl"), sub(3, id))
	write(filepath.Join(dir, "agent-3ea04571.jsonl"), sub(4, "11111111-2222-3333-4444-555555555555"))
	return session, []string{newer, older}
}

// A Claude Code session is replayed with its subagents, each log on its own through the
// same pipeline, and reported both ways: the main log alone, and with them. ctx-replay
// measured the main log only (a session with 6 subagents: 832,157 prompt tokens, where
// ccusage, which folds the subagents in, counted 2,856,814).
func TestSessionWithSubagents(t *testing.T) {
	session, subs := subagentSession(t, t.TempDir())
	replayOf := func(path string) Report {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"--json", "--pipe", "ctx-count -p", path}, nil, &stdout, &stderr, testEnv); code != 0 {
			t.Fatalf("%s: exit %d: %s", path, code, stderr.String())
		}
		var r Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := replayOf(session)
	if len(r.Subagents) != 2 || r.WithSubagents == nil {
		t.Fatalf("%d subagents replayed, with_subagents %v; want the 2 of the session", len(r.Subagents), r.WithSubagents)
	}
	requests, tokens, cost := r.Requests, r.Uncompacted, r.CostUncompacted
	for i, s := range r.Subagents {
		if s.File != subs[i] {
			t.Errorf("subagent %d is %s, want %s", i, s.File, subs[i])
		}
		alone := replayOf(subs[i])
		if alone.Subagents != nil || s.Requests != alone.Requests || s.Uncompacted != alone.Uncompacted || s.Requests < 2 {
			t.Errorf("%s: %d requests, %d tokens as recorded; replayed alone %d, %d", filepath.Base(s.File), s.Requests, s.Uncompacted, alone.Requests, alone.Uncompacted)
		}
		requests, tokens, cost = requests+s.Requests, tokens+s.Uncompacted, cost+s.CostUncompacted
	}
	w := r.WithSubagents
	if w.Requests != requests || w.Uncompacted != tokens || w.CostUncompacted != cost || w.BilledRatio != 1 {
		t.Errorf("with subagents: %d requests, %d tokens, $%.4f, billed %.3f; the logs add up to %d, %d, $%.4f",
			w.Requests, w.Uncompacted, w.CostUncompacted, w.BilledRatio, requests, tokens, cost)
	}
	var human bytes.Buffer
	Render(&human, &r, 100, false)
	if !strings.Contains(human.String(), "of the main log through") || !strings.Contains(human.String(), "with its 2 subagents") {
		t.Errorf("the table does not tell the main log from the session with its subagents:\n%s", human.String())
	}
}
