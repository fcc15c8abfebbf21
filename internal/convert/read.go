package convert

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// read turns a parsed document into the neutral conversation.
func read(t *transcript.Transcript) *conversation {
	c := readHead(t)
	c.readMessages(t)
	return c
}

// readHead reads what a document says besides its messages: the request's parameters and
// tools, or a saved transcript's model. t may be a streamed document's structure, without
// its text: a JSONL transcript has no request root to read.
func readHead(t *transcript.Transcript) *conversation {
	c := &conversation{t: t, from: t.Format}
	if !t.Format.JSONL() && t.Doc != "" && gjson.Parse(t.Doc).IsObject() {
		v := rootFields(t)
		c.model = firstOf(v[0:1])
		c.maxTokens = firstOf(v[1:4])
		c.temperature = firstOf(v[4:5])
		c.topP = firstOf(v[5:6])
		c.stop = firstOf(v[6:8])
		readTools(v[8], c)
		c.stream = firstOf(v[9:10])
		readToolChoice(v[10], c)
		if p := firstOf(v[11:12]); p != "" {
			c.parallel = p
		}
		if _, body := DefaultTarget(t); !body {
			c.dropped = append(c.dropped, unknownRootKeys(t)...)
		}
	}
	if t.Format.JSONL() && c.model == "" && t.Model != "" {
		c.model = transcript.Quote(t.Model)
	}
	return c
}

// readMessages adds the messages of t to the conversation: all of a document's, or those of
// one stretch of a streamed document (t's Doc holds the text of that stretch), stretch
// after stretch in order.
func (c *conversation) readMessages(t *transcript.Transcript) {
	switch t.Format.Wire() {
	case transcript.MessagesWire:
		readAnthropic(t, c)
	case transcript.ChatWire:
		readOpenAI(t, c)
	case transcript.ResponsesWire:
		readResponses(t, c)
	}
	c.fieldLosses(t)
	for mi := range t.Messages {
		for bi := range t.Messages[mi].Blocks {
			if b := &t.Messages[mi].Blocks[bi]; b.Kind == transcript.Text && b.Type == "refusal" {
				c.refusals++
			}
		}
	}
}

// rootKeys are the members of a request's root object that read takes: the parameters the
// formats share (in the order readParams looks for them), then the tools.
var rootKeys = []string{"model", "max_tokens", "max_completion_tokens", "max_output_tokens", "temperature", "top_p", "stop_sequences", "stop", "tools", "stream", "tool_choice", "parallel_tool_calls"}

// bodyKeys are the members of a request body that hold the conversation.
var bodyKeys = []string{"messages", "input", "system", "instructions"}

// unknownRootKeys lists the members of a request body's root that read does not take, so
// that leaving them out is reported rather than silent.
func unknownRootKeys(t *transcript.Transcript) []string {
	var out []string
	gjson.Parse(rootObject(t)).ForEach(func(k, _ gjson.Result) bool {
		if name := k.String(); !slices.Contains(rootKeys, name) && !slices.Contains(bodyKeys, name) {
			out = append(out, name)
		}
		return true
	})
	return out
}

// readToolChoice reads tool_choice in the three shapes (Anthropic {type, name,
// disable_parallel_tool_use}; OpenAI "auto" | "none" | "required" or a named function).
func readToolChoice(v gjson.Result, c *conversation) {
	switch {
	case v.Type == gjson.String:
		c.choice = map[string]string{"auto": "auto", "none": "none", "required": "any"}[v.String()]
	case v.IsObject():
		g := v.Get("type").String()
		switch {
		case g == "auto" || g == "any" || g == "none":
			c.choice = g
		case g == "tool" && v.Get("name").Exists():
			c.choice, c.choiceTool = "tool", v.Get("name").String()
		case g == "function" && v.Get("function.name").Exists():
			c.choice, c.choiceTool = "tool", v.Get("function.name").String()
		case g == "function" && v.Get("name").Exists():
			c.choice, c.choiceTool = "tool", v.Get("name").String()
		}
		if d := v.Get("disable_parallel_tool_use"); d.Exists() {
			c.parallel = map[bool]string{true: "false", false: "true"}[d.Bool()]
		}
	}
	if v.Exists() && c.choice == "" {
		c.dropped = append(c.dropped, "tool_choice")
	}
}

