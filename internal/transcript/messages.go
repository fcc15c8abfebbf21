package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// textBlock makes a text block of a JSON string value.
func textBlock(v gjson.Result, typ string) Block {
	return Block{Kind: Text, Type: typ, Span: spanOf(v), Body: spanOf(v)}
}

// otherBlock makes a block whose model-visible payload is its whole JSON value.
func otherBlock(v gjson.Result, typ string) Block {
	return Block{Kind: Other, Type: typ, Span: spanOf(v), Body: spanOf(v), BodyJSON: true}
}

// bodyOf points a block's body at a string value, or at the raw JSON of anything else.
func bodyOf(b *Block, v gjson.Result) {
	if !v.Exists() || v.Type == gjson.Null {
		return
	}
	b.Body = spanOf(v)
	b.BodyJSON = v.Type != gjson.String
}

// headerMessage reads a top-level system prompt or instructions field: a string or a list
// of text blocks.
func headerMessage(v gjson.Result) Message {
	m := Message{Role: "system", Span: spanOf(v), Header: true}
	if v.Type == gjson.String {
		m.Blocks = []Block{textBlock(v, "text")}
		return m
	}
	v.ForEach(func(_, b gjson.Result) bool {
		m.Blocks = append(m.Blocks, anthropicBlock(b))
		return true
	})
	return m
}

// anthropicMessage reads a Messages API message (also the message of a Claude Code record).
func anthropicMessage(v gjson.Result) Message {
	m := Message{Role: v.Get("role").String(), Span: spanOf(v)}
	m.Blocks = anthropicContent(v.Get("content"), m.Blocks)
	return m
}

func anthropicContent(c gjson.Result, blocks []Block) []Block {
	switch {
	case c.Type == gjson.String:
		return append(blocks, textBlock(c, "text"))
	case c.IsArray():
		c.ForEach(func(_, b gjson.Result) bool {
			blocks = append(blocks, anthropicBlock(b))
			return true
		})
	}
	return blocks
}

func anthropicBlock(v gjson.Result) Block {
	if v.Type == gjson.String { // a bare string in a content list
		return textBlock(v, "text")
	}
	typ := v.Get("type").String()
	b := Block{Type: typ, Span: spanOf(v)}
	switch typ {
	case "text":
		b.Kind = Text
		bodyOf(&b, v.Get("text"))
	case "tool_use", "server_tool_use", "mcp_tool_use":
		b.Kind = ToolCall
		b.ToolID = v.Get("id").String()
		b.ToolName = v.Get("name").String()
		bodyOf(&b, v.Get("input"))
	case "thinking":
		b.Kind = Thinking
		bodyOf(&b, v.Get("thinking"))
	case "redacted_thinking":
		b.Kind = Thinking
		b.Encrypted = len(v.Get("data").Raw)
	case "image":
		b.Kind = Image
		b.Image = anthropicSource(v.Get("source"))
	default:
		if strings.HasSuffix(typ, "tool_result") {
			b.Kind = ToolResult
			b.ToolID = v.Get("tool_use_id").String()
			b.IsError = v.Get("is_error").Bool()
			c := v.Get("content")
			if c.IsArray() {
				b.Parts = anthropicContent(c, nil)
			} else {
				bodyOf(&b, c)
			}
			return b
		}
		if typ == "document" {
			// A text document is read as text; a PDF is priced by the counter from its size.
			if src := v.Get("source"); src.Get("type").String() == "text" {
				b.Kind = Text
				bodyOf(&b, src.Get("data"))
				return b
			}
		}
		b = otherBlock(v, typ)
	}
	return b
}

func anthropicSource(src gjson.Result) *ImageRef {
	img := &ImageRef{MediaType: src.Get("media_type").String()}
	switch src.Get("type").String() {
	case "base64":
		img.Data = spanOf(src.Get("data"))
	default:
		img.URL = src.Get("url").String()
	}
	return img
}

