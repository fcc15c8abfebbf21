package transcript

// The readers as they were before the single-walk scanner (scan.go): every field looked up
// with gjson from the start of its object. They are kept here, unchanged but for their
// names, as the reference the differential tests hold Parse to (reader_test.go).

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

type gjCCParser struct{ *ccParser }

type gjCodexParser struct{ *codexParser }

func gjNewRecordParser(f Format, o Options) recordParser {
	switch f {
	case ClaudeCode:
		return gjCCParser{&ccParser{sidechains: o.Sidechains, all: o.AllThreads, subagent: o.Subagent, byUUID: map[string]int{}, onlySidechains: true}}
	case Codex:
		return gjCodexParser{&codexParser{}}
	}
	return nil
}

func gjTextBlock(v gjson.Result, typ string) Block {
	return Block{Kind: Text, Type: typ, Span: gjSpanOf(v), Body: gjSpanOf(v)}
}

func gjOtherBlock(v gjson.Result, typ string) Block {
	return Block{Kind: Other, Type: typ, Span: gjSpanOf(v), Body: gjSpanOf(v), BodyJSON: true}
}

func gjBodyOf(b *Block, v gjson.Result) {
	if !v.Exists() || v.Type == gjson.Null {
		return
	}
	b.Body = gjSpanOf(v)
	b.BodyJSON = v.Type != gjson.String
}

func gjHeaderMessage(v gjson.Result) Message {
	m := Message{Role: "system", Span: gjSpanOf(v), Header: true}
	if v.Type == gjson.String {
		m.Blocks = []Block{gjTextBlock(v, "text")}
		return m
	}
	v.ForEach(func(_, b gjson.Result) bool {
		m.Blocks = append(m.Blocks, gjAnthropicBlock(b))
		return true
	})
	return m
}

func gjAnthropicMessage(v gjson.Result) Message {
	m := Message{Role: v.Get("role").String(), Span: gjSpanOf(v)}
	m.Blocks = gjAnthropicContent(v.Get("content"), m.Blocks)
	return m
}

func gjAnthropicContent(c gjson.Result, blocks []Block) []Block {
	switch {
	case c.Type == gjson.String:
		return append(blocks, gjTextBlock(c, "text"))
	case c.IsArray():
		c.ForEach(func(_, b gjson.Result) bool {
			blocks = append(blocks, gjAnthropicBlock(b))
			return true
		})
	}
	return blocks
}

func gjAnthropicBlock(v gjson.Result) Block {
	if v.Type == gjson.String { // a bare string in a content list
		return gjTextBlock(v, "text")
	}
	typ := v.Get("type").String()
	b := Block{Type: typ, Span: gjSpanOf(v)}
	switch typ {
	case "text":
		b.Kind = Text
		gjBodyOf(&b, v.Get("text"))
	case "tool_use", "server_tool_use", "mcp_tool_use":
		b.Kind = ToolCall
		b.ToolID = v.Get("id").String()
		b.ToolName = v.Get("name").String()
		gjBodyOf(&b, v.Get("input"))
	case "thinking":
		b.Kind = Thinking
		gjBodyOf(&b, v.Get("thinking"))
		if sig, th := v.Get("signature"), v.Get("thinking"); sig.Type == gjson.String && (th.Type != gjson.String || th.String() == "") {
			b.Signature = len(sig.String())
		}
	case "redacted_thinking":
		b.Kind = Thinking
		b.Encrypted = len(v.Get("data").Raw)
	case "image":
		b.Kind = Image
		b.Image = gjAnthropicSource(v.Get("source"))
	default:
		if strings.HasSuffix(typ, "tool_result") {
			b.Kind = ToolResult
			b.ToolID = v.Get("tool_use_id").String()
			b.IsError = v.Get("is_error").Bool()
			c := v.Get("content")
			if c.IsArray() {
				b.Parts = gjAnthropicContent(c, nil)
			} else {
				gjBodyOf(&b, c)
			}
			return b
		}
		if typ == "document" {
			// A text document is read as text; a PDF is priced by the counter from its size.
			if src := v.Get("source"); src.Get("type").String() == "text" {
				b.Kind = Text
				gjBodyOf(&b, src.Get("data"))
				return b
			}
		}
		b = gjOtherBlock(v, typ)
	}
	return b
}

