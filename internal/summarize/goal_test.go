package summarize

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// summaryGoals are the "Goal:" items of the summary in a summarized document.
func summaryGoals(t *testing.T, out []byte) []string {
	t.Helper()
	tr, err := transcript.Parse(out, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var goals []string
	for mi := range tr.Messages {
		m := &tr.Messages[mi]
		if !m.Summary {
			continue
		}
		for bi := range m.Blocks {
			if b := &m.Blocks[bi]; b.Kind == transcript.Text && strings.HasPrefix(tr.BodyText(b), transcript.SummaryTag) {
				s, _ := Parse(tr.BodyText(b))
				for _, it := range s["Goal and user requests"] {
					if strings.HasPrefix(it, "Goal: ") {
						goals = append(goals, it)
					}
				}
			}
		}
	}
	return goals
}

// compactSummary adds a user record that stands for compacted history, as Claude Code
// writes its own summary and ctx-summarize writes one into a Claude Code session.
func (s *cc) compactSummary(text string) {
	s.user(text)
	last := &s.lines[len(s.lines)-1]
	*last = strings.Replace(*last, `,"uuid":`, `,"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"uuid":`, 1)
}

// The goal is the session's (issue 38): summarized again, a summary keeps the goal an
// earlier one states, ctxkit's own or the client's compaction summary, and the newer part's
// first question is one of the requests.
func TestGoalCarriesOver(t *testing.T) {
	earlier := Render(Sections{"Goal and user requests": {"Goal: “port the config parser to Go”", "“keep the YAML tests”"},
		"Files changed": {"/r/parse.go"}}, Meta{Messages: 40, Tokens: 30000, Backend: "local"})
	var s cc
	s.compactSummary(earlier)
	s.assistant("Carrying on with the parser.")
	s.user("why does the CI fail on Windows?")
	s.call("1", "Bash", `{"command":"go test ./..."}`)
	s.result("1", strings.Repeat("ok  \texample.com/parse\t0.01s\n", 250), false)
	s.assistant("It passes here; the CI uses CRLF line endings.")
	s.user("then make the reader accept CRLF")
	s.assistant("Done.")
	goals := summaryGoals(t, runOn(t, "own.jsonl", s.doc(), "--force", "--keep", "1 turns"))
	if want := []string{"Goal: “port the config parser to Go”"}; fmt.Sprint(goals) != fmt.Sprint(want) {
		t.Errorf("over ctxkit's summary: goals %q, want %q", goals, want)
	}

	compact := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" +
		"Analysis:\nThe user first asked about the CLI.\n\nSummary:\n1. Primary Request and Intent:\n   The user asked to move the command line from cobra to kong,\n   keeping every flag.\n\n" +
		"2. Key Technical Concepts:\n   - kong\n"
	var c cc
	c.compactSummary(compact)
	c.user("now fix the flaky test in main_test.go")
	c.call("1", "Bash", `{"command":"go test -run TestMain -count=20 ."}`)
	c.result("1", strings.Repeat("ok  \texample.com/cli\t0.01s\n", 250), false)
	c.assistant("It no longer fails.")
	c.user("good, commit it")
	c.assistant("Committed.")
	goals = summaryGoals(t, runOn(t, "client.jsonl", c.doc(), "--force", "--keep", "1 turns"))
	if want := []string{"Goal: “The user asked to move the command line from cobra to kong, keeping every flag.”"}; fmt.Sprint(goals) != fmt.Sprint(want) {
		t.Errorf("over Claude Code's summary: goals %q, want %q", goals, want)
	}
}

// Decisions are choices the assistant stated, not narration of what it does next (issue
// 38).
func TestDecisionsAreChoices(t *testing.T) {
	text := "Now let's run the full test suite. I will proceed with the booking. Let me check the logs.\n" +
		"I'll use httptest instead of a real server because the port is shared. Going with the smaller cache for now.\n" +
		"The root cause is a stale lock file."
	got := decisions(text)
	want := []string{"I'll use httptest instead of a real server because the port is shared.", "Going with the smaller cache for now."}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decisions %q, want %q", got, want)
	}
}
