package transcript

import (
	"strings"
)

// textBlock makes a text block of a JSON string value.
func textBlock(v jval, typ string) Block {
	return Block{Kind: Text, Type: typ, Span: v.span(), Body: v.span()}
}

// otherBlock makes a block whose model-visible payload is its whole JSON value.
func otherBlock(v jval, typ string) Block {
	return Block{Kind: Other, Type: typ, Span: v.span(), Body: v.span(), BodyJSON: true}
}

// bodyOf points a block's body at a string value, or at the raw JSON of anything else.
func bodyOf(b *Block, v jval) {
	if !v.exists() || v.isNull() {
		return
	}
	b.Body = v.span()
	b.BodyJSON = !v.isString()
}

// headerMessage reads a top-level system prompt or instructions field: a string or a list
// of text blocks.
func headerMessage(v jval) Message {
	m := Message{Role: "system", Span: v.span(), Header: true}
	if v.isString() {
		m.Blocks = []Block{textBlock(v, "text")}
		return m
	}
	v.each(func(b jval) bool {
		m.Blocks = append(m.Blocks, anthropicBlock(b))
		return true
	})
	return m
}

// anthropicMessage reads a Messages API message, and returns its content value too, for
// checkElement.
func anthropicMessage(v jval) (Message, jval) {
	var f [2]jval
	v.fields(f[:], "role", "content")
	m := Message{Role: f[0].str(), Span: v.span()}
	m.Blocks = anthropicContent(f[1], m.Blocks)
	return m, f[1]
}

func anthropicContent(c jval, blocks []Block) []Block {
	switch {
	case c.isString():
		return append(blocks, textBlock(c, "text"))
	case c.isArray():
		c.elements(func(b jval) bool {
			blocks = append(blocks, anthropicBlock(b))
			return true
		})
	}
	return blocks
}

// The fields of an Anthropic content block that anthropicBlock reads, in one walk.
const (
	abType = iota
	abText
	abID
	abName
	abInput
	abThinking
	abData
	abSource
	abToolUseID
	abIsError
	abContent
	abSignature
	abFields
)

var anthropicBlockKeys = [abFields]string{"type", "text", "id", "name", "input", "thinking", "data", "source", "tool_use_id", "is_error", "content", "signature"}

func anthropicBlock(v jval) Block {
	if v.isString() { // a bare string in a content list
		return textBlock(v, "text")
	}
	var f [abFields]jval
	v.fields(f[:], anthropicBlockKeys[:]...)
	typ := f[abType].str()
	b := Block{Type: typ, Span: v.span()}
	switch typ {
	case "text":
		b.Kind = Text
		bodyOf(&b, f[abText])
	case "tool_use", "server_tool_use", "mcp_tool_use":
		b.Kind = ToolCall
		b.ToolID = f[abID].str()
		b.ToolName = f[abName].str()
		bodyOf(&b, f[abInput])
	case "thinking":
		b.Kind = Thinking
		bodyOf(&b, f[abThinking])
		if sig := f[abSignature]; sig.isString() && (!f[abThinking].isString() || stringLen(f[abThinking].raw) == 0) {
			b.Signature = stringLen(sig.raw)
		}
	case "redacted_thinking":
		b.Kind = Thinking
		b.Encrypted = len(f[abData].raw)
	case "image":
		b.Kind = Image
		b.Image = anthropicSource(f[abSource])
	default:
		if strings.HasSuffix(typ, "tool_result") {
			b.Kind = ToolResult
			b.ToolID = f[abToolUseID].str()
			b.IsError = f[abIsError].boolean()
			c := f[abContent]
			if c.isArray() {
				b.Parts = anthropicContent(c, nil)
			} else {
				bodyOf(&b, c)
			}
			return b
		}
		if typ == "document" {
			// A text document is read as text; a PDF is priced by the counter from its size.
			var s [2]jval
			f[abSource].fields(s[:], "type", "data")
			if s[0].str() == "text" {
				b.Kind = Text
				bodyOf(&b, s[1])
				return b
			}
		}
		b = otherBlock(v, typ)
	}
	return b
}

