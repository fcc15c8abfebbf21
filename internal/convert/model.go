// Package convert owns the translation of a conversation between the three API request
// formats (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses), and from saved
// transcripts (Claude Code sessions, Codex rollouts, SWE-agent trajectories, tau-bench
// logs) to API request documents.
//
// A document is read into a neutral conversation (messages of text, images, tool calls,
// tool results and reasoning, plus the system prompt, tool schemas and the sampling
// parameters the formats share) and written out in the target format. Whatever the
// target cannot express is counted as a Loss, never dropped silently. The result is
// made API-valid with ctx-repair's rules (internal/repair), and what that fixed is
// reported too.
package convert

import (
	"io"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// partKind says what a part of a message is.
type partKind uint8

const (
	textPart partKind = iota
	imagePart
	callPart
	resultPart
	thinkingPart
	// nativePart is a block or item kept as its raw JSON because the target is the
	// wire it came from (transcript.Wire) (an Anthropic thinking block with its signature, a
	// Responses reasoning item, a server tool block).
	nativePart
)

// image is an image by its data (base64, MediaType set) or by URL.
type image struct {
	MediaType, Data, URL, Detail string
	// FileID names an image uploaded to a provider's files (files: MessagesWire for
	// Anthropic's, ChatWire for OpenAI's, which Chat Completions and Responses share):
	// only that provider can read it.
	FileID string
	files  transcript.Wire
}

// part is one piece of a message in the neutral form.
type part struct {
	kind partKind
	// body is the source block whose payload (Transcript.BodyText) is a text part's text
	// or a call's arguments. It is decoded only when needed: a text the target takes as it
	// is gets copied from its literal (see conversation.literal).
	body *transcript.Block
	// src is the transcript body belongs to: the document, or the stretch of a streamed
	// one that was in memory when the part was read (see stream.go).
	src   *transcript.Transcript
	image *image
	// Calls and results (a Chat Completions tool message may name its tool too).
	id, name string
	args     string // a call's arguments as JSON text (a function call), or raw input text (custom), when body is not set
	custom   bool   // a free-form (custom) tool call: args is plain text, not JSON
	result   []part // a result's content: text and image parts
	resultS  bool   // the result's content was one plain string
	isError  bool
	// Native parts: the raw JSON and the wire it belongs to; what says what it is
	// when the target cannot take it. Reasoning keeps only this: no target takes
	// another provider's reasoning as text.
	raw    string
	native transcript.Wire
	what   string
	// inContent: a native part that is a member of a message's content (a Responses
	// input_file), not an item of its own.
	inContent bool
}

// message is one turn in the neutral form.
type message struct {
	role  string // user, assistant, system, developer
	parts []part
	str   bool // the text content was one plain string (tool calls may sit beside it)
}

// tool is a tool schema.
type tool struct {
	name, description string
	schema            string // JSON Schema of the input, raw
	// strict is whether the arguments must match the schema exactly: as the source says,
	// else its format's default (true for Responses, false for the others).
	strict bool
	raw    string // the declaration as written, when it is not a plain function tool
	native transcript.Wire
}

// conversation is a document in the neutral form.
type conversation struct {
	t        *transcript.Transcript // the source, which the parts' bodies point into
	from     transcript.Format
	system   []part // leading system prompt: text parts
	systemS  bool   // the system prompt was one plain string
	messages []message
	tools    []tool
	// Request parameters the three formats share, as raw JSON values ("" when absent).
	model, maxTokens, temperature, topP, stop, stream string
	// choice is tool_choice in the neutral form: "auto", "any" (OpenAI's "required"),
	// "none" or "tool" (then choiceTool names it), "" when absent or of no shared kind.
	choice, choiceTool string
	// parallel is parallel_tool_calls as raw JSON (Anthropic's disable_parallel_tool_use
	// turned round), "" when absent.
	parallel string
	// dropped lists the members of a request body's root that no target carries.
	dropped []string
	// fieldNames are the members of messages and parts that no target carries (see
	// fieldLosses), fields how many there were; refusals counts refusals, which become text.
	fieldNames       []string
	fields, refusals int
	// renamed counts tool results named otherwise than their call (Chat Completions' name
	// on a tool message), which only Chat Completions can say.
	renamed int
	// fieldSeen are the fieldNames, to add each once however many stretches they are read in.
	fieldSeen map[string]bool

	// next, for a streamed document, reads the messages of its next stretch into messages
	// and reports whether there was one; nil once every message is read (a document read
	// whole has them all from the start). The writers ask for messages through msg, which
	// calls it, and let go of those they wrote through written.
	next  func() bool
	freed int // messages before this one are written and let go
	// sink, when set, takes the output a piece at a time as it is written (a cli.Spool),
	// instead of one buffer holding it beside the document it is made from, and gives it
	// back whole once that is let go; sinkErr is the first error writing to it.
	sink interface {
		io.Writer
		Bytes() ([]byte, error)
	}
	sinkErr error
}

// msg is message i, read far enough that it is complete (a later message exists or every
// message is read: Responses items of one side join the message before them), or nil when
// there is no message i.
func (c *conversation) msg(i int) *message {
	for c.next != nil && len(c.messages) <= i+1 {
		if !c.next() {
			c.next = nil
		}
	}
	if i < len(c.messages) {
		return &c.messages[i]
	}
	return nil
}

// written lets go of the messages before to, which are in the output: their parts hold the
// text of the stretch of a streamed document they were read from.
func (c *conversation) written(to int) {
	if to > c.freed {
		clear(c.messages[c.freed:to])
		c.freed = to
	}
}

// text is a text part's text, decoded.
func (c *conversation) text(p *part) string { return p.src.BodyText(p.body) }

// args is a call's arguments, decoded.
func (c *conversation) args(p *part) string {
	if p.body != nil {
		return p.src.BodyText(p.body)
	}
	return p.args
}

// literal is the JSON string literal a part's text or arguments was read from, or "".
func (c *conversation) literal(p *part) string {
	if b := p.body; b != nil && !b.BodyJSON && !b.Body.IsZero() {
		return p.src.Slice(b.Body)
	}
	return ""
}

// Loss counts one kind of thing the target format cannot express.
type Loss struct {
	Kind   string `json:"kind"`
	Count  int    `json:"count"`
	Detail string `json:"detail"`
}

// losses collects losses by kind, in the order they were first seen.
type losses struct {
	order []string
	by    map[string]*Loss
}

func (l *losses) add(kind, detail string) {
	if l.by == nil {
		l.by = map[string]*Loss{}
	}
	if x, ok := l.by[kind]; ok {
		x.Count++
		return
	}
	l.by[kind] = &Loss{Kind: kind, Count: 1, Detail: detail}
	l.order = append(l.order, kind)
}

func (l *losses) list() []Loss {
	out := make([]Loss, 0, len(l.order))
	for _, k := range l.order {
		out = append(out, *l.by[k])
	}
	return out
}