func gjAnthropicSource(src gjson.Result) *ImageRef {
	img := &ImageRef{MediaType: src.Get("media_type").String()}
	switch src.Get("type").String() {
	case "base64":
		img.Data = gjSpanOf(src.Get("data"))
	default:
		img.URL = src.Get("url").String()
	}
	return img
}

func gjOpenaiMessage(v gjson.Result) Message {
	m := Message{Role: v.Get("role").String(), Span: gjSpanOf(v), Name: v.Get("name").String()}
	content := v.Get("content")
	if m.Role == "tool" || m.Role == "function" {
		b := Block{Kind: ToolResult, Type: m.Role, Span: gjSpanOf(v), ToolName: m.Name}
		if ids := v.Get("tool_call_ids"); ids.IsArray() {
			ids.ForEach(func(_, id gjson.Result) bool {
				b.ToolIDs = append(b.ToolIDs, id.String())
				return true
			})
			if len(b.ToolIDs) > 0 {
				b.ToolID = b.ToolIDs[0]
			}
		} else {
			b.ToolID = v.Get("tool_call_id").String()
		}
		if content.IsArray() {
			b.Parts = gjOpenaiParts(content, nil)
		} else {
			gjBodyOf(&b, content)
		}
		m.Blocks = []Block{b}
		return m
	}
	if r := v.Get("reasoning_content"); r.Type == gjson.String {
		m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "reasoning_content", Span: gjSpanOf(r), Body: gjSpanOf(r)})
	}
	switch {
	case content.Type == gjson.String:
		m.Blocks = append(m.Blocks, gjTextBlock(content, "text"))
	case content.IsArray():
		m.Blocks = gjOpenaiParts(content, m.Blocks)
	}
	if r := v.Get("refusal"); r.Type == gjson.String {
		m.Blocks = append(m.Blocks, gjTextBlock(r, "refusal"))
	}
	v.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		b := Block{Kind: ToolCall, Type: c.Get("type").String(), Span: gjSpanOf(c), ToolID: c.Get("id").String()}
		fn := c.Get("function")
		if !fn.Exists() {
			fn = c.Get("custom")
			gjBodyOf(&b, fn.Get("input"))
		} else {
			gjBodyOf(&b, fn.Get("arguments"))
		}
		b.ToolName = fn.Get("name").String()
		m.Blocks = append(m.Blocks, b)
		return true
	})
	if fc := v.Get("function_call"); fc.IsObject() {
		b := Block{Kind: ToolCall, Type: "function_call", Span: gjSpanOf(fc), ToolName: fc.Get("name").String()}
		gjBodyOf(&b, fc.Get("arguments"))
		m.Blocks = append(m.Blocks, b)
	}
	return m
}

func gjOpenaiParts(c gjson.Result, blocks []Block) []Block {
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Type == gjson.String {
			blocks = append(blocks, gjTextBlock(p, "text"))
			return true
		}
		typ := p.Get("type").String()
		switch typ {
		case "text", "input_text", "output_text", "refusal", "summary_text", "reasoning_text":
			key := "text"
			if typ == "refusal" && !p.Get("text").Exists() {
				key = "refusal"
			}
			b := Block{Kind: Text, Type: typ, Span: gjSpanOf(p)}
			gjBodyOf(&b, p.Get(key))
			blocks = append(blocks, b)
		case "image_url", "input_image":
			img := &ImageRef{}
			u := p.Get("image_url")
			if u.IsObject() {
				img.Detail = u.Get("detail").String()
				u = u.Get("url")
			} else {
				img.Detail = p.Get("detail").String()
			}
			url := u.String()
			if strings.HasPrefix(url, "data:") {
				img.Data = gjSpanOf(u)
				if semi := strings.IndexAny(url, ";,"); semi > 5 {
					img.MediaType = url[5:semi]
				}
			} else {
				img.URL = url
			}
			blocks = append(blocks, Block{Kind: Image, Type: typ, Span: gjSpanOf(p), Image: img})
		default:
			blocks = append(blocks, gjOtherBlock(p, typ))
		}
		return true
	})
	return blocks
}