// rootFields looks up rootKeys in the document's root object. gjson.Get reads every member
// before the one it looks for, and the whole object for a key that is absent, so the
// lookups read a copy of the root with the message array, most of the document, written
// as []. Every other member is the same there; the whole document is read only when one
// of the members looked up holds the array.
func rootFields(t *transcript.Transcript) []gjson.Result {
	if a := t.Array; t.Base == 0 && !a.IsZero() && a.Len() > 2 && a.End <= len(t.Doc) {
		small := rootObject(t)
		v := gjson.GetMany(small, rootKeys...)
		holds := false
		for _, r := range v {
			holds = holds || (r.Index <= a.Start && a.Start < r.Index+len(r.Raw))
		}
		if !holds {
			return v
		}
	}
	return gjson.GetMany(t.Doc, rootKeys...)
}

// rootObject is the document with its message array written as [] (see rootFields).
func rootObject(t *transcript.Transcript) string {
	if a := t.Array; t.Base == 0 && !a.IsZero() && a.Len() > 2 && a.End <= len(t.Doc) {
		return t.Doc[:a.Start] + "[]" + t.Doc[a.End:]
	}
	return t.Doc
}

// firstOf is the first value that is there and not null, as JSON text, or "".
func firstOf(vs []gjson.Result) string {
	for _, v := range vs {
		if v.Exists() && v.Type != gjson.Null {
			return v.Raw
		}
	}
	return ""
}

// readTools reads the three schema shapes: Anthropic {name, description, input_schema},
// Chat Completions {type: function, function: {name, description, parameters}}, Responses
// {type: function, name, description, parameters}. Anything else (server tools, custom
// tools) is kept as it was written, for its own wire.
func readTools(arr gjson.Result, c *conversation) {
	fam := c.from.Wire()
	arr.ForEach(func(_, v gjson.Result) bool {
		typ := v.Get("type").String()
		switch {
		case v.Get("input_schema").Exists():
			c.tools = append(c.tools, tool{name: v.Get("name").String(), description: v.Get("description").String(), schema: v.Get("input_schema").Raw, strict: v.Get("strict").Bool()})
		case typ == "function" && v.Get("function").IsObject():
			fn := v.Get("function")
			c.tools = append(c.tools, tool{name: fn.Get("name").String(), description: fn.Get("description").String(), schema: fn.Get("parameters").Raw, strict: fn.Get("strict").Bool()})
		case typ == "function":
			// The Responses API enforces the schema unless told not to.
			strict := v.Get("strict")
			c.tools = append(c.tools, tool{name: v.Get("name").String(), description: v.Get("description").String(), schema: v.Get("parameters").Raw, strict: !strict.Exists() || strict.Bool()})
		default:
			c.tools = append(c.tools, tool{name: v.Get("name").String(), raw: v.Raw, native: fam})
		}
		return true
	})
}

// isString reports whether a block is a message's whole content written as a string.
func isString(t *transcript.Transcript, b *transcript.Block) bool {
	raw := t.Slice(b.Span)
	return raw != "" && raw[0] == '"'
}

func readAnthropic(t *transcript.Transcript, c *conversation) {
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Header {
			c.systemS = len(m.Blocks) == 1 && isString(t, &m.Blocks[0])
			for bi := range m.Blocks {
				if b := &m.Blocks[bi]; b.Kind == transcript.Text {
					c.system = append(c.system, part{kind: textPart, body: b, src: t})
				}
			}
			continue
		}
		if t.Format == transcript.ClaudeCode && len(m.Lines) > 0 && gjson.Get(t.Slice(m.Lines[0]), "isMeta").Bool() {
			continue // Claude Code's own notes to the model about local commands
		}
		msg := message{role: m.Role, str: len(m.Blocks) == 1 && isString(t, &m.Blocks[0])}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if bi+1 < len(m.Blocks) && clineResult(&m.Blocks[bi+1]) && m.Blocks[bi+1].Lead == b.Span {
				continue // the label of the result after it, which carries it
			}
			if clineResult(b) {
				msg.parts = append(msg.parts, clinePart(t, m, bi))
				continue
			}
			msg.parts = append(msg.parts, anthropicPart(t, b))
		}
		c.messages = append(c.messages, msg)
	}
}

// clineResult reports whether a block is a Cline tool result that answers a call: a text
// the target gets as a tool result. (One with no call, from XML tool use, stays text.)
func clineResult(b *transcript.Block) bool {
	return b.Kind == transcript.ToolResult && b.Type == "text" && b.ToolID != ""
}

// clinePart is the tool result of Cline's labelled text, block bi of m: the text with its
// label, or the label block and the text when the label is a block of its own.
func clinePart(t *transcript.Transcript, m *transcript.Message, bi int) part {
	b := &m.Blocks[bi]
	p := part{kind: resultPart, id: b.ToolID, resultS: true, result: []part{{kind: textPart, body: b, src: t}}}
	if !b.Lead.IsZero() && bi > 0 && m.Blocks[bi-1].Span == b.Lead {
		p.resultS = false
		p.result = []part{{kind: textPart, body: &m.Blocks[bi-1], src: t}, {kind: textPart, body: b, src: t}}
	}
	return p
}