func anthropicSource(src jval) *ImageRef {
	var f [4]jval
	src.fields(f[:], "media_type", "type", "data", "url")
	img := &ImageRef{MediaType: f[0].str()}
	switch f[1].str() {
	case "base64":
		img.Data = f[2].span()
	default:
		img.URL = f[3].str()
	}
	return img
}

// The fields of a Chat Completions message that openaiMessage reads, in one walk.
const (
	omRole = iota
	omName
	omContent
	omToolCallIDs
	omToolCallID
	omReasoning
	omRefusal
	omToolCalls
	omFunctionCall
	omFields
)

var openaiMessageKeys = [omFields]string{"role", "name", "content", "tool_call_ids", "tool_call_id", "reasoning_content", "refusal", "tool_calls", "function_call"}

// openaiMessage reads a Chat Completions message, and returns its content value too, for
// checkElement.
func openaiMessage(v jval) (Message, jval) {
	var f [omFields]jval
	v.fields(f[:], openaiMessageKeys[:]...)
	m := Message{Role: f[omRole].str(), Span: v.span(), Name: f[omName].str()}
	content := f[omContent]
	if m.Role == "tool" || m.Role == "function" {
		b := Block{Kind: ToolResult, Type: m.Role, Span: v.span(), ToolName: m.Name}
		if ids := f[omToolCallIDs]; ids.isArray() {
			ids.elements(func(id jval) bool {
				b.ToolIDs = append(b.ToolIDs, id.str())
				return true
			})
			if len(b.ToolIDs) > 0 {
				b.ToolID = b.ToolIDs[0]
			}
		} else {
			b.ToolID = f[omToolCallID].str()
		}
		if content.isArray() {
			b.Parts = openaiParts(content, nil)
		} else {
			bodyOf(&b, content)
		}
		m.Blocks = []Block{b}
		return m, content
	}
	if r := f[omReasoning]; r.isString() {
		m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "reasoning_content", Span: r.span(), Body: r.span()})
	}
	switch {
	case content.isString():
		m.Blocks = append(m.Blocks, textBlock(content, "text"))
	case content.isArray():
		m.Blocks = openaiParts(content, m.Blocks)
	}
	if r := f[omRefusal]; r.isString() {
		m.Blocks = append(m.Blocks, textBlock(r, "refusal"))
	}
	f[omToolCalls].each(func(c jval) bool {
		var cf [4]jval
		c.fields(cf[:], "type", "id", "function", "custom")
		b := Block{Kind: ToolCall, Type: cf[0].str(), Span: c.span(), ToolID: cf[1].str()}
		var ff [3]jval
		if fn := cf[2]; fn.exists() {
			fn.fields(ff[:], "name", "arguments")
			bodyOf(&b, ff[1])
		} else {
			cf[3].fields(ff[:], "name", "input")
			bodyOf(&b, ff[1])
		}
		b.ToolName = ff[0].str()
		m.Blocks = append(m.Blocks, b)
		return true
	})
	if fc := f[omFunctionCall]; fc.isObject() {
		var ff [2]jval
		fc.fields(ff[:], "name", "arguments")
		b := Block{Kind: ToolCall, Type: "function_call", Span: fc.span(), ToolName: ff[0].str()}
		bodyOf(&b, ff[1])
		m.Blocks = append(m.Blocks, b)
	}
	return m, content
}