func gjResponsesItem(v gjson.Result) Message {
	typ := v.Get("type").String()
	m := Message{Role: v.Get("role").String(), Span: gjSpanOf(v)}
	switch typ {
	case "message", "":
		if m.Role == "" {
			m.Role = "other"
		}
		c := v.Get("content")
		switch {
		case c.Type == gjson.String:
			m.Blocks = []Block{gjTextBlock(c, "input_text")}
		case c.IsArray():
			m.Blocks = gjOpenaiParts(c, nil)
		}
		return m
	case "reasoning":
		m.Role = "assistant"
		for _, key := range []string{"summary", "content"} {
			v.Get(key).ForEach(func(_, p gjson.Result) bool {
				b := Block{Kind: Thinking, Type: p.Get("type").String(), Span: gjSpanOf(p)}
				gjBodyOf(&b, p.Get("text"))
				m.Blocks = append(m.Blocks, b)
				return true
			})
		}
		if enc := v.Get("encrypted_content"); enc.Exists() {
			m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "encrypted_content", Span: gjSpanOf(enc), Encrypted: len(enc.Raw)})
		}
		return m
	}
	if strings.HasSuffix(typ, "_output") {
		m.Role = "tool"
		b := Block{Kind: ToolResult, Type: typ, Span: gjSpanOf(v), ToolID: v.Get("call_id").String()}
		out := v.Get("output")
		if out.IsArray() {
			b.Parts = gjOpenaiParts(out, nil)
		} else {
			gjBodyOf(&b, out)
		}
		m.Blocks = []Block{b}
		return m
	}
	m.Role = "assistant"
	if id := v.Get("call_id"); id.Exists() {
		b := Block{Kind: ToolCall, Type: typ, Span: gjSpanOf(v), ToolID: id.String(), ToolName: v.Get("name").String()}
		switch {
		case v.Get("arguments").Exists():
			gjBodyOf(&b, v.Get("arguments"))
		case v.Get("input").Exists():
			gjBodyOf(&b, v.Get("input"))
		default:
			gjBodyOf(&b, v.Get("action"))
			if b.ToolName == "" {
				b.ToolName = strings.TrimSuffix(typ, "_call")
			}
		}
		m.Blocks = []Block{b}
		return m
	}
	m.Blocks = []Block{gjOtherBlock(v, typ)}
	return m
}

func (p gjCCParser) record(seq int, r *Record, raw string) []Message {
	f := gjson.GetMany(raw, "uuid", "parentUuid", "isSidechain", "message")
	l := ccLine{uuid: keep(gjText(f[0])), parent: keep(gjText(f[1])), sidechain: f[2].Bool()}
	r.UUID, r.Parent = l.uuid, l.parent
	b := gjson.GetMany(raw, "logicalParentUuid", "subtype", "compactMetadata.preservedSegment.headUuid", "compactMetadata.preservedSegment.anchorUuid", "compactMetadata.preservedSegment.tailUuid")
	if l.boundary = b[0].String() != "" || b[1].String() == "compact_boundary"; l.boundary {
		l.logical = keep(b[0].String())
		if b[2].String() != "" && b[3].String() != "" {
			l.relinkHead, l.relinkAnchor, l.relinkTail = keep(b[2].String()), keep(b[3].String()), keep(b[4].String())
		}
	}
	if r.Type == "attachment" {
		// (attachments came after the scanner: the reference reads them as Parse does)
		typ, b, ok := attachmentBlock(recordValue(raw, r.Span.Start).get("attachment"))
		bs := []Block{b}
		detachBlocks(bs)
		l.attachType, l.attachment, l.attached = intern(typ), bs[0], ok
	}
	msg := f[3]
	l.message = (r.Type == "user" || r.Type == "assistant") && msg.IsObject()
	var out []Message
	if l.message {
		if !l.sidechain {
			p.onlySidechains = false
		} else {
			p.anySidechain = true
		}
		msg.Index += r.Span.Start
		if r.Type == "assistant" {
			l.msgID = keep(msg.Get("id").String())
		}
		m := gjAnthropicMessage(msg)
		if m.Role == "" {
			m.Role = r.Type // as Parse: the record's type names a role the message leaves out
		}
		for i := range m.Blocks {
			switch b := &m.Blocks[i]; {
			case b.Kind == ToolCall:
				l.calls = append(l.calls, keep(b.ToolID))
			case b.Type == "tool_result" && !l.answers:
				l.answer, l.answers = keep(b.ToolID), true
			}
		}
		markPinned(ClaudeCode, &m, raw, r.Span.Start) // not a reader: the same step after either reader
		l.pinned = m.Pinned
		l.role = intern(m.Role)
		g := gjson.GetMany(raw, "timestamp", "isCompactSummary")
		if ts, err := time.Parse(time.RFC3339Nano, g[0].String()); err == nil {
			l.stamp, l.stampOK = ts, true
		}
		l.summary = g[1].Bool()
		if model := msg.Get("model").String(); model != "" && model != "<synthetic>" {
			l.model = intern(model)
		}
		l.usage, l.counted = gjCcUsage(msg)
		out = []Message{m}
	}
	if l.uuid != "" {
		p.byUUID[l.uuid] = seq
	}
	p.lines = append(p.lines, l)
	return out
}

