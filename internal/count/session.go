package count

import (
	"fmt"
	"os"
	"strings"

	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A session's figures are cumulative: the requests its log records a usage figure for and
// the prompts they sent (what the bill counts), where the report's headline is the context
// now. A Claude Code session's subagents keep logs of their own, each a context of its
// own, whose requests the bill counts with the session's (ccusage folds them in: a session
// with 6 subagents sent 832,157 prompt tokens in its main log, 2,856,814 with them). The
// report gives the main log alone and the session with its subagents, labelled.

// SessionFigures are what a session's log records of its requests, and its subagents'.
type SessionFigures struct {
	// Requests and PromptTokens are the main log's alone: the requests it records a
	// usage figure for, before its compactions too (Trend.Session), and their prompts
	// (input, cache reads and cache writes) summed.
	Requests     int `json:"requests"`
	PromptTokens int `json:"prompt_tokens"`
	// Subagents are the logs of the session's subagents (sessions.Subagents), each with
	// its own figures; WithSubagents the session's with them. Absent when it has none.
	Subagents     []SubagentFigures `json:"subagents,omitempty"`
	WithSubagents *Recorded         `json:"with_subagents,omitempty"`
}

// Recorded are requests and the prompt tokens they sent.
type Recorded struct {
	Requests     int `json:"requests"`
	PromptTokens int `json:"prompt_tokens"`
}

// SubagentFigures are one subagent's log's figures.
type SubagentFigures struct {
	File string `json:"file"`
	Recorded
}

// sessionFigures are the figures of the session read from name (a path, or "-") whose
// main log's recorded prompts are n.session; nil when it records none and has no
// subagents.
func sessionFigures(name string, f transcript.Format, n *Notes) *SessionFigures {
	s := &SessionFigures{Requests: len(n.session)}
	for _, p := range n.session {
		s.PromptTokens += p
	}
	if f == transcript.ClaudeCode && name != "-" {
		with := Recorded{Requests: s.Requests, PromptTokens: s.PromptTokens}
		for _, path := range sessions.Subagents(name) {
			r, ok := subagentRecorded(path)
			if !ok {
				continue
			}
			s.Subagents = append(s.Subagents, SubagentFigures{File: path, Recorded: r})
			with.Requests += r.Requests
			with.PromptTokens += r.PromptTokens
		}
		if len(s.Subagents) > 0 {
			s.WithSubagents = &with
		}
	}
	if s.Requests == 0 && s.Subagents == nil {
		return nil
	}
	return s
}

// subagentRecorded reads a subagent's log for its figures: the usage figures of its
// conversation (its requests after a compaction of its own, should it have made one).
func subagentRecorded(path string) (Recorded, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Recorded{}, false
	}
	t, err := transcript.Parse(b, transcript.Options{Format: transcript.ClaudeCode})
	if err != nil {
		return Recorded{}, false
	}
	var r Recorded
	for _, u := range t.Usage {
		r.Requests++
		r.PromptTokens += u.Input
	}
	return r, true
}

// subagentStamp names the subagents' logs of the session at path as they are now (path,
// size, modification time): what the listing's cached figures depend on besides the
// session's own file.
func subagentStamp(path string) string {
	var b strings.Builder
	for _, p := range sessions.Subagents(path) {
		if s, ok := sessions.Stat(p); ok {
			fmt.Fprintf(&b, "%s\x00%d\x00%d\x00", p, s.Size, s.Mod.UnixNano())
		}
	}
	return b.String()
}
