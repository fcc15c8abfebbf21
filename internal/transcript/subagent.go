package transcript

import (
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// A Claude Code agent starts a subagent with a tool call (Task, Agent since 2.1) whose
// result is all the parent sees of it: the subagent's final answer. The subagent's own
// conversation, a context of its own, is kept elsewhere: in a log of its own
// (<session>/subagents/agent-<id>.jsonl since 2.1, agent-<id>.jsonl beside the session in
// 2.0) or, in 1.x, as isSidechain lines of the session's log. What ties the two is written
// in both:
//
//   - the agent id: every line of a subagent's log carries agentId (and its file name
//     ends with it); the parent's result line records it in toolUseResult.agentId (2.0 on),
//     and 2.1 writes it into the result's text too ("agentId: a2271d1 (for resuming ...)");
//   - the prompt: the call's input.prompt is the subagent's first user message, word for
//     word (all versions, and the only tie in 1.x, whose toolUseResult has no agentId);
//   - the time: the subagent's first line is written after the call and before its result.
//
// Warm-up subagents (2.0 starts one or two per session with the prompt "Warmup", answers
// them and sends nothing to the parent) have no call.

// SubagentTools are the tools a Claude Code agent starts a subagent with.
var SubagentTools = []string{"Task", "Agent"}

// IsSubagentTool reports whether a call of the named tool starts a subagent.
func IsSubagentTool(name string) bool {
	for _, t := range SubagentTools {
		if name == t {
			return true
		}
	}
	return false
}

// SubagentCall is a call that started a subagent, as the parent's log records it.
type SubagentCall struct {
	ID          string // the tool_use id
	Tool        string // Task or Agent
	Description string // input.description
	Type        string // input.subagent_type
	Prompt      string // input.prompt: the subagent's first message
	At          time.Time
	// AgentID is the subagent's id the result records (toolUseResult.agentId, or the
	// "agentId: " line of its text); "" before the result, or in 1.x.
	AgentID string
	// Answered is when the result was written (zero before it).
	Answered time.Time
}

// SubagentCalls gathers, record by record, the calls of a Claude Code log that start a
// subagent, with what their results record.
type SubagentCalls struct {
	Calls []SubagentCall
	byID  map[string]int
}

// Add notes the subagent calls and results of the records of t (one record of a streamed
// document, or a whole one). Only lines that name a subagent tool or an agent id are
// looked into.
func (s *SubagentCalls) Add(t *Transcript) {
	if t.Format != ClaudeCode {
		return
	}
	for i := range t.Records {
		r := &t.Records[i]
		switch r.Type {
		case "assistant":
			raw := t.Slice(r.Span)
			if !strings.Contains(raw, `"Task"`) && !strings.Contains(raw, `"Agent"`) {
				continue
			}
			s.addCalls(raw)
		case "user":
			if s.byID == nil {
				continue
			}
			raw := t.Slice(r.Span)
			if !strings.Contains(raw, "tool_use_id") {
				continue
			}
			s.addResult(raw)
		}
	}
}

func (s *SubagentCalls) addCalls(raw string) {
	g := gjson.GetMany(raw, "timestamp", "message.content")
	at, _ := time.Parse(time.RFC3339Nano, g[0].String())
	g[1].ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() != "tool_use" || !IsSubagentTool(b.Get("name").String()) {
			return true
		}
		id := b.Get("id").String()
		if _, seen := s.byID[id]; seen || id == "" {
			return true // a turn's later lines repeat nothing, but a copied line might
		}
		in := b.Get("input")
		c := SubagentCall{ID: strings.Clone(id), Tool: strings.Clone(b.Get("name").String()), At: at,
			Description: strings.Clone(in.Get("description").String()), Type: strings.Clone(in.Get("subagent_type").String()),
			Prompt: strings.Clone(in.Get("prompt").String())}
		if s.byID == nil {
			s.byID = map[string]int{}
		}
		s.byID[c.ID] = len(s.Calls)
		s.Calls = append(s.Calls, c)
		return true
	})
}

func (s *SubagentCalls) addResult(raw string) {
	g := gjson.GetMany(raw, "timestamp", "message.content", "toolUseResult.agentId")
	g[1].ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() != "tool_result" {
			return true
		}
		k, ok := s.byID[b.Get("tool_use_id").String()]
		if !ok {
			return true
		}
		c := &s.Calls[k]
		c.Answered, _ = time.Parse(time.RFC3339Nano, g[0].String())
		c.AgentID = strings.Clone(g[2].String())
		if c.AgentID == "" {
			c.AgentID = agentIDInText(b.Get("content"))
		}
		return true
	})
}