func anthropicPart(t *transcript.Transcript, b *transcript.Block) part {
	raw := t.Slice(b.Span)
	switch {
	case (b.Kind == transcript.Text || b.Kind == transcript.ToolResult) && b.Type == "text", b.Kind == transcript.Text && isString(t, b):
		return part{kind: textPart, body: b, src: t}
	case b.Kind == transcript.ToolCall && b.Type == "tool_use":
		args := "{}"
		if !b.Body.IsZero() {
			args = t.Slice(b.Body)
		}
		return part{kind: callPart, id: b.ToolID, name: b.ToolName, args: args}
	case b.Kind == transcript.ToolResult && b.Type == "tool_result":
		p := part{kind: resultPart, id: b.ToolID, isError: b.IsError}
		if isList(b, raw, "content") {
			for pi := range b.Parts {
				p.result = append(p.result, anthropicPart(t, &b.Parts[pi]))
			}
		} else {
			p.resultS = true
			p.result = []part{{kind: textPart, body: b, src: t}}
		}
		return p
	case b.Kind == transcript.Thinking && b.Type == "thinking":
		return part{kind: thinkingPart, raw: raw, native: transcript.MessagesWire}
	case b.Kind == transcript.Image && b.Image != nil:
		return part{kind: imagePart, image: imageOf(t, b, transcript.MessagesWire)}
	}
	what := b.Type
	switch b.Type {
	case "redacted_thinking":
		what = "redacted thinking"
	case "server_tool_use", "mcp_tool_use":
		what = "server tool call"
	case "document":
		what = "document"
	default:
		if strings.HasSuffix(b.Type, "_tool_result") {
			what = "server tool result"
		}
	}
	return part{kind: nativePart, raw: raw, native: transcript.MessagesWire, what: what}
}

// isList reports whether a tool result's content, the member key of its JSON object raw,
// is an array. The parser puts the parts of a list in b.Parts and anything else in b.Body,
// so only a result with neither (no content, null, or an empty list) needs a look at the
// JSON: gjson.Get would decode a string content only to be told it is not a list.
func isList(b *transcript.Block, raw, key string) bool {
	if len(b.Parts) > 0 {
		return true
	}
	if !b.Body.IsZero() {
		return false
	}
	return gjson.Get(raw, key).IsArray()
}

func imageOf(t *transcript.Transcript, b *transcript.Block, fam transcript.Wire) *image {
	ref := b.Image
	img := &image{MediaType: ref.MediaType, URL: ref.URL, Detail: ref.Detail}
	if ref.Data.IsZero() && ref.URL == "" {
		// Neither data nor a URL: an image by the id of an uploaded file (Anthropic's
		// source.file_id, Responses' file_id; Chat Completions has none).
		key := "file_id"
		if fam == transcript.MessagesWire {
			key = "source.file_id"
		}
		if id := gjson.Get(t.Slice(b.Span), key); id.Type == gjson.String {
			img.FileID, img.files = id.String(), fam
		}
	}
	if !ref.Data.IsZero() {
		data := gjson.Parse(t.Slice(ref.Data)).String()
		if rest, ok := strings.CutPrefix(data, "data:"); ok {
			// A data: URL: data:image/png;base64,AAAA.
			if comma := strings.IndexByte(rest, ','); comma >= 0 {
				meta := rest[:comma]
				img.MediaType, _, _ = strings.Cut(meta, ";")
				data = rest[comma+1:]
			}
		}
		img.Data = data
	}
	return img
}

