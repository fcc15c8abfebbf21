package testgen

import (
	"strconv"
	"strings"
)

// codexEmitter writes a Codex CLI rollout: {"timestamp","type","payload"} lines whose
// response_item payloads are Responses API items, with event_msg lines mirroring messages
// and reporting token counts, turn_context before each user turn, and one compacted line in
// long sessions. Shell outputs are JSON inside a JSON string, as Codex stores them.
type codexEmitter struct {
	g     *gen
	b     []byte
	inner []byte
}

const codexEnv = "<environment_context>\n  <cwd>/repo</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"

func (e *codexEmitter) tail() int { return 1800 } // the closing message, its event and token_count

func (e *codexEmitter) start(typ string, lo, hi int) []byte {
	b := append(e.b[:0], '{')
	b = appendKV(b, "timestamp", e.g.stamp(lo, hi))
	b = appendKV(append(b, ','), "type", typ)
	return appendKey(append(b, ','), "payload")
}

func (e *codexEmitter) write(b []byte) {
	b = append(b, '}', '\n')
	e.b = b
	e.g.out.write(b)
}

func (e *codexEmitter) begin() {
	g := e.g
	b := e.start("session_meta", 0, 0)
	b = append(b, '{')
	b = appendKV(b, "id", g.sessionID)
	b = appendKV(append(b, ','), "timestamp", g.clock.Format("2006-01-02T15:04:05.000Z"))
	if g.pins != nil {
		// Codex 0.171: the base instructions under base_instructions.text, then the
		// initial context as two items, a developer message and a user message.
		b = append(b, `,"cwd":"/repo","originator":"codex_cli_rs","cli_version":"0.171.0","source":"cli","model_provider":"openai","base_instructions":{`...)
		b = append(appendKV(b, "text", g.system), `},"git":{`...)
	} else {
		version := "0.46.0"
		if g.f.on {
			version = "0.114.0"
		}
		b = append(b, `,"cwd":"/repo","originator":"codex_cli_rs","cli_version":"`+version+`",`...)
		b = appendKV(b, "instructions", g.system)
		b = append(b, `,"source":"cli","model_provider":"openai","git":{`...)
	}
	b = appendKV(b, "commit_hash", g.r.hex(20))
	b = append(b, `,"branch":"main","repository_url":"git@github.com:acme/widgets.git"}}`...)
	e.write(b)
	if p := g.pins; p != nil {
		e.write(p.appendDeveloperItem(e.start("response_item", 5, 40)))
		e.write(p.appendContextItem(e.start("response_item", 0, 2)))
		return
	}
	e.write(appendInputMessage(e.start("response_item", 5, 40), &userMsg{text: codexEnv}))
	if g.f.on {
		g.f.tok += g.f.n(codexEnv) + framingMessage
	}
}

func (e *codexEmitter) user(m *userMsg) {
	b := e.start("turn_context", 20000, 300000)
	b = append(b, `{"cwd":"/repo","approval_policy":"on-request","sandbox_policy":{"mode":"workspace-write","network_access":false,"exclude_tmpdir_env_var":false,"exclude_slash_tmp":false},"model":"gpt-5-codex","effort":"medium","summary":"auto"}`...)
	e.write(b)
	e.write(appendInputMessage(e.start("response_item", 1, 5), m))
	b = e.start("event_msg", 0, 2)
	b = append(b, `{"type":"user_message",`...)
	b = appendKV(b, "message", m.text)
	e.write(append(b, `,"images":[]}`...))
}

func (e *codexEmitter) assistant(t *turn) {
	g := e.g
	switch {
	case t.thinking != "" && g.f.on:
		// The summary is what Codex shows and logs; the reasoning is in the payload.
		b := e.start("event_msg", 1500, 9000)
		b = append(b, `{"type":"agent_reasoning",`...)
		e.write(append(appendKV(b, "text", t.summary), '}'))
		b = append(e.start("response_item", 0, 3), `{"type":"reasoning","summary":[{"type":"summary_text",`...)
		b = append(appendKV(b, "text", t.summary), `}],"content":null,`...)
		b = appendKV(b, "encrypted_content", "gAAAAAB"+strings.TrimRight(g.f.r.b64(4*t.think+g.f.r.between(0, 24)), "="))
		e.write(append(b, '}'))
	case t.thinking != "":
		b := e.start("event_msg", 1500, 9000)
		b = append(b, `{"type":"agent_reasoning",`...)
		e.write(append(appendKV(b, "text", t.thinking), '}'))
		e.write(g.appendReasoning(e.start("response_item", 0, 3), false, t.thinking))
	}
	if t.text != "" {
		b := e.start("event_msg", 300, 4000)
		b = append(b, `{"type":"agent_message",`...)
		e.write(append(appendKV(b, "message", t.text), '}'))
		e.write(appendOutputMessage(e.start("response_item", 0, 3), t.text))
	}
	for _, c := range t.calls {
		e.write(appendFunctionCall(e.start("response_item", 200, 2500), c, true))
	}
	e.tokenCount(t.usage)
}