func gjCcUsage(msg gjson.Result) (us Usage, ok bool) {
	u := msg.Get("usage")
	if !u.IsObject() {
		return Usage{}, false
	}
	f := gjson.GetMany(u.Raw, "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
	us = Usage{CacheRead: int(f[1].Int()), CacheCreation: int(f[2].Int()), Output: int(f[3].Int())}
	us.Input = int(f[0].Int()) + us.CacheRead + us.CacheCreation
	if us.Input == 0 && us.Output == 0 {
		return Usage{}, false // synthetic messages carry zeroes
	}
	return us, true
}

func (p gjCodexParser) record(seq int, r *Record, raw string) []Message {
	f := gjson.GetMany(raw, "timestamp", "payload")
	stamp, payload := f[0].String(), f[1]
	payload.Index += r.Span.Start
	var out []Message
	add := func(m Message) {
		m.Time = parseTime(stamp, time.Time{})
		markCodexItem(&m, raw, r.Span.Start) // not a reader: the same step after either reader
		if m.Span.IsZero() {
			m.Span = r.Span
		}
		p.parts = append(p.parts, []Part{{Record: seq, Message: len(out)}})
		out = append(out, m)
		m.Blocks = nil
		m.Role, m.ID, m.Name = intern(m.Role), keep(m.ID), keep(m.Name)
		p.messages = append(p.messages, m)
	}
	switch r.Type {
	case "session_meta":
		// The base instructions are sent with every request.
		if ins := payload.Get("base_instructions.text"); ins.Type == gjson.String {
			add(gjHeaderMessage(ins))
		} else if ins := payload.Get("instructions"); ins.Type == gjson.String {
			add(gjHeaderMessage(ins))
		}
	case "turn_context":
		if m := payload.Get("model").String(); m != "" {
			p.model = intern(m)
		}
	case "response_item":
		m := gjResponsesItem(payload)
		m.Lines = []Span{r.Span}
		add(m)
	case "compacted":
		p.compact()
		if hist := payload.Get("replacement_history"); hist.IsArray() {
			hist.ForEach(func(_, it gjson.Result) bool {
				m := gjResponsesItem(it)
				m.Lines = []Span{r.Span}
				m.Summary = true
				add(m)
				return true
			})
		} else if msg := payload.Get("message"); msg.Type == gjson.String {
			add(Message{Role: "user", Span: gjSpanOf(msg), Lines: []Span{r.Span}, Summary: true,
				Blocks: []Block{gjTextBlock(msg, "input_text")}})
		}
	case "event_msg":
		switch payload.Get("type").String() {
		case "task_started", "turn_started":
			if w := int(payload.Get("model_context_window").Int()); w > 0 {
				p.window = w
			}
		}
		if payload.Get("type").String() != "token_count" {
			break
		}
		info := payload.Get("info")
		last := info.Get("last_token_usage")
		if !last.IsObject() {
			break
		}
		g := gjson.GetMany(last.Raw, "input_tokens", "cached_input_tokens", "output_tokens")
		if tot := info.Get("total_token_usage"); tot.IsObject() {
			var totals codexTotals
			for i, v := range gjson.GetMany(tot.Raw, "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens") {
				totals[i] = v.Int()
			}
			if p.hasTotals && totals == p.totals {
				break
			}
			p.totals, p.hasTotals = totals, true
		} else {
			p.hasTotals = false
		}
		p.usage = append(p.usage, Usage{
			After:     len(p.messages) - 1,
			Input:     int(g[0].Int()),
			CacheRead: int(g[1].Int()),
			Output:    int(g[2].Int()),
			Window:    cmp.Or(int(info.Get("model_context_window").Int()), p.window),
		})
	}
	return out
}

func gjRecordFormat(obj gjson.Result) Format {
	typ := obj.Get("type").String()
	if typ == "" {
		return ""
	}
	if codexRecordTypes[typ] && obj.Get("payload").Exists() {
		return Codex
	}
	if obj.Get("uuid").Exists() || obj.Get("sessionId").Exists() || obj.Get("parentUuid").Exists() ||
		typ == "summary" || typ == "file-history-snapshot" || typ == "permission-mode" {
		return ClaudeCode
	}
	return ""
}

func gjDetectJSONL(doc string, lines []Record) Format {
	for i, l := range lines {
		if i > 200 {
			break
		}
		if f := gjRecordFormat(gjson.Parse(doc[l.Span.Start:l.Span.End])); f != "" {
			return f
		}
	}
	return ""
}

func gjDetectJSON(root, arr gjson.Result) Format {
	var anth, oai, resp, cline int
	if root.IsObject() {
		if root.Get("input").Exists() || root.Get("instructions").Exists() {
			resp += 3
		}
		if root.Get("system").Exists() {
			anth += 3
		}
		if root.Get("history").Exists() {
			oai += 3
		}
	}
	if arr.Type == gjson.String {
		return Responses
	}
	n := 0
	arr.ForEach(func(_, m gjson.Result) bool {
		n++
		typ := m.Get("type").String()
		if responsesItemTypes[typ] {
			resp += 2
		}
		switch m.Get("role").String() {
		case "tool", "system", "developer", "function":
			oai++
		}
		if m.Get("tool_calls").Exists() || m.Get("tool_call_id").Exists() || m.Get("tool_call_ids").Exists() || m.Get("function_call").Exists() {
			oai += 2
		}
		user := m.Get("role").String() == "user"
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case "text":
				if _, n := clineLabel(b.Get("text").String()); user && n > 0 {
					cline++
				}
			case "tool_result":
				anth += 2
				if c := b.Get("content"); c.Type == gjson.String {
					if _, n := clineLabel(c.String()); n > 0 {
						cline++
					}
				}
			case "tool_use", "thinking", "redacted_thinking", "server_tool_use", "document":
				anth += 2
			case "image":
				if b.Get("source").Exists() {
					anth += 2
				}
			case "input_text", "output_text", "input_image", "input_file", "refusal":
				resp += 2
			case "image_url", "input_audio":
				oai += 2
			}
			return true
		})
		return n < 200
	})
	switch {
	case resp > anth && resp > oai:
		return Responses
	case cline > 0 && anth >= oai:
		return Cline
	case anth > oai:
		return Anthropic
	case oai > anth:
		return OpenAI
	}
	// Plain text chats read the same in both; the model name, if any, decides.
	model := strings.ToLower(root.Get("model").String())
	if strings.HasPrefix(model, "claude") {
		return Anthropic
	}
	return OpenAI
}

