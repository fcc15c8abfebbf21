package testgen

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// Subagent is the log of one subagent a Session started: Path is where Claude Code keeps
// it, relative to the session's folder (<session id>/subagents/agent-<id>.jsonl since
// 2.1, agent-<id>.jsonl beside the session in 2.0); none for inline ones.
type Subagent struct {
	ID   string
	Path string
	Log  []byte
}

// Layouts of a session's subagents, as the versions of Claude Code keep them.
const (
	LayoutFolder = "folder" // 2.1: <session id>/subagents/agent-<17 hex>.jsonl; the id in the result's text too
	LayoutBeside = "beside" // 2.0: agent-<8 hex>.jsonl beside the session, naming it (sessionId)
	LayoutInline = "inline" // 1.x: the subagent's lines among the session's, no agent id anywhere
)

// Session writes a Claude Code session (o, whose Format must be claude-code) that, after
// the turns Generate writes, starts n subagents in one turn (one Task call each, the
// turn's lines sharing its message.id, as Claude Code writes parallel calls), each
// answering with a result. Each subagent is a conversation of its own, generated as a
// session is (a seed of its own, about o.Size/(2n) bytes) and written as Claude Code
// writes a subagent's log in the layout given: only its user and assistant records,
// isSidechain, each naming its agentId (2.0 on), its first message the call's prompt,
// its first line after the call and its result after its last. The parent's result line
// records what Claude Code records (toolUseResult: status, prompt, agentId, content,
// totals and the subagent's last usage; 1.x: content, totals and usage). With
// LayoutInline the subagents' lines are written into the session's log, between the call
// and its result, and no log of their own is returned.
func Session(o Options, n int, layout string) (session []byte, subs []Subagent, err error) {
	if o.Format != "claude-code" || n < 1 {
		return nil, nil, fmt.Errorf("testgen: subagents are a claude-code session's, at least one (got %s, %d)", o.Format, n)
	}
	var parent bytes.Buffer
	if err := Generate(&parent, o); err != nil {
		return nil, nil, err
	}
	p := parent.Bytes()
	last := lastRecord(p)
	if last.uuid == "" {
		return nil, nil, fmt.Errorf("testgen: the session has no chained record to go on from")
	}
	r := newRNG(o.Seed ^ 0x5ab_a9e7)
	clock := last.at.Add(2 * time.Second)
	stamp := func(d time.Duration) string {
		clock = clock.Add(d)
		return clock.Format("2006-01-02T15:04:05.000Z")
	}
	version, tool := "2.1.114", "Agent"
	switch layout {
	case LayoutBeside:
		version, tool = "2.0.55", "Task"
	case LayoutInline:
		version, tool = "1.0.85", "Task"
	case LayoutFolder:
	default:
		return nil, nil, fmt.Errorf("testgen: no subagent layout %q", layout)
	}
	common := func(b []byte, parentUUID string, sidechain bool) []byte {
		b = append(b, `{"parentUuid":`...)
		if parentUUID == "" {
			b = append(b, "null"...)
		} else {
			b = appendStr(b, parentUUID)
		}
		b = append(b, `,"isSidechain":`...)
		b = strconv.AppendBool(b, sidechain)
		b = append(b, `,"userType":"external","cwd":"/repo",`...)
		b = appendKV(b, "sessionId", last.session)
		return append(b, `,"version":"`+version+`","gitBranch":"main",`...)
	}

	// The subagents, each generated first: its prompt is its first message.
	type child struct {
		id, prompt, answer string
		log                []byte
		usage              gjson.Result
		tools              int
		start, end         time.Time
	}
	children := make([]child, n)
	start := clock.Add(3 * time.Second)
	for k := range children {
		c := &children[k]
		switch layout {
		case LayoutFolder:
			c.id = "a" + r.hex(8)
		case LayoutBeside:
			c.id = r.hex(4)
		}
		co := Options{Format: "claude-code", Size: max(o.Size/(2*n), 12_000), Seed: int64(r.u64() >> 1),
			sub: true, agentID: c.id, session: last.session, startedAt: start}
		var b bytes.Buffer
		if err := Generate(&b, co); err != nil {
			return nil, nil, err
		}
		c.log = b.Bytes()
		c.start, c.end = start, lastRecord(c.log).at
		start = c.end.Add(time.Second)
		lines := bytes.Split(bytes.TrimSpace(c.log), []byte("\n"))
		c.prompt = gjson.GetBytes(lines[0], "message.content").String()
		for _, l := range lines {
			if gjson.GetBytes(l, "type").String() != "assistant" {
				continue
			}
			c.usage = gjson.GetBytes(l, "message.usage")
			gjson.GetBytes(l, "message.content").ForEach(func(_, blk gjson.Result) bool {
				switch blk.Get("type").String() {
				case "text":
					c.answer = blk.Get("text").String()
				case "tool_use":
					c.tools++
				}
				return true
			})
		}
	}

	// The turn that starts them: one line per call, sharing the turn's id and usage.
	out := bytes.NewBuffer(append([]byte(nil), p...))
	msgID, reqID := r.base62("msg_01", 22), r.base62("req_011C", 18)
	prompt := last.prompt + last.output
	callOut := 0
	ids := make([]string, n)
	for k := range children {
		ids[k] = r.base62("toolu_01", 22)
		callOut += len(children[k].prompt)/4 + 30
	}
	prev := last.uuid
	var callUUID string
	for k := range children {
		c := &children[k]
		b := common(nil, prev, false)
		b = append(b, `"type":"assistant","message":{`...)
		b = appendKV(b, "id", msgID)
		b = append(b, `,"type":"message","role":"assistant","model":`...)
		b = appendStr(b, last.model)
		b = append(b, `,"content":[{"type":"tool_use",`...)
		b = appendKV(b, "id", ids[k])
		b = appendKV(append(b, ','), "name", tool)
		b = append(b, `,"input":{`...)
		b = appendKV(b, "description", fmt.Sprintf("%s the %s", title(r.pick(verbs)), r.pick(nouns)))
		if layout != LayoutInline {
			b = append(b, `,"subagent_type":"general-purpose"`...)
		}
		b = appendKV(append(b, ','), "prompt", c.prompt)
		b = append(b, `}}],"stop_reason":null,"stop_sequence":null,"usage":{`...)
		b = appendKI(b, "input_tokens", 3)
		b = appendKI(append(b, ','), "cache_creation_input_tokens", last.output+20)
		b = appendKI(append(b, ','), "cache_read_input_tokens", prompt-last.output-23)
		b = appendKI(append(b, ','), "output_tokens", callOut)
		b = append(b, `,"service_tier":"standard"}},`...)
		b = appendKV(b, "requestId", reqID)
		callUUID = r.uuid()
		b = appendKV(append(b, ','), "uuid", callUUID)
		b = appendKV(append(b, ','), "timestamp", stamp(time.Duration(200+k*300)*time.Millisecond))
		out.Write(append(b, "}\n"...))
		prev = callUUID
	}
	prompt += callOut
	added := 0
	for k := range children {
		c := &children[k]
		if layout == LayoutInline {
			out.Write(c.log)
		}
		clock = c.end.Add(400 * time.Millisecond)
		u := c.usage
		total := int(u.Get("input_tokens").Int() + u.Get("cache_read_input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("output_tokens").Int())
		took := c.end.Sub(c.start).Milliseconds()
		b := common(nil, prev, false)
		b = append(b, `"type":"user","message":{"role":"user","content":[{`...)
		b = appendKV(b, "tool_use_id", ids[k])
		b = append(b, `,"type":"tool_result","content":[{"type":"text",`...)
		b = appendKV(b, "text", c.answer)
		b = append(b, '}')
		text := len(c.answer)
		if layout == LayoutFolder {
			tail := fmt.Sprintf("agentId: %s (for resuming to continue this agent's work if needed)\n<usage>total_tokens: %d\ntool_uses: %d\nduration_ms: %d</usage>", c.id, total, c.tools, took)
			b = append(b, `,{"type":"text",`...)
			b = append(appendKV(b, "text", tail), '}')
			text += len(tail)
		}
		b = append(b, `]}]},`...)
		uuid := r.uuid()
		b = appendKV(b, "uuid", uuid)
		b = appendKV(append(b, ','), "timestamp", stamp(0))
		b = append(b, `,"toolUseResult":{`...)
		if layout != LayoutInline {
			b = append(b, `"status":"completed",`...)
			b = append(appendKV(b, "prompt", c.prompt), ',')
			b = append(appendKV(b, "agentId", c.id), ',')
		}
		b = append(b, `"content":[{"type":"text",`...)
		b = appendKV(b, "text", c.answer)
		b = append(b, `}],`...)
		b = append(appendKI(b, "totalDurationMs", int(took)), ',')
		b = append(appendKI(b, "totalTokens", total), ',')
		b = append(appendKI(b, "totalToolUseCount", c.tools), ',')
		b = append(b, `"usage":`...)
		b = append(b, u.Raw...)
		out.Write(append(b, "}}\n"...))
		prev = uuid
		added += text/3 + 10
	}

	// The parent's answer, having read the results.
	b := common(nil, prev, false)
	b = append(b, `"type":"assistant","message":{`...)
	b = appendKV(b, "id", r.base62("msg_01", 22))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendStr(b, last.model)
	b = append(b, `,"content":[{"type":"text","text":"The subagents are done; their findings are above."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{`...)
	b = appendKI(b, "input_tokens", 3)
	b = appendKI(append(b, ','), "cache_creation_input_tokens", added)
	b = appendKI(append(b, ','), "cache_read_input_tokens", prompt-3)
	b = appendKI(append(b, ','), "output_tokens", 14)
	b = append(b, `,"service_tier":"standard"}},`...)
	b = appendKV(b, "requestId", r.base62("req_011C", 18))
	b = appendKV(append(b, ','), "uuid", r.uuid())
	b = appendKV(append(b, ','), "timestamp", stamp(5*time.Second))
	out.Write(append(b, "}\n"...))

	if layout != LayoutInline {
		for _, c := range children {
			path := "agent-" + c.id + ".jsonl"
			if layout == LayoutFolder {
				path = last.session + "/subagents/" + path
			}
			subs = append(subs, Subagent{ID: c.id, Path: path, Log: c.log})
		}
	}
	return out.Bytes(), subs, nil
}

// lastOf is what a session goes on from: its newest chained record, its time, and its
// newest usage figure and model.
type lastOf struct {
	uuid, session, model string
	at                   time.Time
	prompt, output       int
}

// lastRecord reads a Claude Code log's lastOf.
func lastRecord(log []byte) lastOf {
	var l lastOf
	for _, line := range bytes.Split(log, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		g := gjson.GetManyBytes(line, "uuid", "timestamp", "sessionId", "type", "message.usage", "message.model")
		if g[0].String() != "" {
			l.uuid = g[0].String()
		}
		if at, err := time.Parse(time.RFC3339Nano, g[1].String()); err == nil {
			l.at = at
		}
		if g[2].String() != "" {
			l.session = g[2].String()
		}
		if g[3].String() == "assistant" && g[4].Exists() {
			u := g[4]
			l.prompt = int(u.Get("input_tokens").Int() + u.Get("cache_read_input_tokens").Int() + u.Get("cache_creation_input_tokens").Int())
			l.output = int(u.Get("output_tokens").Int())
			if m := g[5].String(); m != "" && m != "<synthetic>" {
				l.model = m
			}
		}
	}
	if l.model == "" {
		l.model = ccModel
	}
	return l
}
