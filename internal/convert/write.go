package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// writer appends the target document to one growing buffer. Building it from strings,
// object by object, copied every text once per level it is nested in (block, content,
// message, messages, document) and held all those copies at once; here each byte is
// copied into the output once.
//
// The writers keep the losses in the order the conversation was read, block by block, as
// the order of the warnings depends on it: where the output puts things in another order
// (a request's tools before its messages, a message's tool results before its other
// blocks), what is lost is worked out in reading order first.
type writer struct {
	b     []byte
	first bool // nothing is written yet in the innermost object or array
	c     *conversation
	l     *losses
}

// sinkBytes is how much output the writer keeps before it hands it to the conversation's
// sink, when it has one.
const sinkBytes = 1 << 20

func newWriter(c *conversation, l *losses) *writer {
	if c.sink != nil {
		return &writer{b: make([]byte, 0, 2*sinkBytes), c: c, l: l}
	}
	return &writer{b: make([]byte, 0, outputSize(c.t)), c: c, l: l}
}

// flush hands what is written so far to the sink, if there is one and it is large enough
// to be worth a write. The writers call it between messages.
func (w *writer) flush() {
	if w.c.sink == nil || len(w.b) < sinkBytes || w.c.sinkErr != nil {
		return
	}
	_, w.c.sinkErr = w.c.sink.Write(w.b)
	w.b = w.b[:0]
}

// otherFiles writes, in place of an image given by the id of a file the target cannot
// read (uploaded to another provider than the target's, or a format that takes no file
// ids: byID false), a text part saying so (kind names the text part's type), and reports
// the loss.
func (w *writer) otherFiles(img *image, provider transcript.Wire, byID bool, kind string) bool {
	if img.FileID == "" || (img.files == provider && byID) {
		return false
	}
	why := "was uploaded to another provider"
	if img.files == provider {
		why = "cannot be sent by id in this format"
	}
	w.l.add("image-file", "an image given by the id of an uploaded file the target cannot read is left out (a note says so)")
	w.open('{')
	w.str("type", kind)
	w.str("text", "[image not included: file "+img.FileID+" "+why+"]")
	w.close('}')
	return true
}

// outputSize is a little more than the target document usually takes, so the buffer
// seldom grows (each time copying all of it). The blocks are most of it, and are written
// about as long as they are read; a message's wrapping is short. A saved transcript's
// records hold much else besides (a Claude Code session is twice its conversation).
func outputSize(t *transcript.Transcript) int {
	n := 4096 + t.Tools.Len()
	for i := range t.Messages {
		m := &t.Messages[i]
		n += 64
		for bi := range m.Blocks {
			n += 32 + m.Blocks[bi].Span.Len()
		}
	}
	return n + n/8
}

func (w *writer) open(c byte) {
	w.b = append(w.b, c)
	w.first = true
}

// close ends an object or array, which is then a value written in the one around it.
func (w *writer) close(c byte) {
	w.b = append(w.b, c)
	w.first = false
}

// elem starts an array element or a member.
func (w *writer) elem() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
}

