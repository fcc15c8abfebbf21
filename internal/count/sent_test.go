package count

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/sessions"
)

// TestPickSent: which request ctx-proxy sent stands for the session log --latest found.
func TestPickSent(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	const id = "5f0c7c1e-0000-4000-8000-000000000001"
	logAt := func(reply time.Time) *sessions.Session {
		path := filepath.Join(t.TempDir(), id+".jsonl")
		lines := `{"type":"user","timestamp":"` + t0.Format(time.RFC3339Nano) + `","message":{"role":"user","content":"go"}}` + "\n" +
			`{"type":"assistant","timestamp":"` + reply.Format(time.RFC3339Nano) + `","message":{"role":"assistant","content":"ok"}}` + "\n" +
			// A subagent's reply, later: not the main thread's.
			`{"type":"assistant","isSidechain":true,"timestamp":"` + reply.Add(time.Hour).Format(time.RFC3339Nano) + `","message":{"role":"assistant","content":"sub"}}` + "\n" +
			// The tool result the client wrote after the proxy answered: not a reply.
			`{"type":"user","timestamp":"` + reply.Add(time.Minute).Format(time.RFC3339Nano) + `","message":{"role":"user","content":"result"}}` + "\n"
		if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		return &sessions.Session{Path: path, Agent: sessions.ClaudeCode, Last: reply.Add(time.Minute)}
	}
	// Newest answered first, as ReadSent lists them.
	sent := []convstate.Sent{
		{Conversation: "title", Format: "anthropic", Session: id, Tools: 0, Answered: t0.Add(3 * time.Second), Path: "title.json"},
		{Conversation: "other", Format: "anthropic", Session: "another", Cwd: "/w", Tools: 20, Answered: t0.Add(2 * time.Second), Path: "other.json"},
		{Conversation: "main", Format: "anthropic", Session: id, Cwd: "/w", Tools: 20, Answered: t0.Add(time.Second), Path: "main.json"},
		{Conversation: "subagent", Format: "anthropic", Session: id, Cwd: "/w", Tools: 12, Answered: t0, Path: "sub.json"},
	}
	name := func(s *convstate.Sent) string {
		if s == nil {
			return "the log"
		}
		return s.Conversation
	}
	here := []string{"/w"}
	for _, c := range []struct {
		what   string
		log    *sessions.Session
		agent  string
		all    []convstate.Sent
		always bool
		want   string
	}{
		{"the session's main thread, though the log is newer", logAt(t0.Add(time.Second)), "any", sent, false, "main"},
		{"the log recorded a reply the proxy did not see", logAt(t0.Add(time.Minute)), "any", sent, false, "the log"},
		{"--source proxy takes it all the same", logAt(t0.Add(time.Minute)), "any", sent, true, "main"},
		{"a Codex log has no Messages API request", &sessions.Session{Path: filepath.Join(dir, "rollout-x.jsonl"), Agent: sessions.Codex, Last: t0.Add(-time.Hour)}, "any", sent, false, "the log"},
		{"--agent codex", nil, sessions.Codex, sent, false, "the log"},
		{"no log: the newest session of the directory, its main thread", nil, "any", sent, false, "other"},
		{"no session match: the directory's, newer than the log", &sessions.Session{Path: filepath.Join(dir, "x.jsonl"), Agent: sessions.ClaudeCode, Last: t0}, "any", sent[1:], false, "other"},
		{"no session match: the directory's, older than the log", &sessions.Session{Path: filepath.Join(dir, "x.jsonl"), Agent: sessions.ClaudeCode, Last: t0.Add(time.Hour)}, "any", sent[1:], false, "the log"},
		{"another directory's", nil, "any", []convstate.Sent{{Conversation: "far", Format: "anthropic", Cwd: "/elsewhere", Tools: 3}}, false, "the log"},
	} {
		if got := name(pickSent(c.all, c.log, c.agent, here, c.always)); got != c.want {
			t.Errorf("%s: got %s, want %s", c.what, got, c.want)
		}
	}
}