// openaiMessage reads a Chat Completions message.
func openaiMessage(v gjson.Result) Message {
	m := Message{Role: v.Get("role").String(), Span: spanOf(v), Name: v.Get("name").String()}
	content := v.Get("content")
	if m.Role == "tool" || m.Role == "function" {
		b := Block{Kind: ToolResult, Type: m.Role, Span: spanOf(v), ToolName: m.Name}
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
			b.Parts = openaiParts(content, nil)
		} else {
			bodyOf(&b, content)
		}
		m.Blocks = []Block{b}
		return m
	}
	if r := v.Get("reasoning_content"); r.Type == gjson.String {
		m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "reasoning_content", Span: spanOf(r), Body: spanOf(r)})
	}
	switch {
	case content.Type == gjson.String:
		m.Blocks = append(m.Blocks, textBlock(content, "text"))
	case content.IsArray():
		m.Blocks = openaiParts(content, m.Blocks)
	}
	if r := v.Get("refusal"); r.Type == gjson.String {
		m.Blocks = append(m.Blocks, textBlock(r, "refusal"))
	}
	v.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		b := Block{Kind: ToolCall, Type: c.Get("type").String(), Span: spanOf(c), ToolID: c.Get("id").String()}
		fn := c.Get("function")
		if !fn.Exists() {
			fn = c.Get("custom")
			bodyOf(&b, fn.Get("input"))
		} else {
			bodyOf(&b, fn.Get("arguments"))
		}
		b.ToolName = fn.Get("name").String()
		m.Blocks = append(m.Blocks, b)
		return true
	})
	if fc := v.Get("function_call"); fc.IsObject() {
		b := Block{Kind: ToolCall, Type: "function_call", Span: spanOf(fc), ToolName: fc.Get("name").String()}
		bodyOf(&b, fc.Get("arguments"))
		m.Blocks = append(m.Blocks, b)
	}
	return m
}

// openaiParts reads a list of content parts (Chat Completions and Responses share it).
func openaiParts(c gjson.Result, blocks []Block) []Block {
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Type == gjson.String {
			blocks = append(blocks, textBlock(p, "text"))
			return true
		}
		typ := p.Get("type").String()
		switch typ {
		case "text", "input_text", "output_text", "refusal", "summary_text", "reasoning_text":
			key := "text"
			if typ == "refusal" && !p.Get("text").Exists() {
				key = "refusal"
			}
			b := Block{Kind: Text, Type: typ, Span: spanOf(p)}
			bodyOf(&b, p.Get(key))
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
				img.Data = spanOf(u)
				if semi := strings.IndexAny(url, ";,"); semi > 5 {
					img.MediaType = url[5:semi]
				}
			} else {
				img.URL = url
			}
			blocks = append(blocks, Block{Kind: Image, Type: typ, Span: spanOf(p), Image: img})
		default:
			blocks = append(blocks, otherBlock(p, typ))
		}
		return true
	})
	return blocks
}

// responsesItem reads one Responses API input item as a message.
func responsesItem(v gjson.Result) Message {
	typ := v.Get("type").String()
	m := Message{Role: v.Get("role").String(), Span: spanOf(v)}
	switch typ {
	case "message", "":
		if m.Role == "" {
			m.Role = "other"
		}
		c := v.Get("content")
		switch {
		case c.Type == gjson.String:
			m.Blocks = []Block{textBlock(c, "input_text")}
		case c.IsArray():
			m.Blocks = openaiParts(c, nil)
		}
		return m
	case "reasoning":
		m.Role = "assistant"
		for _, key := range []string{"summary", "content"} {
			v.Get(key).ForEach(func(_, p gjson.Result) bool {
				b := Block{Kind: Thinking, Type: p.Get("type").String(), Span: spanOf(p)}
				bodyOf(&b, p.Get("text"))
				m.Blocks = append(m.Blocks, b)
				return true
			})
		}
		if enc := v.Get("encrypted_content"); enc.Exists() {
			m.Blocks = append(m.Blocks, Block{Kind: Thinking, Type: "encrypted_content", Span: spanOf(enc), Encrypted: len(enc.Raw)})
		}
		return m
	}
	if strings.HasSuffix(typ, "_output") {
		m.Role = "tool"
		b := Block{Kind: ToolResult, Type: typ, Span: spanOf(v), ToolID: v.Get("call_id").String()}
		out := v.Get("output")
		if out.IsArray() {
			b.Parts = openaiParts(out, nil)
		} else {
			bodyOf(&b, out)
		}
		m.Blocks = []Block{b}
		return m
	}
	m.Role = "assistant"
	if id := v.Get("call_id"); id.Exists() {
		b := Block{Kind: ToolCall, Type: typ, Span: spanOf(v), ToolID: id.String(), ToolName: v.Get("name").String()}
		switch {
		case v.Get("arguments").Exists():
			bodyOf(&b, v.Get("arguments"))
		case v.Get("input").Exists():
			bodyOf(&b, v.Get("input"))
		default:
			bodyOf(&b, v.Get("action"))
			if b.ToolName == "" {
				b.ToolName = strings.TrimSuffix(typ, "_call")
			}
		}
		m.Blocks = []Block{b}
		return m
	}
	m.Blocks = []Block{otherBlock(v, typ)}
	return m
}