// key starts a member. Keys are plain identifiers, which Quote writes as they are.
func (w *writer) key(k string) {
	w.elem()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

// raw writes a member whose value is JSON text; a member without a value is left out.
func (w *writer) raw(k, v string) {
	if v != "" {
		w.key(k)
		w.b = append(w.b, v...)
	}
}

// str writes a member whose value is the string s.
func (w *writer) str(k, s string) {
	w.key(k)
	w.quote(s)
}

// textBlocks writes each of texts, after prefix, as an element {"type":"text","text":...}.
func (w *writer) textBlocks(texts []string, prefix string) {
	for _, t := range texts {
		w.elem()
		w.open('{')
		w.str("type", "text")
		w.str("text", prefix+t)
		w.close('}')
	}
}

// strOpt is str, leaving the member out when s is "".
func (w *writer) strOpt(k, s string) {
	if s != "" {
		w.str(k, s)
	}
}

func (w *writer) quote(s string) { w.b = append(w.b, transcript.Quote(s)...) }

// text writes a text part's text as a JSON string: the literal it was read from when that
// is spelled as Quote would spell it, so the text is neither decoded nor encoded again;
// otherwise the decoded text, quoted.
func (w *writer) text(p *part) {
	if lit := w.c.literal(p); lit != "" && transcript.Canonical(lit) {
		w.b = append(w.b, lit...)
		return
	}
	w.quote(w.c.text(p))
}

// args is text for a call's arguments.
func (w *writer) args(p *part) {
	if lit := w.c.literal(p); lit != "" && transcript.Canonical(lit) {
		w.b = append(w.b, lit...)
		return
	}
	w.quote(w.c.args(p))
}

// textBlock writes {"type": typ, "text": p's text}.
func (w *writer) textBlock(typ string, p *part) {
	w.open('{')
	w.str("type", typ)
	w.key("text")
	w.text(p)
	w.close('}')
}

// tools writes the "tools" member: each tool declared as it was when it is native to
// transcript.Wire fam, or in the plain function shape that plain writes; it is left out when there
// is none. It returns how many tools have no form in the target.
func (w *writer) tools(fam transcript.Wire, plain func(t *tool)) (lost int) {
	opened := false
	for i := range w.c.tools {
		t := &w.c.tools[i]
		if t.raw != "" && t.native != fam {
			lost++
			continue
		}
		if !opened {
			w.key("tools")
			w.open('[')
			opened = true
		}
		w.elem()
		if t.raw != "" {
			w.b = append(w.b, t.raw...)
		} else {
			plain(t)
		}
	}
	if opened {
		w.close(']')
	}
	return lost
}

// leadingSystem splits the conversation's system prompt from the rest: the header system
// prompt and every system or developer message before the first other message, which is
// message start.
func leadingSystem(c *conversation) (system []part, start int) {
	i := 0
	for ; c.msg(i) != nil; i++ {
		m := c.msg(i)
		if m.role != "system" && m.role != "developer" {
			break
		}
	}
	// The header is read with the first message (stream.go makes sure of it).
	system = append(system, c.system...)
	for k := range i {
		system = append(system, c.messages[k].parts...)
	}
	return system, i
}

// texts are the decoded texts of the text parts of ps.
func texts(c *conversation, ps []part) []string {
	var out []string
	for i := range ps {
		if ps[i].kind == textPart {
			out = append(out, c.text(&ps[i]))
		}
	}
	return out
}

// plainString reports whether a message is one text written as a plain string.
func plainString(m *message) bool {
	return m.str && len(m.parts) == 1 && m.parts[0].kind == textPart
}

// oneString reports whether a result's content is one text written as a plain string.
func oneString(p *part) bool {
	return p.resultS && len(p.result) == 1 && p.result[0].kind == textPart
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

// sameProvider returns the source's model when the target is of the same provider (the
// two OpenAI formats are one provider); another provider's model name is dropped, and
// lost says so.
func sameProvider(c *conversation, target transcript.Wire) (model string, lost bool) {
	if c.model == "" {
		return "", false
	}
	from := c.from.Wire()
	if from == transcript.ResponsesWire {
		from = transcript.ChatWire
	}
	if from == target {
		return c.model, false
	}
	return "", true
}

// renamedLosses adds a loss for each tool result whose name (Chat Completions' name on a
// tool message) differs from its call's: only Chat Completions can say it.
func renamedLosses(c *conversation, l *losses) {
	for range c.renamed {
		l.add("tool-result-name", "a tool message named otherwise than its call loses that name")
	}
}

// lateLosses adds, after the messages' own, the losses of the parts of the request the
// output puts before the messages: tools, then stop sequences, then the model.
func lateLosses(c *conversation, l *losses, tools int, toolDetail string, stop, model bool) {
	for range tools {
		l.add("tool-schema", toolDetail)
	}
	if stop {
		l.add("stop-sequences", "Responses has no stop sequences")
	}
	if model {
		l.add("model", "the model "+c.model+" belongs to another provider: name the target's model yourself")
	}
	for range c.dropped {
		l.add("request-field", "request fields ctx-convert does not carry are left out: "+strings.Join(c.dropped, ", "))
	}
	for range c.refusals {
		l.add("refusal", "a refusal is sent as plain assistant text")
	}
	for range c.fields {
		l.add("field", "members of messages and content parts that ctx-convert does not carry are left out: "+strings.Join(c.fieldNames, ", "))
	}
}

// openaiChoice writes tool_choice and parallel_tool_calls as Chat Completions (fam
// transcript.ChatWire) or Responses spell them, and stream.
func (w *writer) openaiChoice(fam transcript.Wire) {
	c := w.c
	switch c.choice {
	case "auto", "none":
		w.str("tool_choice", c.choice)
	case "any":
		w.str("tool_choice", "required")
	case "tool":
		w.key("tool_choice")
		w.open('{')
		w.str("type", "function")
		if fam == transcript.ChatWire {
			w.key("function")
			w.open('{')
			w.str("name", c.choiceTool)
			w.close('}')
		} else {
			w.str("name", c.choiceTool)
		}
		w.close('}')
	}
	w.raw("parallel_tool_calls", c.parallel)
	w.raw("stream", c.stream)
}

// anthropicChoice writes tool_choice as Anthropic spells it, parallel_tool_calls false as
// its disable_parallel_tool_use, and stream.
func (w *writer) anthropicChoice() {
	c := w.c
	if c.choice != "" || c.parallel == "false" {
		w.key("tool_choice")
		w.open('{')
		typ := c.choice
		if typ == "" {
			typ = "auto"
		}
		w.str("type", typ)
		if typ == "tool" {
			w.str("name", c.choiceTool)
		}
		if c.parallel == "false" {
			w.raw("disable_parallel_tool_use", "true")
		}
		w.close('}')
	}
	w.raw("stream", c.stream)
}

func orEmptySchema(s string) string {
	if s == "" {
		return `{"type":"object","properties":{}}`
	}
	return s
}

// ---- Anthropic Messages ----

// anthropicRole is the role a message has in Anthropic's alternation: system and
// developer messages after the conversation began are sent as user messages, and tool
// results are user content.
func anthropicRole(m *message) string {
	switch m.role {
	case "system", "developer", "tool":
		return "user"
	}
	return m.role
}

// anthropicTemperature is the temperature an Anthropic request can carry: OpenAI's go up
// to 2, Anthropic's to 1, which is what a higher one becomes (a loss).
func anthropicTemperature(raw string, l *losses) string {
	if v, err := strconv.ParseFloat(raw, 64); err == nil && v > 1 {
		l.add("temperature", fmt.Sprintf("Anthropic takes a temperature from 0 to 1: %s is sent as 1", raw))
		return "1"
	}
	return raw
}

func writeAnthropic(c *conversation, l *losses) []byte {
	w := newWriter(c, l)
	system, start := leadingSystem(c)
	model, modelLost := sameProvider(c, transcript.MessagesWire)
	w.open('{')
	w.raw("model", model)
	w.raw("max_tokens", c.maxTokens)
	w.raw("temperature", anthropicTemperature(c.temperature, l))
	w.raw("top_p", c.topP)
	stop := c.stop
	if strings.HasPrefix(stop, `"`) {
		stop = "[" + stop + "]"
	}
	w.raw("stop_sequences", stop)
	switch ts := texts(c, system); {
	case len(ts) == 0:
	case len(ts) == 1 && (c.systemS || len(c.system) == 0):
		w.str("system", ts[0])
	default:
		w.key("system")
		w.open('[')
		w.textBlocks(ts, "")
		w.close(']')
	}
	lostTools := w.tools(transcript.MessagesWire, func(t *tool) {
		w.open('{')
		w.str("name", t.name)
		w.strOpt("description", t.description)
		w.raw("input_schema", orEmptySchema(t.schema))
		w.close('}')
	})
	w.anthropicChoice()
	w.key("messages")
	w.open('[')
	// Roles must alternate, so a run of messages of one role (a tool message and the user
	// message after it, say) is one message: the results of all of them first, then their
	// other blocks.
	for i := start; c.msg(i) != nil; {
		c.written(i) // the runs before this one
		w.flush()
		role := anthropicRole(c.msg(i))
		j := i + 1
		for c.msg(j) != nil && anthropicRole(c.msg(j)) == role {
			j++
		}
		run := c.messages[i:j]
		i = j
		results := 0
		for k := range run {
			n := anthropicLosses(c, &run[k], l)
			if k > 0 && n == 0 && results == 0 {
				// Two messages of content, not results and the user's words in one turn.
				l.add("merged", "Anthropic needs roles to alternate: consecutive messages of one role are merged into one")
			}
			results += n
		}
		w.elem()
		w.open('{')
		w.str("role", role)
		w.key("content")
		if len(run) == 1 && plainString(&run[0]) && run[0].role != "system" && run[0].role != "developer" {
			w.text(&run[0].parts[0])
			w.close('}')
			continue
		}
		w.open('[')
		for k := range run {
			if m := &run[k]; m.role != "system" && m.role != "developer" && !plainString(m) {
				for pi := range m.parts {
					if p := &m.parts[pi]; p.kind == resultPart {
						w.elem()
						w.anthropicBlock(p)
					}
				}
			}
		}
		for k := range run {
			switch m := &run[k]; {
			case m.role == "system" || m.role == "developer":
				w.textBlocks(texts(c, m.parts), "["+m.role+"] ")
			case plainString(m):
				w.elem()
				w.textBlock("text", &m.parts[0])
			default:
				for pi := range m.parts {
					if p := &m.parts[pi]; p.kind != resultPart && anthropicKeeps(p) {
						w.elem()
						w.anthropicBlock(p)
					}
				}
			}
		}
		w.close(']')
		w.close('}')
	}
	w.close(']')
	w.close('}')
	renamedLosses(c, l)
	lateLosses(c, l, lostTools, "a tool that is not a plain function tool has no Anthropic form", false, modelLost)
	return w.b
}

// anthropicLosses adds what Anthropic cannot take of a message, in the order of its
// parts, and returns how many tool results it has.
func anthropicLosses(c *conversation, m *message, l *losses) (results int) {
	switch {
	case m.role == "system" || m.role == "developer":
		l.add("system-message", "a system or developer message after the conversation began is sent as a user message")
		return 0
	case plainString(m):
		return 0
	}
	for pi := range m.parts {
		p := &m.parts[pi]
		anthropicPartLosses(c, p, l)
		if p.kind == resultPart {
			results++
		}
	}
	return results
}

func anthropicPartLosses(c *conversation, p *part, l *losses) {
	switch p.kind {
	case callPart:
		if p.custom {
			l.add("custom-tool-call", "a free-form (custom) tool call's input is sent as {\"input\": TEXT}")
		} else if _, ok := jsonObject(c.args(p)); !ok {
			l.add("arguments-not-json", "tool call arguments that are not a JSON object are sent as {\"arguments\": TEXT}")
		}
	case resultPart:
		if !oneString(p) {
			for ri := range p.result {
				anthropicPartLosses(c, &p.result[ri], l)
			}
		}
	case thinkingPart:
		if !anthropicKeeps(p) {
			l.add("reasoning", "reasoning from another provider cannot be sent to Anthropic (it carries no Anthropic signature)")
		}
	case nativePart:
		if p.native != transcript.MessagesWire {
			l.add(p.what, p.what+" has no Anthropic form")
		}
	case imagePart:
		if p.image.Detail != "" {
			l.add("image-detail", "Anthropic images have no detail setting (low, high, auto)")
		}
	}
}

// anthropicKeeps reports whether a part has an Anthropic block.
func anthropicKeeps(p *part) bool {
	switch p.kind {
	case textPart, imagePart, callPart, resultPart:
		return true
	case thinkingPart, nativePart:
		return p.native == transcript.MessagesWire && p.raw != ""
	}
	return false
}

// anthropicBlock writes the block of a part anthropicKeeps.
func (w *writer) anthropicBlock(p *part) {
	switch p.kind {
	case textPart:
		w.textBlock("text", p)
	case imagePart:
		w.anthropicImage(p.image)
	case callPart:
		w.open('{')
		w.str("type", "tool_use")
		w.str("id", p.id)
		w.str("name", p.name)
		w.key("input")
		input, ok := "", false
		if !p.custom {
			input, ok = jsonObject(w.c.args(p))
		}
		switch {
		case p.custom:
			w.open('{')
			w.key("input")
			w.args(p)
			w.close('}')
		case !ok:
			w.open('{')
			w.key("arguments")
			w.args(p)
			w.close('}')
		default:
			w.b = append(w.b, input...)
		}
		w.close('}')
	case resultPart:
		w.open('{')
		w.str("type", "tool_result")
		w.str("tool_use_id", p.id)
		w.key("content")
		if oneString(p) {
			w.text(&p.result[0])
		} else {
			w.open('[')
			for ri := range p.result {
				if r := &p.result[ri]; anthropicKeeps(r) {
					w.elem()
					w.anthropicBlock(r)
				}
			}
			w.close(']')
		}
		if p.isError {
			w.raw("is_error", "true")
		}
		w.close('}')
	case thinkingPart, nativePart:
		w.b = append(w.b, p.raw...)
	}
}

func (w *writer) anthropicImage(img *image) {
	if w.otherFiles(img, transcript.MessagesWire, true, "text") {
		return
	}
	w.open('{')
	w.str("type", "image")
	w.key("source")
	w.open('{')
	if img.FileID != "" {
		w.str("type", "file")
		w.str("file_id", img.FileID)
	} else if img.URL != "" {
		w.str("type", "url")
		w.str("url", img.URL)
	} else {
		w.str("type", "base64")
		w.str("media_type", img.MediaType)
		w.str("data", img.Data)
	}
	w.close('}')
	w.close('}')
}

// ---- OpenAI Chat Completions ----

func writeOpenAI(c *conversation, l *losses) []byte {
	w := newWriter(c, l)
	model, modelLost := sameProvider(c, transcript.ChatWire)
	w.open('{')
	w.raw("model", model)
	w.raw("max_tokens", c.maxTokens)
	w.raw("temperature", c.temperature)
	w.raw("top_p", c.topP)
	w.raw("stop", c.stop)
	lostTools := w.tools(transcript.ChatWire, func(t *tool) {
		w.open('{')
		w.str("type", "function")
		w.key("function")
		w.open('{')
		w.str("name", t.name)
		w.strOpt("description", t.description)
		w.raw("parameters", orEmptySchema(t.schema))
		if t.strict { // Chat Completions does not enforce the schema unless told to
			w.raw("strict", "true")
		}
		w.close('}')
		w.close('}')
	})
	w.openaiChoice(transcript.ChatWire)
	w.key("messages")
	w.open('[')
	c.msg(0) // a header is read with the first message
	if ts := texts(c, c.system); len(ts) > 0 {
		w.elem()
		w.open('{')
		w.str("role", "system")
		if len(ts) == 1 {
			w.str("content", ts[0])
		} else {
			w.key("content")
			w.open('[')
			w.textBlocks(ts, "")
			w.close(']')
		}
		w.close('}')
	}
	for mi := 0; c.msg(mi) != nil; mi++ {
		c.written(mi)
		w.flush()
		m := c.msg(mi)
		// Results first, each its own tool message; the rest of the message after them.
		others := 0
		for pi := range m.parts {
			if p := &m.parts[pi]; p.kind == resultPart {
				w.elem()
				w.openaiTool(p, l)
			} else {
				others++
			}
		}
		if others == 0 || m.role == "tool" {
			continue
		}
		if m.str && others == 1 {
			if p := firstOther(m); p.kind == textPart {
				w.elem()
				w.open('{')
				w.str("role", m.role)
				w.key("content")
				w.text(p)
				w.close('}')
				continue
			}
		}
		// What is lost, in the order of the parts, and what the message will hold.
		var content, calls, texts int // texts counts 1 a text, 2 an image or native part: one plain text or not
		var text *part
		for pi := range m.parts {
			p := &m.parts[pi]
			switch p.kind {
			case textPart:
				texts++
				text = p
				if calls > 0 {
					l.add("block-order", "Chat Completions puts an assistant message's text before its tool calls: text that came after a call moves before it")
				}
				content++
			case imagePart:
				texts += 2
				if m.role == "assistant" {
					l.add("assistant-image", "an image in an assistant message has no Chat Completions form")
					continue
				}
				content++
			case callPart:
				calls++
			case thinkingPart:
				l.add("reasoning", "reasoning cannot be sent back through Chat Completions")
			case nativePart:
				texts += 2
				if p.native == transcript.ChatWire {
					content++
					continue
				}
				l.add(p.what, p.what+" has no Chat Completions form")
			}
		}
		if content == 0 && calls == 0 {
			continue // nothing left to send
		}
		w.elem()
		w.open('{')
		w.str("role", m.role)
		w.key("content")
		switch {
		// One text: a plain string, as it came, or as the API itself answers beside tool calls.
		case (m.str || calls > 0) && texts == 1 && content == 1:
			w.text(text)
		case content > 0:
			w.open('[')
			for pi := range m.parts {
				switch p := &m.parts[pi]; {
				case p.kind == textPart:
					w.elem()
					w.textBlock("text", p)
				case p.kind == imagePart && m.role != "assistant":
					w.elem()
					w.openaiImage(p.image)
				case p.kind == nativePart && p.native == transcript.ChatWire:
					w.elem()
					w.b = append(w.b, p.raw...)
				}
			}
			w.close(']')
		default:
			w.b = append(w.b, "null"...)
		}
		if calls > 0 {
			w.key("tool_calls")
			w.open('[')
			for pi := range m.parts {
				if p := &m.parts[pi]; p.kind == callPart {
					w.elem()
					w.open('{')
					w.str("id", p.id)
					if p.custom {
						w.str("type", "custom")
						w.key("custom")
						w.open('{')
						w.str("name", p.name)
						w.key("input")
					} else {
						w.str("type", "function")
						w.key("function")
						w.open('{')
						w.str("name", p.name)
						w.key("arguments")
					}
					w.args(p)
					w.close('}')
					w.close('}')
				}
			}
			w.close(']')
		}
		w.close('}')
	}
	w.close(']')
	w.close('}')
	lateLosses(c, l, lostTools, "a tool that is not a plain function tool has no Chat Completions form", false, modelLost)
	return w.b
}

// firstOther is a message's first part that is not a tool result.
func firstOther(m *message) *part {
	for pi := range m.parts {
		if m.parts[pi].kind != resultPart {
			return &m.parts[pi]
		}
	}
	return nil
}

func (w *writer) openaiTool(p *part, l *losses) {
	if p.isError {
		l.add("error-flag", "a tool result's error flag has no Chat Completions or Responses form (the text is kept)")
	}
	w.open('{')
	w.str("role", "tool")
	w.str("tool_call_id", p.id)
	w.strOpt("name", p.name)
	w.key("content")
	if oneString(p) {
		w.text(&p.result[0])
	} else {
		w.open('[')
		for ri := range p.result {
			switch r := &p.result[ri]; r.kind {
			case textPart:
				w.elem()
				w.textBlock("text", r)
			case imagePart:
				l.add("image-in-tool-result", "Chat Completions tool messages take text only: an image in a tool result is dropped")
			default:
				l.add(r.what, r.what+" in a tool result has no Chat Completions form")
			}
		}
		w.close(']')
	}
	w.close('}')
}

func (w *writer) openaiImage(img *image) {
	if w.otherFiles(img, transcript.ChatWire, false, "text") { // Chat Completions takes images by URL only
		return
	}
	w.open('{')
	w.str("type", "image_url")
	w.key("image_url")
	w.open('{')
	w.str("url", dataURL(img))
	w.strOpt("detail", img.Detail)
	w.close('}')
	w.close('}')
}

// ---- OpenAI Responses ----

func writeResponses(c *conversation, l *losses) []byte {
	w := newWriter(c, l)
	system, start := leadingSystem(c)
	custom := customCalls(c.t) // call ids of free-form calls, whose outputs have their own type
	model, modelLost := sameProvider(c, transcript.ChatWire)
	w.open('{')
	w.raw("model", model)
	w.raw("max_output_tokens", c.maxTokens)
	w.raw("temperature", c.temperature)
	w.raw("top_p", c.topP)
	if ts := texts(c, system); len(ts) > 0 {
		w.str("instructions", strings.Join(ts, "\n\n"))
	}
	lostTools := w.tools(transcript.ResponsesWire, func(t *tool) {
		w.open('{')
		w.str("type", "function")
		w.str("name", t.name)
		w.strOpt("description", t.description)
		w.raw("parameters", orEmptySchema(t.schema))
		if !t.strict {
			// The Responses API enforces the schema unless told not to, and refuses a
			// schema that is not written for strict mode (every property required, no
			// additional properties): a tool that was not strict says so.
			w.raw("strict", "false")
		}
		w.close('}')
	})
	w.openaiChoice(transcript.ResponsesWire)
	w.key("input")
	w.open('[')
	for mi := start; c.msg(mi) != nil; mi++ {
		c.written(mi)
		w.flush()
		m := c.msg(mi)
		if plainString(m) && m.role != "tool" {
			w.elem()
			w.open('{')
			w.str("type", "message")
			w.str("role", m.role)
			w.key("content")
			w.text(&m.parts[0])
			w.close('}')
			continue
		}
		// Text and images go into a message item, opened at the first of them and closed
		// before any other item.
		inMessage := false
		content := func() {
			if !inMessage {
				w.elem()
				w.open('{')
				w.str("type", "message")
				w.str("role", m.role)
				w.key("content")
				w.open('[')
				inMessage = true
			}
			w.elem()
		}
		flush := func() {
			if inMessage {
				w.close(']')
				w.close('}')
				inMessage = false
			}
		}
		for pi := range m.parts {
			switch p := &m.parts[pi]; p.kind {
			case textPart:
				typ := "input_text"
				if m.role == "assistant" {
					typ = "output_text"
				}
				content()
				w.textBlock(typ, p)
			case imagePart:
				if m.role == "assistant" {
					l.add("assistant-image", "an image in an assistant message has no Responses form")
					continue
				}
				content()
				w.responsesImage(p.image)
			case callPart:
				flush()
				w.elem()
				w.open('{')
				if p.custom {
					w.str("type", "custom_tool_call")
					w.str("call_id", p.id)
					w.str("name", p.name)
					w.key("input")
				} else {
					w.str("type", "function_call")
					w.str("call_id", p.id)
					w.str("name", p.name)
					w.key("arguments")
				}
				w.args(p)
				w.close('}')
			case resultPart:
				flush()
				w.elem()
				w.responsesOutput(p, custom[p.id], l)
			case thinkingPart:
				flush()
				if p.native == transcript.ResponsesWire && p.raw != "" {
					w.elem()
					w.b = append(w.b, p.raw...)
					continue
				}
				l.add("reasoning", "reasoning from another provider cannot be sent back through Responses")
			case nativePart:
				if p.native == transcript.ResponsesWire && p.inContent {
					content()
					w.b = append(w.b, p.raw...)
					continue
				}
				flush()
				if p.native == transcript.ResponsesWire {
					w.elem()
					w.b = append(w.b, p.raw...)
					continue
				}
				l.add(p.what, p.what+" has no Responses form")
			}
		}
		flush()
	}
	w.close(']')
	w.close('}')
	renamedLosses(c, l)
	lateLosses(c, l, lostTools, "a tool that is not a plain function tool has no Responses form", c.stop != "", modelLost)
	return w.b
}

// customCalls are the ids of the free-form (custom) tool calls of t: a Responses
// custom_tool_call item or a Chat Completions call of type custom. It reads the structure
// only, so a streamed document knows them all before its first output is written; leading
// system and developer messages are left out, as leadingSystem takes their parts for the
// system prompt.
func customCalls(t *transcript.Transcript) map[string]bool {
	custom := map[string]bool{}
	leading := true
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Header {
			continue
		}
		if leading = leading && (m.Role == "system" || m.Role == "developer"); leading {
			continue
		}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Kind != transcript.ToolCall {
				continue
			}
			switch t.Format.Wire() {
			case transcript.ResponsesWire:
				if b.Type == "custom_tool_call" {
					custom[b.ToolID] = true
				}
			case transcript.ChatWire:
				if b.Type == "custom" {
					custom[b.ToolID] = true
				}
			}
		}
	}
	return custom
}