func gjParse(data []byte, o Options) (t *Transcript, err error) {
	// Detection is shared with Parse, and refuses duplicate keys as Parse does.
	defer catchDup(&err) // a panic leaves the other results unset
	doc := unsafe.String(unsafe.SliceData(data), len(data))
	if i := strings.IndexByte(doc, 0); i >= 0 {
		return nil, errorf(int64(i), "binary data (NUL byte), not a JSON document")
	}
	first := firstNonSpace(doc)
	if first < 0 {
		return parseEmpty(doc, o.Format)
	}
	if c := doc[first]; c != '{' && c != '[' {
		if !utf8.ValidString(doc[first:min(len(doc), first+64)]) {
			return nil, errorf(int64(first), "binary data, not a JSON document")
		}
		return nil, errorf(int64(first), "expected a JSON object or array, found %q", preview(doc[first:]))
	}

	if gjson.Valid(doc) {
		root := gjson.Parse(doc)
		f := o.Format
		if f == "" && root.IsObject() {
			f = gjRecordFormat(root)
		}
		if !f.JSONL() {
			return gjParseJSONDocument(doc, root, f, o)
		}
		if found := gjRecordFormat(root); o.Format != "" && found != o.Format && !(found == "" && gjRecordShaped(root, o.Format)) {
			return nil, formatMismatch(o.Format, found)
		}
		lines := splitRecords(doc)
		if err := gjValidateLines(doc, lines); err != nil {
			return nil, err
		}
		return gjParseJSONL(doc, lines, f, o)
	}
	lines := splitRecords(doc)
	// A document that is not one JSON value is JSONL when its first line is a whole value;
	// otherwise it is a broken JSON document and the error is about the document.
	if (o.Format == "" || o.Format.JSONL()) && len(lines) > 0 && gjson.Valid(doc[lines[0].Span.Start:lines[0].Span.End]) {
		if err := gjValidateLines(doc, lines); err != nil {
			return nil, err
		}
		f := o.Format
		if f == "" {
			if f = gjDetectJSONL(doc, lines); f == "" {
				return nil, &Error{Line: lines[0].Line, Offset: -1, Msg: "JSONL records of an unknown kind: expected Claude Code session records or Codex rollout records (use --format)"}
			}
		}
		return gjParseJSONL(doc, lines, f, o)
	}
	if o.Format != "" && !o.Format.JSONL() && len(lines) > 1 && gjson.Valid(doc[lines[0].Span.Start:lines[0].Span.End]) {
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("--format %s takes one JSON document, but the input is JSONL (%d records, one a line)", o.Format, len(lines))}
	}
	return nil, syntaxError(doc, 0)
}

