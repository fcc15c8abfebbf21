package convert

import (
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// obj builds a JSON object from keys and raw JSON values in the order given; a pair whose
// value is "" is left out.
func obj(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(transcript.Quote(kv[i]))
		b.WriteByte(':')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func arr(items []string) string { return "[" + strings.Join(items, ",") + "]" }

var q = transcript.Quote

// leadingSystem splits the conversation's system prompt from the rest: the header system
// prompt and every system or developer message before the first other message.
func leadingSystem(c *conversation) (system []part, rest []message) {
	system = append(system, c.system...)
	i := 0
	for ; i < len(c.messages); i++ {
		m := &c.messages[i]
		if m.role != "system" && m.role != "developer" {
			break
		}
		system = append(system, m.parts...)
	}
	return system, c.messages[i:]
}

func texts(ps []part) []string {
	var out []string
	for _, p := range ps {
		if p.kind == textPart {
			out = append(out, p.text)
		}
	}
	return out
}

// jsonObject returns args when it is a JSON object, for an Anthropic tool_use input.
func jsonObject(args string) (string, bool) {
	s := strings.TrimSpace(args)
	if s == "" {
		return "{}", true
	}
	if gjson.Valid(s) && gjson.Parse(s).IsObject() {
		return s, true
	}
	return "", false
}

func dataURL(img *image) string {
	if img.URL != "" {
		return img.URL
	}
	return "data:" + img.MediaType + ";base64," + img.Data
}

// ---- Anthropic Messages ----

func writeAnthropic(c *conversation, l *losses) string {
	system, rest := leadingSystem(c)
	// Messages as the API wants them: roles alternate, so a tool message and the user
	// message after it are one user message, its results first.
	type aMsg struct {
		role            string
		str             string // the content as one string, when it was one
		results, blocks []string
	}
	var out []*aMsg
	add := func(role, str string, blocks []string, results []string) {
		if n := len(out); n > 0 && out[n-1].role == role {
			prev := out[n-1]
			if len(results) == 0 && len(prev.results) == 0 {
				// Two messages of content, not results and the user's words in one turn.
				l.add("merged", "Anthropic needs roles to alternate: consecutive messages of one role are merged into one")
			}
			if prev.str != "" {
				prev.blocks = append([]string{obj("type", q("text"), "text", prev.str)}, prev.blocks...)
				prev.str = ""
			}
			if str != "" {
				blocks = append([]string{obj("type", q("text"), "text", str)}, blocks...)
			}
			prev.results = append(prev.results, results...)
			prev.blocks = append(prev.blocks, blocks...)
			return
		}
		out = append(out, &aMsg{role: role, str: str, results: results, blocks: blocks})
	}
	for _, m := range rest {
		switch m.role {
		case "system", "developer":
			l.add("system-message", "a system or developer message after the conversation began is sent as a user message")
			var blocks []string
			for _, t := range texts(m.parts) {
				blocks = append(blocks, obj("type", q("text"), "text", q("["+m.role+"] "+t)))
			}
			add("user", "", blocks, nil)
			continue
		case "tool":
			m.role = "user"
		}
		if m.str && len(m.parts) == 1 && m.parts[0].kind == textPart {
			add(m.role, q(m.parts[0].text), nil, nil)
			continue
		}
		var blocks, results []string
		for _, p := range m.parts {
			b := anthropicBlock(p, m.role, l)
			switch {
			case b == "":
			case p.kind == resultPart:
				results = append(results, b)
			default:
				blocks = append(blocks, b)
			}
		}
		add(m.role, "", blocks, results)
	}
	var msgs []string
	for _, m := range out {
		if m.str != "" {
			msgs = append(msgs, obj("role", q(m.role), "content", m.str))
			continue
		}
		msgs = append(msgs, obj("role", q(m.role), "content", arr(append(m.results, m.blocks...))))
	}
	var sys string
	switch ts := texts(system); {
	case len(ts) == 0:
	case len(ts) == 1 && (c.systemS || len(c.system) == 0):
		sys = q(ts[0])
	default:
		var blocks []string
		for _, t := range ts {
			blocks = append(blocks, obj("type", q("text"), "text", q(t)))
		}
		sys = arr(blocks)
	}
	var tools []string
	for _, t := range c.tools {
		switch {
		case t.raw != "" && t.native == anthropicFamily:
			tools = append(tools, t.raw)
		case t.raw != "":
			l.add("tool-schema", "a tool that is not a plain function tool has no Anthropic form")
		default:
			tools = append(tools, obj("name", q(t.name), "description", quoteOpt(t.description), "input_schema", orEmptySchema(t.schema)))
		}
	}
	stop := c.stop
	if strings.HasPrefix(stop, `"`) {
		stop = "[" + stop + "]"
	}
	model := sameProvider(c, anthropicFamily, l)
	return obj("model", model, "max_tokens", c.maxTokens, "temperature", c.temperature, "top_p", c.topP,
		"stop_sequences", stop, "system", sys, "tools", optArr(tools), "messages", arr(msgs))
}

func anthropicBlock(p part, role string, l *losses) string {
	switch p.kind {
	case textPart:
		return obj("type", q("text"), "text", q(p.text))
	case imagePart:
		return anthropicImage(p.image)
	case callPart:
		input, ok := jsonObject(p.args)
		switch {
		case p.custom:
			l.add("custom-tool-call", "a free-form (custom) tool call's input is sent as {\"input\": TEXT}")
			input = obj("input", q(p.args))
		case !ok:
			l.add("arguments-not-json", "tool call arguments that are not a JSON object are sent as {\"arguments\": TEXT}")
			input = obj("arguments", q(p.args))
		}
		return obj("type", q("tool_use"), "id", q(p.id), "name", q(p.name), "input", input)
	case resultPart:
		var content string
		if p.resultS && len(p.result) == 1 && p.result[0].kind == textPart {
			content = q(p.result[0].text)
		} else {
			var parts []string
			for _, r := range p.result {
				if b := anthropicBlock(r, role, l); b != "" {
					parts = append(parts, b)
				}
			}
			content = arr(parts)
		}
		isErr := ""
		if p.isError {
			isErr = "true"
		}
		return obj("type", q("tool_result"), "tool_use_id", q(p.id), "content", content, "is_error", isErr)
	case thinkingPart:
		if p.native == anthropicFamily && p.raw != "" {
			return p.raw
		}
		l.add("reasoning", "reasoning from another provider cannot be sent to Anthropic (it carries no Anthropic signature)")
		return ""
	case nativePart:
		if p.native == anthropicFamily {
			return p.raw
		}
		l.add(p.what, p.what+" has no Anthropic form")
	}
	return ""
}

func anthropicImage(img *image) string {
	if img.URL != "" {
		return obj("type", q("image"), "source", obj("type", q("url"), "url", q(img.URL)))
	}
	return obj("type", q("image"), "source", obj("type", q("base64"), "media_type", q(img.MediaType), "data", q(img.Data)))
}

// sameProvider returns the source's model when the target is of the same provider (the
// two OpenAI formats are one provider); another provider's model name is dropped.
func sameProvider(c *conversation, target family, l *losses) string {
	if c.model == "" {
		return ""
	}
	from := familyOf(c.from)
	if from == responsesFamily {
		from = openaiFamily
	}
	if from == target {
		return c.model
	}
	l.add("model", "the model "+c.model+" belongs to another provider: name the target's model yourself")
	return ""
}

func quoteOpt(s string) string {
	if s == "" {
		return ""
	}
	return q(s)
}

func optArr(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return arr(items)
}

func orEmptySchema(s string) string {
	if s == "" {
		return `{"type":"object","properties":{}}`
	}
	return s
}

// ---- OpenAI Chat Completions ----

func writeOpenAI(c *conversation, l *losses) string {
	var msgs []string
	if ts := texts(c.system); len(ts) > 0 {
		if len(ts) == 1 {
			msgs = append(msgs, obj("role", q("system"), "content", q(ts[0])))
		} else {
			var parts []string
			for _, t := range ts {
				parts = append(parts, obj("type", q("text"), "text", q(t)))
			}
			msgs = append(msgs, obj("role", q("system"), "content", arr(parts)))
		}
	}
	for _, m := range c.messages {
		// Results first, each its own tool message; the rest of the message after them.
		var others []part
		for _, p := range m.parts {
			if p.kind != resultPart {
				others = append(others, p)
				continue
			}
			msgs = append(msgs, openaiTool(p, l))
		}
		if len(others) == 0 || m.role == "tool" {
			continue
		}
		if m.str && len(others) == 1 && others[0].kind == textPart {
			msgs = append(msgs, obj("role", q(m.role), "content", q(others[0].text)))
			continue
		}
		var content, calls []string
		var onlyText []string // the texts, while nothing but text is in content
		for _, p := range others {
			if p.kind == textPart {
				onlyText = append(onlyText, p.text)
			} else if p.kind == imagePart || p.kind == nativePart {
				onlyText = append(onlyText, "", "") // not one plain text any more
			}
			switch p.kind {
			case textPart:
				if len(calls) > 0 {
					l.add("block-order", "Chat Completions puts an assistant message's text before its tool calls: text that came after a call moves before it")
				}
				content = append(content, obj("type", q("text"), "text", q(p.text)))
			case imagePart:
				if m.role == "assistant" {
					l.add("assistant-image", "an image in an assistant message has no Chat Completions form")
					continue
				}
				content = append(content, openaiImage(p.image))
			case callPart:
				if p.custom {
					calls = append(calls, obj("id", q(p.id), "type", q("custom"), "custom", obj("name", q(p.name), "input", q(p.args))))
				} else {
					calls = append(calls, obj("id", q(p.id), "type", q("function"), "function", obj("name", q(p.name), "arguments", q(p.args))))
				}
			case thinkingPart:
				l.add("reasoning", "reasoning cannot be sent back through Chat Completions")
			case nativePart:
				if p.native == openaiFamily {
					content = append(content, p.raw)
					continue
				}
				l.add(p.what, p.what+" has no Chat Completions form")
			}
		}
		cont := "null"
		// One text: a plain string, as it came, or as the API itself answers beside tool calls.
		if (m.str || len(calls) > 0) && len(onlyText) == 1 && len(content) == 1 {
			cont = q(onlyText[0])
		} else if len(content) > 0 {
			cont = arr(content)
		} else if len(calls) == 0 {
			continue // nothing left to send
		}
		msgs = append(msgs, obj("role", q(m.role), "content", cont, "tool_calls", optArr(calls)))
	}
	var tools []string
	for _, t := range c.tools {
		switch {
		case t.raw != "" && t.native == openaiFamily:
			tools = append(tools, t.raw)
		case t.raw != "":
			l.add("tool-schema", "a tool that is not a plain function tool has no Chat Completions form")
		default:
			tools = append(tools, obj("type", q("function"), "function", obj("name", q(t.name), "description", quoteOpt(t.description), "parameters", orEmptySchema(t.schema))))
		}
	}
	model := sameProvider(c, openaiFamily, l)
	stop := c.stop
	return obj("model", model, "max_tokens", c.maxTokens, "temperature", c.temperature, "top_p", c.topP,
		"stop", stop, "tools", optArr(tools), "messages", arr(msgs))
}

func openaiTool(p part, l *losses) string {
	if p.isError {
		l.add("error-flag", "a tool result's error flag has no Chat Completions or Responses form (the text is kept)")
	}
	var content string
	if p.resultS && len(p.result) == 1 && p.result[0].kind == textPart {
		content = q(p.result[0].text)
	} else {
		var parts []string
		for _, r := range p.result {
			switch r.kind {
			case textPart:
				parts = append(parts, obj("type", q("text"), "text", q(r.text)))
			case imagePart:
				l.add("image-in-tool-result", "Chat Completions tool messages take text only: an image in a tool result is dropped")
			default:
				l.add(r.what, r.what+" in a tool result has no Chat Completions form")
			}
		}
		content = arr(parts)
	}
	return obj("role", q("tool"), "tool_call_id", q(p.id), "content", content)
}

func openaiImage(img *image) string {
	detail := ""
	if img.Detail != "" {
		detail = q(img.Detail)
	}
	return obj("type", q("image_url"), "image_url", obj("url", q(dataURL(img)), "detail", detail))
}

// ---- OpenAI Responses ----

func writeResponses(c *conversation, l *losses) string {
	system, rest := leadingSystem(c)
	custom := map[string]bool{} // call ids of free-form calls, whose outputs have their own type
	for _, m := range rest {
		for _, p := range m.parts {
			if p.kind == callPart && p.custom {
				custom[p.id] = true
			}
		}
	}
	var items []string
	for _, m := range rest {
		var content []string
		flush := func() {
			if len(content) > 0 {
				items = append(items, obj("type", q("message"), "role", q(m.role), "content", arr(content)))
				content = nil
			}
		}
		if m.str && len(m.parts) == 1 && m.parts[0].kind == textPart && m.role != "tool" {
			items = append(items, obj("type", q("message"), "role", q(m.role), "content", q(m.parts[0].text)))
			continue
		}
		for _, p := range m.parts {
			switch p.kind {
			case textPart:
				typ := "input_text"
				if m.role == "assistant" {
					typ = "output_text"
				}
				content = append(content, obj("type", q(typ), "text", q(p.text)))
			case imagePart:
				if m.role == "assistant" {
					l.add("assistant-image", "an image in an assistant message has no Responses form")
					continue
				}
				content = append(content, responsesImage(p.image))
			case callPart:
				flush()
				if p.custom {
					items = append(items, obj("type", q("custom_tool_call"), "call_id", q(p.id), "name", q(p.name), "input", q(p.args)))
				} else {
					items = append(items, obj("type", q("function_call"), "call_id", q(p.id), "name", q(p.name), "arguments", q(p.args)))
				}
			case resultPart:
				flush()
				items = append(items, responsesOutput(p, custom[p.id], l))
			case thinkingPart:
				flush()
				if p.native == responsesFamily && p.raw != "" {
					items = append(items, p.raw)
					continue
				}
				l.add("reasoning", "reasoning from another provider cannot be sent back through Responses")
			case nativePart:
				flush()
				if p.native == responsesFamily {
					items = append(items, p.raw)
					continue
				}
				l.add(p.what, p.what+" has no Responses form")
			}
		}
		flush()
	}
	var instructions string
	if ts := texts(system); len(ts) > 0 {
		instructions = q(strings.Join(ts, "\n\n"))
	}
	var tools []string
	for _, t := range c.tools {
		switch {
		case t.raw != "" && t.native == responsesFamily:
			tools = append(tools, t.raw)
		case t.raw != "":
			l.add("tool-schema", "a tool that is not a plain function tool has no Responses form")
		default:
			tools = append(tools, obj("type", q("function"), "name", q(t.name), "description", quoteOpt(t.description), "parameters", orEmptySchema(t.schema)))
		}
	}
	if c.stop != "" {
		l.add("stop-sequences", "Responses has no stop sequences")
	}
	model := sameProvider(c, openaiFamily, l)
	return obj("model", model, "max_output_tokens", c.maxTokens, "temperature", c.temperature, "top_p", c.topP,
		"instructions", instructions, "tools", optArr(tools), "input", arr(items))
}

func responsesImage(img *image) string {
	return obj("type", q("input_image"), "image_url", q(dataURL(img)), "detail", quoteOpt(img.Detail))
}

func responsesOutput(p part, custom bool, l *losses) string {
	if p.isError {
		l.add("error-flag", "a tool result's error flag has no Chat Completions or Responses form (the text is kept)")
	}
	typ := "function_call_output"
	if custom {
		typ = "custom_tool_call_output"
	}
	var out string
	if p.resultS && len(p.result) == 1 && p.result[0].kind == textPart {
		out = q(p.result[0].text)
	} else {
		var parts []string
		for _, r := range p.result {
			switch r.kind {
			case textPart:
				parts = append(parts, obj("type", q("input_text"), "text", q(r.text)))
			case imagePart:
				parts = append(parts, responsesImage(r.image))
			default:
				l.add(r.what, r.what+" in a tool result has no Responses form")
			}
		}
		out = arr(parts)
	}
	return obj("type", q(typ), "call_id", q(p.id), "output", out)
}