func appendTokenUsage(b []byte, in, cached, out, reasoning int) []byte {
	b = append(b, '{')
	b = appendKI(b, "input_tokens", in)
	b = appendKI(append(b, ','), "cached_input_tokens", cached)
	b = appendKI(append(b, ','), "output_tokens", out)
	b = appendKI(append(b, ','), "reasoning_output_tokens", reasoning)
	b = appendKI(append(b, ','), "total_tokens", in+out)
	return append(b, '}')
}

func (e *codexEmitter) tokenCount(u usage) {
	g := e.g
	b := e.start("event_msg", 5, 60)
	b = append(b, `{"type":"token_count","info":{"total_token_usage":`...)
	b = appendTokenUsage(b, g.total.in, g.total.read, g.total.out, g.total.reasoning)
	b = append(b, `,"last_token_usage":`...)
	b = appendTokenUsage(b, u.in+u.read+u.create, u.read, u.out, u.reasoning)
	b = append(b, `,"model_context_window":258400},"rate_limits":{"primary":{`...)
	b = appendKF(b, "used_percent", float64(min(99, g.step/4)))
	b = append(b, `,"window_minutes":299,`...)
	b = appendKI(b, "resets_in_seconds", g.r.between(60, 17000))
	b = append(b, `},"secondary":{`...)
	b = appendKF(b, "used_percent", float64(min(99, g.step/40)))
	b = append(b, `,"window_minutes":10079,`...)
	b = appendKI(b, "resets_in_seconds", g.r.between(3600, 600000))
	e.write(append(b, "}}}"...))
}

func (e *codexEmitter) results(t *turn) {
	for _, c := range t.calls {
		in := append(e.inner[:0], '{')
		in = appendKV(in, "output", c.text)
		in = append(in, `,"metadata":{`...)
		in = appendKI(in, "exit_code", c.exit)
		in = appendKey(append(in, ','), "duration_seconds")
		in = strconv.AppendFloat(in, c.dur, 'f', 1, 64)
		in = append(in, "}}"...)
		e.inner = in
		b := e.start("response_item", 50, int(c.dur*1000)+100)
		b = append(b, `{"type":"function_call_output",`...)
		b = appendKV(b, "call_id", c.id)
		b = appendKey(append(b, ','), "output")
		b = appendStr(b, string(in))
		e.write(append(b, '}'))
		if e.g.f.on {
			e.g.f.result(e.g, string(in))
		}
	}
	if e.g.f.on && len(t.calls) > 0 {
		e.tokenCount(t.usage) // 0.101 and 0.114 write the request's figure again here
	}
}

// compact writes the line Codex leaves when it compacts history: the summary and the items
// that replace everything before it.
func (e *codexEmitter) compact(summary string) {
	g := e.g
	b := e.start("compacted", 500, 20000)
	b = append(b, '{')
	b = appendKV(b, "message", summary)
	b = append(b, `,"replacement_history":[`...)
	if p := g.pins; p != nil {
		// Codex 0.171 opens the replacement history with its initial context again.
		b = append(p.appendContextItem(append(p.appendDeveloperItem(b), ',')), ',')
		b = appendInputMessage(b, &userMsg{text: g.request})
	} else {
		b = appendInputMessage(b, &userMsg{text: codexEnv})
		b = appendInputMessage(append(b, ','), &userMsg{text: g.request})
	}
	b = appendInputMessage(append(b, ','), &userMsg{text: "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model:\n\n" + summary})
	e.write(append(b, "]}"...))
	if g.f.on {
		g.f.compacted(g, codexEnv, g.request, "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model:\n\n"+summary)
	}
}

func (e *codexEmitter) end() {}