func gjParseJSONDocument(doc string, root gjson.Result, f Format, o Options) (*Transcript, error) {
	arr, path, err := gjLocateArray(root, o.Path)
	if err != nil {
		return nil, err
	}
	if f == "" {
		f = gjDetectJSON(root, arr)
	}
	t := &Transcript{Format: f, Doc: doc, ArrayPath: path, Array: gjSpanOf(arr)}
	if root.IsObject() {
		if tools := root.Get("tools"); tools.IsArray() {
			t.Tools = gjSpanOf(tools)
		}
		t.Model = root.Get("model").String()
	}
	switch f {
	case Anthropic, Cline:
		if root.IsObject() {
			if sys := root.Get("system"); sys.Exists() && sys.Type != gjson.Null {
				t.Messages = append(t.Messages, gjHeaderMessage(sys))
			}
		}
		arr.ForEach(func(_, m gjson.Result) bool {
			t.Messages = append(t.Messages, gjAnthropicMessage(m))
			return true
		})
		if f == Cline {
			markCline(t) // not a reader: the same step after either reader
		}
	case OpenAI:
		arr.ForEach(func(_, m gjson.Result) bool {
			t.Messages = append(t.Messages, gjOpenaiMessage(m))
			return true
		})
	case Responses:
		if root.IsObject() {
			if ins := root.Get("instructions"); ins.Type == gjson.String {
				t.Messages = append(t.Messages, gjHeaderMessage(ins))
			}
		}
		if arr.Type == gjson.String {
			// "input" may be a bare string: one user message.
			t.Messages = append(t.Messages, Message{Role: "user", Span: gjSpanOf(arr), Blocks: []Block{gjTextBlock(arr, "input_text")}})
			break
		}
		arr.ForEach(func(_, it gjson.Result) bool {
			t.Messages = append(t.Messages, gjResponsesItem(it))
			return true
		})
	default:
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("a %s document is JSONL, one record a line, but the input is a single JSON value", f)}
	}
	markPinnedMessages(t) // not a reader: the same steps after either reader
	markSummaries(t)
	return t, nil
}