// agentIDInText is the id a result's text names on a line of its own ("agentId: X ..."),
// as Claude Code 2.1 writes it for the parent to resume the subagent with.
func agentIDInText(content gjson.Result) string {
	var id string
	look := func(text string) {
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, "agentId: "); ok && id == "" {
				id, _, _ = strings.Cut(rest, " ")
			}
		}
	}
	if content.Type == gjson.String {
		look(content.String())
	}
	content.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").String() == "text" {
			look(p.Get("text").String())
		}
		return true
	})
	return strings.Clone(id)
}

// SubagentLog is what a subagent's log says of where it came from.
type SubagentLog struct {
	// AgentID is the agentId its lines carry, else what its file name (agent-<id>.jsonl)
	// says.
	AgentID string
	// Prompt is its first user message's text (the call's input.prompt); "" when the log
	// starts with the subagent's reply (2.0 left the first request out of some logs).
	Prompt string
	// Start is the time of its first line.
	Start time.Time
}

// SubagentOf reads what a subagent's log t says of where it came from; file is its path
// ("" when it has none).
func SubagentOf(t *Transcript, file string) SubagentLog {
	var l SubagentLog
	for i := range t.Records {
		if t.Records[i].Message < 0 {
			continue // (in a session's log, the session's lines and other subagents')
		}
		raw := t.Slice(t.Records[i].Span)
		g := gjson.GetMany(raw, "agentId", "timestamp")
		if l.AgentID == "" {
			l.AgentID = g[0].String()
		}
		if l.Start.IsZero() {
			l.Start, _ = time.Parse(time.RFC3339Nano, g[1].String())
		}
		if l.AgentID != "" && !l.Start.IsZero() {
			break
		}
	}
	if l.AgentID == "" {
		base := file[strings.LastIndexAny(file, `/\`)+1:]
		if id, ok := strings.CutPrefix(strings.TrimSuffix(base, ".jsonl"), "agent-"); ok && strings.HasSuffix(base, ".jsonl") {
			l.AgentID = id
		}
	}
	if len(t.Messages) > 0 && t.Messages[0].Role == "user" {
		var b strings.Builder
		for k := range t.Messages[0].Blocks {
			if blk := &t.Messages[0].Blocks[k]; blk.Kind == Text {
				b.WriteString(t.BodyText(blk))
			}
		}
		l.Prompt = b.String()
	}
	return l
}

// How a subagent's log was tied to the call that started it.
const (
	ByAgentID = "agent id" // the id the call's result records is the log's
	ByPrompt  = "prompt"   // the call's prompt is the log's first message
)

// LinkSubagents ties each subagent log to the call that started it: by the agent id the
// call's result records, else by the prompt (of the calls not taken yet, the newest made
// before the log's first line, else the first). It returns, for each log, the index of
// its call in calls (-1 for none) and how it was tied ("" for none).
func LinkSubagents(calls []SubagentCall, logs []SubagentLog) (call []int, by []string) {
	call, by = make([]int, len(logs)), make([]string, len(logs))
	taken := make([]bool, len(calls))
	for i := range logs {
		call[i] = -1
		for k := range calls {
			if !taken[k] && calls[k].AgentID != "" && calls[k].AgentID == logs[i].AgentID {
				call[i], by[i], taken[k] = k, ByAgentID, true
				break
			}
		}
	}
	for i := range logs {
		if call[i] >= 0 || logs[i].Prompt == "" {
			continue
		}
		best := -1
		for k := range calls {
			if taken[k] || calls[k].Prompt != logs[i].Prompt || calls[k].AgentID != "" && calls[k].AgentID != logs[i].AgentID {
				continue
			}
			before := !logs[i].Start.IsZero() && !calls[k].At.After(logs[i].Start)
			switch {
			case best < 0:
				best = k
			case before && (calls[best].At.After(logs[i].Start) || calls[k].At.After(calls[best].At)):
				best = k
			}
		}
		if best >= 0 {
			call[i], by[i], taken[best] = best, ByPrompt, true
		}
	}
	return call, by
}

// Sidechains lists the subagents whose lines a Claude Code log holds beside the session's
// (Claude Code 1.x), as read without Options.Sidechains: the uuid of each chain's first
// line, in the order they start in the file; Options.Subagent reads one of them.
func (t *Transcript) Sidechains() []string {
	if t.Format != ClaudeCode || t.Subagent {
		return nil
	}
	byUUID := make(map[string]int)
	for i := range t.Records {
		if u := t.Records[i].UUID; u != "" {
			byUUID[u] = i
		}
	}
	var roots []string
	seen := make(map[string]bool)
	for i := range t.Records {
		if t.Records[i].Left != Sidechain {
			continue
		}
		k := i
		for steps := 0; steps < len(t.Records); steps++ {
			p, ok := byUUID[t.Records[k].Parent]
			if t.Records[k].Parent == "" || !ok {
				break
			}
			k = p
		}
		if root := t.Records[k].UUID; root != "" && !seen[root] {
			seen[root] = true
			roots = append(roots, root)
		}
	}
	return roots
}