// openaiParts reads a list of content parts (Chat Completions and Responses share it).
func openaiParts(c jval, blocks []Block) []Block {
	c.each(func(p jval) bool {
		if p.isString() {
			blocks = append(blocks, textBlock(p, "text"))
			return true
		}
		var f [4]jval
		p.fields(f[:], "type", "text", "refusal", "image_url")
		typ := f[0].str()
		switch typ {
		case "text", "input_text", "output_text", "refusal", "summary_text", "reasoning_text":
			body := f[1]
			if typ == "refusal" && !body.exists() {
				body = f[2]
			}
			b := Block{Kind: Text, Type: typ, Span: p.span()}
			bodyOf(&b, body)
			blocks = append(blocks, b)
		case "image_url", "input_image":
			img := &ImageRef{}
			u := f[3]
			if u.isObject() {
				var uf [2]jval
				u.fields(uf[:], "detail", "url")
				img.Detail = uf[0].str()
				u = uf[1]
			} else {
				img.Detail = p.get("detail").str()
			}
			url := u.str()
			if strings.HasPrefix(url, "data:") {
				img.Data = u.span()
				if semi := strings.IndexAny(url, ";,"); semi > 5 {
					img.MediaType = url[5:semi]
				}
			} else {
				img.URL = url
			}
			blocks = append(blocks, Block{Kind: Image, Type: typ, Span: p.span(), Image: img})
		default:
			blocks = append(blocks, otherBlock(p, typ))
		}
		return true
	})
	return blocks
}

// The fields of a Responses item that responsesItem reads, in one walk.
const (
	riType = iota
	riRole
	riContent
	riSummary
	riEncrypted
	riCallID
	riName
	riOutput
	riArguments
	riInput
	riAction
	riFields
)

var responsesItemKeys = [riFields]string{"type", "role", "content", "summary", "encrypted_content", "call_id", "name", "output", "arguments", "input", "action"}

// responsesItem reads one Responses API input item as a message.
func responsesItem(v jval) Message {
	m, _ := responsesElement(v)
	return m
}

// responsesElement is responsesItem that also returns the content value of a message
// item (the zero jval for other items), for checkElement.
func responsesElement(v jval) (Message, jval) {
	var f [riFields]jval
	v.fields(f[:], responsesItemKeys[:]...)
	typ := f[riType].str()
	m := Message{Role: f[riRole].str(), Span: v.span()}
	switch typ {
	case "message", "":
		if m.Role == "" {
			m.Role = "other"
		}
		c := f[riContent]
		switch {
		case c.isString():
			m.Blocks = []Block{textBlock(c, "input_text")}
		case c.isArray():
			m.Blocks = openaiParts(c, nil)
		}
		return m, c
	case "reasoning":
		m.Role = "assistant"
		for _, list := range []jval{f[riSummary], f[riContent]} {
			list.each(func(p jval) bool {
				var pf [2]jval
				p.fields(pf[:], "type", "text")
				b := Block{Kind: Thinking, Type: pf[0].str(), Span: p.span()}
				bodyOf(&b, pf[1])
				m.Blocks = append(m.Blocks, b)
				return true
			})
		}
		if enc := f[riEncrypted]; enc.exists() {
			m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "encrypted_content", Span: enc.span(), Encrypted: len(enc.raw)})
		}
		return m, jval{}
	}
	if strings.HasSuffix(typ, "_output") {
		m.Role = "tool"
		b := Block{Kind: ToolResult, Type: typ, Span: v.span(), ToolID: f[riCallID].str()}
		out := f[riOutput]
		if out.isArray() {
			b.Parts = openaiParts(out, nil)
		} else {
			bodyOf(&b, out)
		}
		m.Blocks = []Block{b}
		return m, jval{}
	}
	m.Role = "assistant"
	if id := f[riCallID]; id.exists() {
		b := Block{Kind: ToolCall, Type: typ, Span: v.span(), ToolID: id.str(), ToolName: f[riName].str()}
		switch {
		case f[riArguments].exists():
			bodyOf(&b, f[riArguments])
		case f[riInput].exists():
			bodyOf(&b, f[riInput])
		default:
			bodyOf(&b, f[riAction])
			if b.ToolName == "" {
				b.ToolName = strings.TrimSuffix(typ, "_call")
			}
		}
		m.Blocks = []Block{b}
		return m, jval{}
	}
	m.Blocks = []Block{otherBlock(v, typ)}
	return m, jval{}
}