func gjLocateArray(root gjson.Result, path string) (gjson.Result, string, error) {
	if path != "" {
		arr := root.Get(path)
		if !arr.Exists() {
			return arr, path, &Error{Offset: -1, Msg: fmt.Sprintf("--path %q matches nothing in the document", path)}
		}
		if !arr.IsArray() {
			return arr, path, &Error{Offset: int64(arr.Index), Msg: fmt.Sprintf("--path %q is a %s, not an array of messages", path, typeName(arr))}
		}
		// Modifiers, literals and queries compute new JSON; edits need the document's own bytes.
		// Result.Get gives document offsets; root.Raw starts at root.Index (after white space).
		if doc, at := root.Raw, arr.Index-root.Index; at < 0 || at+len(arr.Raw) > len(doc) || doc[at:at+len(arr.Raw)] != arr.Raw {
			return arr, path, &Error{Offset: -1, Msg: fmt.Sprintf("--path %q computes a value instead of naming one in the document (modifiers, literals and queries are not supported)", path)}
		}
		return arr, path, nil
	}
	if root.IsArray() {
		return root, "", nil
	}
	for _, p := range []string{"messages", "input", "history"} {
		v := root.Get(p)
		if v.IsArray() || (p == "input" && v.Type == gjson.String) {
			return v, p, nil
		}
	}
	return gjson.Result{}, "", &Error{Offset: 0, Msg: "expected a conversation: an array of messages, or an object with \"messages\", \"input\" or \"history\"; use --path to name where the messages are"}
}

func gjValidateLines(doc string, lines []Record) error {
	for i := range lines {
		l := doc[lines[i].Span.Start:lines[i].Span.End]
		if e, truncated := checkLine(l, lines[i].Span.Start, lines[i].Line); e != nil {
			if truncated && i == len(lines)-1 {
				markTruncated(e)
			}
			return e
		}
		lines[i].Type = gjson.Get(l, "type").String()
	}
	return nil
}

// gjText is a JSON string's value, else "": a number or an object is no id at all.
func gjText(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	return r.Str
}

func gjSpanOf(r gjson.Result) Span {
	if !r.Exists() {
		// Result.Get gives a missing member its parent's Index; an absent value has no place.
		return Span{}
	}
	return Span{r.Index, r.Index + len(r.Raw)}
}

func gjParseJSONL(doc string, lines []Record, f Format, o Options) (*Transcript, error) {
	if o.Format != "" {
		if found := gjDetectJSONL(doc, lines); found != "" && found != o.Format {
			return nil, formatMismatch(o.Format, found)
		}
	}
	p := gjNewRecordParser(f, o)
	if p == nil {
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("the input has %d JSON records, one a line; %s documents are a single JSON value", len(lines), f)}
	}
	carried := make([][]Message, len(lines))
	for i := range lines {
		carried[i] = p.record(i, &lines[i], doc[lines[i].Span.Start:lines[i].Span.End])
	}
	ol := resolve(p, f, lines)
	t := &Transcript{Format: f, Doc: doc, Records: ol.Records, Usage: ol.Usage, Model: ol.Model, Warnings: ol.Warnings, Attachments: ol.Attachments, Subagent: ol.Subagent}
	if len(ol.Messages) > 0 {
		t.Messages = make([]Message, len(ol.Messages))
	}
	for i, m := range ol.Messages {
		if parts := ol.Parts[i]; len(parts) == 1 {
			m.Blocks = carried[parts[0].Record][parts[0].Message].Blocks
		} else {
			for _, pt := range parts {
				m.Blocks = append(m.Blocks, carried[pt.Record][pt.Message].Blocks...)
			}
		}
		t.Messages[i] = m
	}
	if pr := ol.Prior; pr != nil {
		tp := *pr
		tp.Messages = make([]Message, len(pr.Messages))
		for i, m := range pr.Messages {
			for _, pt := range pr.Parts[i] {
				m.Blocks = append(m.Blocks, carried[pt.Record][pt.Message].Blocks...)
			}
			tp.Messages[i] = m
		}
		t.Prior = &tp
	}
	return t, nil
}

// gjRecordShaped is recordShaped read with gjson: a lone object with a type and a message
// (Claude Code) or a payload (Codex), on which --format is trusted.
func gjRecordShaped(obj gjson.Result, f Format) bool {
	switch {
	case !obj.Get("type").Exists():
		return false
	case f == ClaudeCode:
		return obj.Get("message").Exists()
	case f == Codex:
		return obj.Get("payload").Exists()
	}
	return false
}