func (w *writer) responsesImage(img *image) {
	// Chat Completions and Responses share OpenAI's files; only Responses takes an image
	// by file id.
	if w.otherFiles(img, transcript.ChatWire, true, "input_text") {
		return
	}
	w.open('{')
	w.str("type", "input_image")
	if img.FileID != "" {
		w.str("file_id", img.FileID)
	} else {
		w.str("image_url", dataURL(img))
	}
	w.strOpt("detail", img.Detail)
	w.close('}')
}

func (w *writer) responsesOutput(p *part, custom bool, l *losses) {
	if p.isError {
		l.add("error-flag", "a tool result's error flag has no Chat Completions or Responses form (the text is kept)")
	}
	typ := "function_call_output"
	if custom {
		typ = "custom_tool_call_output"
	}
	w.open('{')
	w.str("type", typ)
	w.str("call_id", p.id)
	w.key("output")
	if oneString(p) {
		w.text(&p.result[0])
	} else {
		w.open('[')
		for ri := range p.result {
			switch r := &p.result[ri]; r.kind {
			case textPart:
				w.elem()
				w.textBlock("input_text", r)
			case imagePart:
				w.elem()
				w.responsesImage(r.image)
			default:
				l.add(r.what, r.what+" in a tool result has no Responses form")
			}
		}
		w.close(']')
	}
	w.close('}')
}
