package count

import (
	"fmt"
	"os"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
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
	// Peak is the main log's largest request, beside which each subagent's
	// (SubagentContext.Peak) is set; absent from the listing (--sessions).
	Peak *Peak `json:"peak,omitempty"`
}

// Recorded are requests and the prompt tokens they sent.
type Recorded struct {
	Requests     int `json:"requests"`
	PromptTokens int `json:"prompt_tokens"`
}

// SubagentFigures are one subagent's log's figures and, in a session's report, its own
// context next to the parent's (SubagentContext).
type SubagentFigures struct {
	File string `json:"file"`
	// Thread is, for a subagent whose lines are in the session's log (Claude Code 1.x),
	// the uuid of its first line (File is then the session's log).
	Thread string `json:"thread,omitempty"`
	Recorded
	*SubagentContext
}

// SubagentContext is a subagent's context as its own log has it, and the call of the
// parent's it answers: what isolation bought the parent. Its figures are measured as the
// report measures a session (Measure, with the counter and window of its own model).
type SubagentContext struct {
	AgentID string `json:"agent_id,omitempty"`
	Model   string `json:"model,omitempty"`
	// Tokens is its context now, measured as the report's headline is (what the model
	// would see if its conversation were sent now), against EffectiveWindow.
	Tokens          int     `json:"tokens"`
	EffectiveWindow int     `json:"effective_window"`
	Utilization     float64 `json:"utilization"`
	Peak            Peak    `json:"peak"`
	// Categories and ByTool are what filled it, split as the parent's are.
	Categories Categories  `json:"categories"`
	ByTool     []ToolCount `json:"by_tool"`
	// Task is the parent's call that started it; absent when none in the parent's log
	// ties to it (Claude Code 2.0's warm-up subagents have none).
	Task *TaskCall `json:"task,omitempty"`
}

// Peak is the largest request of a conversation: Recorded, the largest prompt its log
// records (0 when it records none); Estimated, our count of the largest prompt (the
// messages before each reply, plus what the headline adds to them: the hidden part,
// schemas, attachments); Tokens the recorded figure where there is one, else the estimate.
type Peak struct {
	Tokens    int `json:"tokens"`
	Recorded  int `json:"recorded"`
	Estimated int `json:"estimated"`
}

// TaskCall is the parent's call that started a subagent, and what it cost the parent.
type TaskCall struct {
	ID          string `json:"id"`
	Tool        string `json:"tool"`
	Description string `json:"description,omitempty"`
	Type        string `json:"subagent_type,omitempty"`
	// LinkedBy says how the log was tied to the call: "agent id" (the id the result
	// records) or "prompt" (the call's prompt is the log's first message).
	LinkedBy string `json:"linked_by"`
	// Message is the parent's message that holds the call, -1 when the parent's
	// conversation no longer holds it (compacted); CallTokens and ResultTokens what the
	// call and its result cost the parent's context (0 when it holds them no longer).
	Message      int  `json:"message"`
	CallTokens   int  `json:"call_tokens"`
	ResultTokens int  `json:"result_tokens"`
	Answered     bool `json:"answered"`
}

// sessionFigures are the figures of the session read from name (a path, or "-") whose
// main log's recorded prompts are n.session; nil when it records none and has no
// subagents. With parent (the session's tally, and r its report) the main log's peak is
// given, and each subagent's context is measured too and tied to the call that started it.
func sessionFigures(ctx *cli.Context, name string, t *transcript.Transcript, n *Notes, parent *measure.Tally, r *Report) *SessionFigures {
	f := t.Format
	s := &SessionFigures{Requests: len(n.session)}
	for _, p := range n.session {
		s.PromptTokens += p
	}
	if parent != nil {
		p := peakOf(n.session, r)
		s.Peak = &p
	}
	if f == transcript.ClaudeCode && name != "-" {
		with := Recorded{Requests: s.Requests, PromptTokens: s.PromptTokens}
		var logs []transcript.SubagentLog
		add := func(sub *transcript.Transcript, path, thread string) {
			figures := SubagentFigures{File: path, Thread: thread, Recorded: recordedOf(sub)}
			if parent != nil {
				figures.SubagentContext = subagentContext(ctx, sub, path)
			}
			s.Subagents = append(s.Subagents, figures)
			logs = append(logs, transcript.SubagentOf(sub, path))
			with.Requests += figures.Requests
			with.PromptTokens += figures.PromptTokens
		}
		for _, path := range sessions.Subagents(name) {
			if sub, ok := readSubagent(path, ""); ok {
				add(sub, path, "")
			}
		}
		// Subagents whose lines are in the session's own log (Claude Code 1.x), each read
		// as --sidechains reads one.
		for _, root := range t.Sidechains() {
			if sub, ok := readSubagent(name, root); ok && sub.Subagent {
				add(sub, name, root)
			}
		}
		if len(s.Subagents) > 0 {
			s.WithSubagents = &with
		}
		if parent != nil {
			linkTasks(s.Subagents, logs, n.subagents.Calls, parent)
		}
	}
	if s.Requests == 0 && s.Subagents == nil {
		return nil
	}
	return s
}

