package testgen

import "strings"

// The three request-body formats stream one array element at a time: a header, then each
// message or item as it is generated, then the closing part. Only one element is in memory.

// list writes the elements of the streamed array, comma-separated.
type list struct {
	g     *gen
	b     []byte
	count int
}

func (l *list) start() []byte {
	l.b = l.b[:0]
	if l.count > 0 {
		l.b = append(l.b, ',')
	}
	l.count++
	return l.b
}

func (l *list) flush(b []byte) {
	l.b = b
	l.g.out.write(b)
}

const claudeTools = `[{"name":"Read","description":"Reads a file from the local filesystem. The file_path parameter must be an absolute path. Results are returned using cat -n format, with line numbers starting at 1.","input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to read"},"offset":{"type":"number","description":"The line number to start reading from"},"limit":{"type":"number","description":"The number of lines to read"}},"required":["file_path"],"additionalProperties":false}},` +
	`{"name":"Bash","description":"Executes a given bash command in a persistent shell session with optional timeout.","input_schema":{"type":"object","properties":{"command":{"type":"string","description":"The command to execute"},"description":{"type":"string","description":"Clear, concise description of what this command does in 5-10 words"},"timeout":{"type":"number","description":"Optional timeout in milliseconds (max 600000)"}},"required":["command"],"additionalProperties":false}},` +
	`{"name":"Grep","description":"A powerful search tool built on ripgrep. Supports full regex syntax.","input_schema":{"type":"object","properties":{"pattern":{"type":"string","description":"The regular expression pattern to search for in file contents"},"path":{"type":"string","description":"File or directory to search in"},"output_mode":{"type":"string","enum":["content","files_with_matches","count"]},"-n":{"type":"boolean","description":"Show line numbers in output"}},"required":["pattern"],"additionalProperties":false}},` +
	`{"name":"Edit","description":"Performs exact string replacements in files.","input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"The absolute path to the file to modify"},"old_string":{"type":"string","description":"The text to replace"},"new_string":{"type":"string","description":"The text to replace it with"},"replace_all":{"type":"boolean","default":false}},"required":["file_path","old_string","new_string"],"additionalProperties":false}}]`

const openaiTools = `[{"type":"function","function":{"name":"read_file","description":"Read a UTF-8 text file from the repository.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"Path relative to the repository root"}},"required":["path"]}}},` +
	`{"type":"function","function":{"name":"shell","description":"Run a shell command in the repository and return its combined output.","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command line to run with bash -lc"}},"required":["command"]}}},` +
	`{"type":"function","function":{"name":"apply_patch","description":"Apply a patch in the *** Begin Patch format to files in the repository.","parameters":{"type":"object","properties":{"input":{"type":"string","description":"The patch text"}},"required":["input"]}}}]`

const responsesTools = `[{"type":"function","name":"shell","description":"Runs a shell command and returns its output.","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},"description":"The command to execute"},"workdir":{"type":"string","description":"The working directory"}},"required":["command"],"additionalProperties":false},"strict":false},` +
	`{"type":"function","name":"read_file","description":"Read a UTF-8 text file from the repository.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false},"strict":false},` +
	`{"type":"function","name":"apply_patch","description":"Apply a patch in the *** Begin Patch format.","parameters":{"type":"object","properties":{"input":{"type":"string"}},"required":["input"],"additionalProperties":false},"strict":false}]`

// ---- anthropic -------------------------------------------------------------------------

type anthropicEmitter struct {
	g *gen
	l list
}

func (e *anthropicEmitter) tail() int { return 3 }

func (e *anthropicEmitter) begin() {
	e.l.g = e.g
	b := []byte(`{"model":"claude-sonnet-4-5","max_tokens":8192,`)
	b = appendKV(b, "system", e.g.system)
	b = append(b, `,"tools":`+claudeTools+`,"messages":[`...)
	e.g.out.write(b)
}

func appendImageBlock(b []byte, p *pngImage) []byte {
	b = append(b, `{"type":"image","source":{"type":"base64","media_type":"image/png",`...)
	b = appendKV(b, "data", p.b64)
	return append(b, "}}"...)
}

func appendUserContent(b []byte, m *userMsg) []byte {
	if len(m.imgs) == 0 && len(m.pins) == 0 {
		return appendStr(b, m.text)
	}
	b = append(b, '[')
	for _, p := range m.pins {
		b = append(b, `{"type":"text",`...)
		b = append(appendKV(b, "text", p), "},"...)
	}
	b = append(b, `{"type":"text",`...)
	b = appendKV(b, "text", m.text)
	b = append(b, '}')
	for _, p := range m.imgs {
		b = appendImageBlock(append(b, ','), p)
	}
	return append(b, ']')
}