func readOpenAI(t *transcript.Transcript, c *conversation) {
	// The name of the newest call of each id (ids are reused: the newest is the one a
	// result answers), to tell a tool message's name that says more than its call's.
	callNames := map[string]string{}
	for i := range t.Messages {
		m := &t.Messages[i]
		raw := t.Slice(m.Span)
		role := m.Role
		if role == "tool" || role == "function" {
			b := &m.Blocks[0]
			ids := b.ToolIDs
			if len(ids) == 0 {
				ids = []string{b.ToolID}
			}
			res := part{kind: resultPart}
			if isList(b, raw, "content") {
				for pi := range b.Parts {
					res.result = append(res.result, openaiPart(t, transcript.ChatWire, &b.Parts[pi]))
				}
			} else {
				res.resultS = true
				res.result = []part{{kind: textPart, body: b, src: t}}
			}
			msg := message{role: "tool"}
			for _, id := range ids {
				r := res
				r.id, r.name = id, b.ToolName
				if r.name != "" && r.name != callNames[id] {
					c.renamed++ // only Chat Completions can say it
				}
				msg.parts = append(msg.parts, r)
			}
			c.messages = append(c.messages, msg)
			continue
		}
		content := gjson.Get(raw, "content")
		msg := message{role: role, str: content.Type == gjson.String}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			switch {
			case b.Kind == transcript.ToolCall:
				p := part{kind: callPart, id: b.ToolID, name: b.ToolName, body: b, src: t}
				callNames[b.ToolID] = b.ToolName
				if b.Type == "custom" {
					p.custom = true
				}
				msg.parts = append(msg.parts, p)
			case b.Kind == transcript.Thinking:
				msg.parts = append(msg.parts, part{kind: thinkingPart})
			default:
				msg.parts = append(msg.parts, openaiPart(t, transcript.ChatWire, b))
			}
		}
		c.messages = append(c.messages, msg)
	}
}

// openaiPart reads a content part of Chat Completions or Responses (fam says which: a part
// neither reads, such as a Responses input_file, is kept whole for its own format only).
func openaiPart(t *transcript.Transcript, fam transcript.Wire, b *transcript.Block) part {
	switch b.Kind {
	case transcript.Text:
		return part{kind: textPart, body: b, src: t}
	case transcript.Image:
		if b.Image != nil {
			return part{kind: imagePart, image: imageOf(t, b, transcript.ChatWire)}
		}
	}
	return part{kind: nativePart, raw: t.Slice(b.Span), native: fam, what: orType(b.Type, "content part"), inContent: true}
}

func orType(typ, fallback string) string {
	if typ == "" {
		return fallback
	}
	return typ
}

func readResponses(t *transcript.Transcript, c *conversation) {
	// Consecutive items of one side (assistant items, outputs) become one message, as the
	// other formats hold them.
	push := func(role string, p part, str bool) {
		if n := len(c.messages); n > 0 && (role == "assistant" || role == "tool") && c.messages[n-1].role == role {
			c.messages[n-1].parts = append(c.messages[n-1].parts, p)
			return
		}
		c.messages = append(c.messages, message{role: role, parts: []part{p}, str: str})
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Header {
			c.systemS = true
			for bi := range m.Blocks {
				if b := &m.Blocks[bi]; b.Kind == transcript.Text {
					c.system = append(c.system, part{kind: textPart, body: b, src: t})
				}
			}
			continue
		}
		raw := t.Slice(m.Span)
		if strings.TrimSpace(raw) == "" {
			continue // a rollout record without a payload
		}
		typ := gjson.Get(raw, "type").String()
		switch {
		// A message that is a string: a Responses input given as one string, or the summary
		// of a Codex compacted record that holds no replacement history.
		case typ == "message" || (typ == "" && gjson.Get(raw, "role").Exists()) || (raw[0] == '"' && len(m.Blocks) > 0):
			content := gjson.Get(raw, "content")
			str := content.Type == gjson.String || (raw != "" && raw[0] == '"')
			msg := message{role: m.Role, str: str}
			for bi := range m.Blocks {
				msg.parts = append(msg.parts, openaiPart(t, transcript.ResponsesWire, &m.Blocks[bi]))
			}
			if m.Role == "assistant" && len(c.messages) > 0 && c.messages[len(c.messages)-1].role == "assistant" {
				for _, p := range msg.parts {
					push("assistant", p, false)
				}
				continue
			}
			c.messages = append(c.messages, msg)
		case typ == "reasoning":
			push("assistant", part{kind: thinkingPart, raw: raw, native: transcript.ResponsesWire}, false)
		case typ == "function_call" || typ == "custom_tool_call":
			b := &m.Blocks[0]
			push("assistant", part{kind: callPart, id: b.ToolID, name: b.ToolName, body: b, src: t, custom: typ == "custom_tool_call"}, false)
		case typ == "function_call_output" || typ == "custom_tool_call_output":
			b := &m.Blocks[0]
			p := part{kind: resultPart, id: b.ToolID}
			if isList(b, raw, "output") {
				for pi := range b.Parts {
					p.result = append(p.result, openaiPart(t, transcript.ResponsesWire, &b.Parts[pi]))
				}
			} else {
				p.resultS = true
				p.result = []part{{kind: textPart, body: b, src: t}}
			}
			push("tool", p, false)
		default:
			role := "assistant"
			if strings.HasSuffix(typ, "_output") {
				role = "tool"
			}
			push(role, part{kind: nativePart, raw: raw, native: transcript.ResponsesWire, what: orType(typ, "item")}, false)
		}
	}
}