// readSubagent reads a subagent's log, or with thread the subagent whose chain starts
// with that line of the session's log at path; false when it cannot be read.
func readSubagent(path, thread string) (*transcript.Transcript, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	t, err := transcript.Parse(b, transcript.Options{Format: transcript.ClaudeCode, Name: path, Sidechains: thread != "", Subagent: thread})
	if err != nil {
		return nil, false
	}
	return t, true
}

// recordedOf are a subagent's log's figures: the usage figures of its conversation (its
// requests after a compaction of its own, should it have made one).
func recordedOf(t *transcript.Transcript) Recorded {
	var r Recorded
	for _, u := range t.Usage {
		r.Requests++
		r.PromptTokens += u.Input
	}
	return r
}

// subagentContext measures a subagent's log as a session's is; nil when its model's
// counter or window cannot be had (an unknown --model, --tokenizer api without a key).
func subagentContext(ctx *cli.Context, t *transcript.Transcript, path string) *SubagentContext {
	counter, err := ctx.Counter(t.Format, t.Model)
	if err != nil {
		return nil
	}
	window, err := ctx.Window(t.Model, t.Usage)
	if err != nil {
		return nil
	}
	r := Measure(t, Options{File: path, Counter: counter, Window: window})
	c := &SubagentContext{Model: r.Model, Tokens: r.Tokens, EffectiveWindow: r.EffectiveWindow, Utilization: r.Utilization,
		Categories: r.Categories, ByTool: r.ByTool, Peak: peakOf(prompts(t.Usage), &r)}
	if c.Model == "" {
		c.Model = t.Model
	}
	return c
}

// prompts are the prompts of usage figures.
func prompts(us []transcript.Usage) []int {
	out := make([]int, len(us))
	for i, u := range us {
		out[i] = u.Input
	}
	return out
}

// peakOf is the largest request of a measured conversation (Peak) whose log records the
// prompts recorded.
func peakOf(recorded []int, r *Report) Peak {
	var p Peak
	for _, n := range recorded {
		p.Recorded = max(p.Recorded, n)
	}
	// What the headline adds to the messages is in every request: the hidden part, the
	// schemas, the attachments (all counted from the first request: a little early for
	// an attachment that comes later).
	fixed, before, largest := r.Tokens, 0, -1
	for _, m := range r.Messages {
		fixed -= m.Tokens
	}
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			largest = max(largest, before)
		}
		before += m.Tokens
	}
	if largest >= 0 {
		p.Estimated = fixed + largest
	}
	p.Tokens = p.Recorded
	if p.Tokens == 0 {
		p.Tokens = p.Estimated
	}
	return p
}

// linkTasks ties each subagent (its figures, and what its log says of where it came
// from) to the parent's call that started it (transcript.LinkSubagents), with what the
// call and its result cost the parent's context (tl).
func linkTasks(figures []SubagentFigures, logs []transcript.SubagentLog, calls []transcript.SubagentCall, tl *measure.Tally) {
	call, by := transcript.LinkSubagents(calls, logs)
	framing := tl.Framing()
	for i := range figures {
		c := figures[i].SubagentContext
		if c == nil {
			continue
		}
		c.AgentID = logs[i].AgentID
		if call[i] < 0 {
			continue
		}
		sc := &calls[call[i]]
		task := &TaskCall{ID: sc.ID, Tool: sc.Tool, Description: sc.Description, Type: sc.Type, LinkedBy: by[i],
			Message: -1, Answered: !sc.Answered.IsZero()}
		for mi := range tl.Messages {
			for _, b := range tl.Messages[mi].Blocks {
				if b.ToolID != sc.ID {
					continue
				}
				switch b.Kind {
				case transcript.ToolCall:
					task.Message = mi
					task.CallTokens += b.Tokens + framing.ToolCall
				case transcript.ToolResult:
					task.ResultTokens += b.Tokens + framing.ToolResult
					task.Answered = true
				}
			}
		}
		c.Task = task
	}
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