func (e *anthropicEmitter) user(m *userMsg) {
	b := e.l.start()
	b = append(b, `{"role":"user","content":`...)
	b = appendUserContent(b, m)
	e.l.flush(append(b, '}'))
}

func (e *anthropicEmitter) assistant(t *turn) {
	b := e.l.start()
	b = append(b, `{"role":"assistant","content":[`...)
	n := 0
	each := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	if t.thinking != "" {
		each()
		b = e.g.appendThinking(b, t.thinking)
	}
	if t.text != "" {
		each()
		b = append(b, `{"type":"text",`...)
		b = append(appendKV(b, "text", t.text), '}')
	}
	for _, c := range t.calls {
		each()
		b = appendToolUse(b, c)
	}
	e.l.flush(append(b, "]}"...))
}

func (g *gen) appendThinking(b []byte, text string) []byte {
	b = append(b, `{"type":"thinking",`...)
	b = appendKV(b, "thinking", text)
	b = appendKV(append(b, ','), "signature", g.r.b64(g.r.between(180, 600)))
	return append(b, '}')
}

func appendToolUse(b []byte, c *call) []byte {
	b = append(b, `{"type":"tool_use",`...)
	b = appendKV(b, "id", c.id)
	b = appendKV(append(b, ','), "name", c.name)
	b = append(appendKey(append(b, ','), "input"), c.input...)
	return append(b, '}')
}

// appendResultContent writes a tool_result's content: an image block list for images, a
// string for most text, and now and then a list of text blocks, which the API also accepts.
func (g *gen) appendResultContent(b []byte, c *call) []byte {
	switch {
	case c.img != nil:
		return append(appendImageBlock(append(b, '['), c.img), ']')
	case g.r.chance(0.1):
		b = append(b, `[{"type":"text",`...)
		return append(appendKV(b, "text", c.text), "}]"...)
	}
	return appendStr(b, c.text)
}

func (e *anthropicEmitter) results(t *turn) {
	b := e.l.start()
	b = append(b, `{"role":"user","content":[`...)
	for i, c := range t.calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_result",`...)
		b = appendKV(b, "tool_use_id", c.id)
		b = e.g.appendResultContent(appendKey(append(b, ','), "content"), c)
		b = append(appendKB(append(b, ','), "is_error", c.isError), '}')
	}
	e.l.flush(append(b, "]}"...))
}

func (e *anthropicEmitter) compact(string) {}

func (e *anthropicEmitter) end() { e.g.out.write([]byte("]}\n")) }

// ---- openai ----------------------------------------------------------------------------

type openaiEmitter struct {
	g *gen
	l list
}

func (e *openaiEmitter) tail() int { return len(openaiTools) + 15 }

func (e *openaiEmitter) begin() {
	e.l.g = e.g
	e.g.out.write([]byte(`{"model":"gpt-4o","messages":[`))
	b := e.l.start()
	b = append(b, `{"role":"system",`...)
	e.l.flush(append(appendKV(b, "content", e.g.system), '}'))
	if p := e.g.pins; p != nil { // Codex through a Chat Completions provider
		b = append(e.l.start(), `{"role":"developer","content":[{"type":"text",`...)
		b = append(appendKV(b, "text", p.permissions), `},{"type":"text",`...)
		e.l.flush(append(appendKV(b, "text", p.skills), "}]}"...))
		b = append(e.l.start(), `{"role":"user","content":[{"type":"text",`...)
		b = append(appendKV(b, "text", p.agents), `},{"type":"text",`...)
		e.l.flush(append(appendKV(b, "text", p.env), "}]}"...))
	}
}

func (e *openaiEmitter) user(m *userMsg) {
	b := e.l.start()
	b = append(b, `{"role":"user","content":`...)
	if len(m.imgs) == 0 {
		b = appendStr(b, m.text)
	} else {
		b = append(b, `[{"type":"text",`...)
		b = append(appendKV(b, "text", m.text), '}')
		for _, p := range m.imgs {
			b = append(b, `,{"type":"image_url","image_url":{`...)
			b = append(appendKV(b, "url", p.dataURL()), "}}"...)
		}
		b = append(b, ']')
	}
	e.l.flush(append(b, '}'))
}

func (e *openaiEmitter) assistant(t *turn) {
	b := e.l.start()
	b = append(b, `{"role":"assistant","content":`...)
	if t.text == "" {
		b = append(b, "null"...)
	} else {
		b = appendStr(b, t.text)
	}
	if len(t.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range t.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = appendKV(b, "id", c.id)
			b = append(b, `,"type":"function","function":{`...)
			b = appendKV(b, "name", c.name)
			b = appendKey(append(b, ','), "arguments")
			b = append(appendStr(b, string(c.input)), "}}"...)
		}
		b = append(b, ']')
	}
	e.l.flush(append(b, '}'))
}

func (e *openaiEmitter) results(t *turn) {
	for _, c := range t.calls {
		b := e.l.start()
		b = append(b, `{"role":"tool",`...)
		b = appendKV(b, "tool_call_id", c.id)
		b = appendKV(append(b, ','), "content", c.text)
		e.l.flush(append(b, '}'))
	}
}

func (e *openaiEmitter) compact(string) {}

func (e *openaiEmitter) end() { e.g.out.write([]byte(`],"tools":` + openaiTools + "}\n")) }

// ---- responses -------------------------------------------------------------------------

type responsesEmitter struct {
	g *gen
	l list
}

func (e *responsesEmitter) tail() int { return len(responsesTools) + 15 }

func (e *responsesEmitter) begin() {
	e.l.g = e.g
	b := []byte(`{"model":"gpt-5",`)
	b = appendKV(b, "instructions", e.g.system)
	e.g.out.write(append(b, `,"input":[`...))
	if p := e.g.pins; p != nil {
		e.l.flush(p.appendDeveloperItem(e.l.start()))
		e.l.flush(p.appendContextItem(e.l.start()))
	}
}

func appendInputMessage(b []byte, m *userMsg) []byte {
	b = append(b, `{"type":"message","role":"user","content":[{"type":"input_text",`...)
	b = append(appendKV(b, "text", m.text), '}')
	for _, p := range m.imgs {
		b = append(b, `,{"type":"input_image",`...)
		b = append(appendKV(b, "image_url", p.dataURL()), '}')
	}
	return append(b, "]}"...)
}

func (e *responsesEmitter) user(m *userMsg) {
	e.l.flush(appendInputMessage(e.l.start(), m))
}

// appendReasoning writes a reasoning item: a readable summary plus the opaque encrypted
// payload the API hands back, which dominates its size in real files.
func (g *gen) appendReasoning(b []byte, withID bool, text string) []byte {
	b = append(b, `{"type":"reasoning",`...)
	if withID {
		b = append(appendKV(b, "id", "rs_"+g.r.hex(24)), ',')
	}
	b = append(b, `"summary":[{"type":"summary_text",`...)
	b = appendKV(b, "text", "**"+title(g.r.pick(verbs))+"ing the "+g.r.pick(nouns)+" "+g.r.pick([]string{"handler", "tests", "flow", "cache"})+"**\n\n"+text)
	b = append(b, "}],"...)
	if !withID {
		b = append(b, `"content":null,`...)
	}
	b = appendKV(b, "encrypted_content", "gAAAAAB"+strings.TrimRight(g.r.b64(len(text)+g.r.between(300, 1200)), "="))
	return append(b, '}')
}

func appendOutputMessage(b []byte, text string) []byte {
	b = append(b, `{"type":"message","role":"assistant","content":[{"type":"output_text",`...)
	return append(appendKV(b, "text", text), "}]}"...)
}

func appendFunctionCall(b []byte, c *call, codex bool) []byte {
	b = append(b, `{"type":"function_call",`...)
	if codex {
		b = appendKV(b, "name", c.name)
		b = appendKV(append(b, ','), "arguments", string(c.input))
		b = appendKV(append(b, ','), "call_id", c.id)
	} else {
		b = appendKV(b, "call_id", c.id)
		b = appendKV(append(b, ','), "name", c.name)
		b = appendKV(append(b, ','), "arguments", string(c.input))
	}
	return append(b, '}')
}

func (e *responsesEmitter) assistant(t *turn) {
	if t.thinking != "" {
		e.l.flush(e.g.appendReasoning(e.l.start(), true, t.thinking))
	}
	if t.text != "" {
		e.l.flush(appendOutputMessage(e.l.start(), t.text))
	}
	for _, c := range t.calls {
		e.l.flush(appendFunctionCall(e.l.start(), c, false))
	}
}

func (e *responsesEmitter) results(t *turn) {
	for _, c := range t.calls {
		b := e.l.start()
		b = append(b, `{"type":"function_call_output",`...)
		b = appendKV(b, "call_id", c.id)
		b = appendKV(append(b, ','), "output", c.text)
		e.l.flush(append(b, '}'))
	}
}

func (e *responsesEmitter) compact(string) {}

func (e *responsesEmitter) end() { e.g.out.write([]byte(`],"tools":` + responsesTools + "}\n")) }
