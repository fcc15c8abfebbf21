// Package transcript owns the conversation model every ctxkit tool works on: it detects and
// reads the six document formats (Anthropic Messages, OpenAI Chat Completions, OpenAI
// Responses, Claude Code session JSONL, Codex rollout JSONL, Cline / Roo Code task
// history) into messages and blocks that remember the exact byte span they came from, and
// it pairs tool calls with their results.
//
// Nothing is unmarshalled into map trees: the document is kept as one string and every
// message, block and text is a Span into it, so a writer can splice edits into the original
// bytes and leave everything else untouched.
//
// JSONL transcripts can also be streamed (Stream): one record at a time, in memory that does
// not grow with the size of the messages. Parse and Stream read records with the same code.
package transcript

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Format names a document format.
type Format string

// The formats ctxkit reads.
const (
	Anthropic  Format = "anthropic"
	OpenAI     Format = "openai"
	Responses  Format = "responses"
	ClaudeCode Format = "claude-code"
	Codex      Format = "codex"
	Cline      Format = "cline"
)

// Formats lists every format in a stable order; formats.go says what each one is.
var Formats = []Format{Anthropic, OpenAI, Responses, ClaudeCode, Codex, Cline}

// Kind classifies a block.
type Kind uint8

// Block kinds.
const (
	Text Kind = iota
	ToolCall
	ToolResult
	Thinking
	Image
	Other
)

var kindNames = [...]string{"text", "tool_call", "tool_result", "thinking", "image", "other"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Span is a half-open byte range [Start, End) of the document.
type Span struct{ Start, End int }

// Len is the span's length in bytes.
func (s Span) Len() int { return s.End - s.Start }

// IsZero reports whether the span is unset.
func (s Span) IsZero() bool { return s.Start == 0 && s.End == 0 }

// Block is one piece of a message: a text, a tool call, a tool result, reasoning, an image
// or anything else the format carries.
type Block struct {
	Kind Kind
	// Type is the format's own tag for the block ("tool_use", "function_call", "input_text"...).
	Type string
	// Span is the block's JSON value. For a message whose content is a plain string the block
	// is that string.
	Span Span
	// Body holds the block's main payload: a JSON string literal (quotes included) to be
	// decoded, or, when BodyJSON is set, a JSON value counted as written (a tool_use input).
	Body     Span
	BodyJSON bool
	// ToolID links calls and results; ToolIDs holds every id of a result that answers a list
	// of calls (SWE-agent's tool_call_ids).
	ToolID   string
	ToolIDs  []string
	ToolName string
	IsError  bool
	// Parts are the parts of a result whose content is a list (text and images).
	Parts []Block
	// Image is set for image blocks.
	Image *ImageRef
	// Encrypted is the size in bytes of an opaque payload the model still reads (redacted
	// thinking, encrypted reasoning).
	Encrypted int
	// Signature is the size in bytes of the signature of a thinking block stored without
	// its text (Claude Code 2.x writes some so): the thinking, encrypted, which the model
	// still reads when the block is sent back. 0 for a block whose text is there.
	Signature int
	// Head is the length of a label at the start of a result's decoded body, which a tier
	// that replaces the result's text keeps (Cline's "[read_file for 'x'] Result:" line,
	// see SplitLabel).
	Head int
	// Lead is the span of a text block before a result that is its label (older Cline
	// versions write the label as a block of its own): the result as the provider should
	// see it starts there.
	Lead Span
	// Agent marks a text the agent wrote into a user message for the model (Cline's
	// <environment_details>, a result's label): not something the user said.
	Agent bool
	// User marks a tool result that carries the user's own words (Cline's answer to
	// ask_followup_question, feedback on attempt_completion): re-running the call would not
	// give them back, so the tiers that cut, clear or offload results leave it whole.
	User bool
	// Pinned marks a text the client sends as standing context, recognised by its own tags
	// (AGENTS.md, <environment_context>, Claude Code's first <system-reminder>s; see
	// protect.go): no lossy tier changes it, and one that summarizes its message carries it
	// over verbatim.
	Pinned bool
}

// ImageRef locates an image's data.
type ImageRef struct {
	MediaType string
	// Data is the base64 text (a JSON string literal; may be a data: URL). Zero for URL images.
	Data   Span
	URL    string
	Detail string
}

// Message is one turn of the conversation as the model sees it.
type Message struct {
	Role string
	// Span is the message's JSON value. For JSONL formats it is the first record line the
	// message came from; Lines lists all of them (a Claude Code assistant turn is split over
	// several lines sharing message.id).
	Span  Span
	Lines []Span
	// Header marks a message held outside the message array (Anthropic's top-level system,
	// Responses' instructions, a Codex session's base instructions).
	Header bool
	Blocks []Block
	// ID is the format's message id when there is one (Claude Code message.id or uuid).
	ID   string
	Name string
	Time time.Time
	// Summary marks a message that stands for compacted history (Claude Code
	// isCompactSummary, a Codex compacted record).
	Summary bool
	// Pinned marks a message that is pinned context whole: every block of it is Pinned
	// (Codex's AGENTS.md and environment message). It is set from the blocks as they are
	// read, so it holds for a message whose blocks were not kept.
	Pinned bool
}

// Record is one line of a JSONL document.
type Record struct {
	Span Span // the line without its line break
	Line int  // 1-based line number
	// Next is the document offset just past the line's line break: where the next line
	// starts, or the document's end. Deleting Span.Start..Next deletes the line.
	Next int
	Type string
	// Message is the index in Messages of the message this line belongs to, or -1 when the
	// line is not part of the live conversation (metadata, dead branches, sidechains).
	Message int
	// UUID and Parent are a Claude Code line's uuid and parentUuid ("" when absent or not
	// a string): the links of the session's tree, kept so a tool can follow them without
	// the document's text.
	UUID, Parent string
	// Left says why a record that is not part of the conversation (Message is -1) was
	// left out; Read for one that is.
	Left Left
}

// Left names why a JSONL record is not part of the conversation read. Every record is
// either read or left out for one of these reasons, so that nothing is lost without a
// name (the conformance test holds the readers to it).
type Left uint8

// Why records are left out.
const (
	Read       Left = iota // part of the conversation
	NotMessage             // a record that carries no message: metadata, attachments, snapshots, usage events
	DeadBranch             // a message on a branch of the session tree that a rewind or fork left behind
	Sidechain              // a subagent's message (Claude Code isSidechain; --sidechains reads the newest subagent's)
	Compacted              // a message from before a compaction, which the compacted history stands for
	MainThread             // with --sidechains, a message of the session the subagent's lines sit in
)

var leftNames = [...]string{"read", "not a message", "dead branch", "sidechain", "compacted", "main thread"}

func (l Left) String() string {
	if int(l) < len(leftNames) {
		return leftNames[l]
	}
	return "unknown"
}

// Usage is a real token figure recorded by the agent that wrote the transcript.
type Usage struct {
	// After is the index of the last message the figure covers.
	After int
	// Input counts every prompt token, cached or not; CacheRead and CacheCreation are the
	// parts of it the provider reported as cache hits and cache writes.
	Input, CacheRead, CacheCreation, Output int
	// Window is the context window the agent recorded with the figure, if any.
	Window int
}

// Prior is a conversation a compaction replaced, up to its newest usage figure: its
// messages (and, in a Transcript, their blocks), the parts of each (Outline.Parts), the
// attachments before the figure's message, and the figure, whose After indexes Messages.
type Prior struct {
	Messages    []Message
	Parts       [][]Part
	Attachments []Attachment
	Usage       Usage
}

// Context is the size of the context the figure measures: the prompt plus the reply.
func (u Usage) Context() int { return u.Input + u.Output }

// Transcript is a parsed document.
type Transcript struct {
	Format Format
	// Doc is the whole input. Every Span indexes it: Span{s, e} is Doc[s-Base : e-Base].
	Doc string
	// Base is the document offset of Doc's first byte. It is 0 except in the one-record
	// transcripts Stream hands out, whose Doc is a single line of a longer document.
	Base     int
	Messages []Message
	// Tools is the JSON array of tool schemas the request declares, if any.
	Tools Span
	// Array is the JSON array that holds the messages (JSON formats), and ArrayPath the
	// gjson path that leads to it ("" for a bare array).
	Array     Span
	ArrayPath string
	// Records are all lines of a JSONL document.
	Records []Record
	// Attachments are what the conversation's Claude Code attachment records put into the
	// prompt, in order (Attachment). In the one-record transcripts Stream hands out, the
	// record's own, Before unset (-1).
	Attachments []Attachment
	// Usage lists the real usage figures in document order.
	Usage []Usage
	// Prior is the conversation the newest compaction replaced, up to and with the
	// newest usage figure it records (nil when there is no compaction, or no figure before
	// it). Until the conversation records a figure of its own, that one is what tells the
	// part of the prompt no record holds (measure).
	Prior *Prior
	// Model is the model the document names, if any.
	Model string
	// Subagent says the conversation read is a Claude Code subagent's (isSidechain
	// lines): a subagent's own log, or with Options.Sidechains the subagent's lines of a
	// log that holds them beside the session's.
	Subagent bool
	// Warnings say how the reader departed from the format's rules to read the document
	// without losing messages (a Claude Code log whose records do not chain, read in line
	// order). A tool prints each once on stderr.
	Warnings []string

	// excerpts hold text of a streamed document outside Doc (see AddExcerpt).
	excerpts []excerpt
	// memo is what Reparse reuses of a document Parse or Reparse read (reparse.go).
	memo *reuse
}

// excerpt is the text of the document from offset base on.
type excerpt struct {
	base int
	text string
}

// Slice returns the document text of a span.
func (t *Transcript) Slice(s Span) string {
	if s.Start >= t.Base && s.End-t.Base <= len(t.Doc) {
		return t.Doc[s.Start-t.Base : s.End-t.Base]
	}
	return t.excerptSlice(s)
}

// AddExcerpt gives a transcript without the document's text (a streamed conversation, see
// Conversation) the text of one part of it, starting at document offset base, so that
// Slice and BodyText work on spans inside that part. Excerpts are added in document order
// and do not overlap. A tool that streams a document reads into memory only the parts its
// plan needs, then runs the same code as on a parsed document.
func (t *Transcript) AddExcerpt(base int, text string) {
	if n := len(t.excerpts); n > 0 && base < t.excerpts[n-1].base+len(t.excerpts[n-1].text) {
		panic(fmt.Sprintf("transcript: excerpt at %d overlaps or precedes the one before", base))
	}
	t.excerpts = append(t.excerpts, excerpt{base: base, text: text})
}

func (t *Transcript) excerptSlice(s Span) string {
	k := sort.Search(len(t.excerpts), func(k int) bool { return t.excerpts[k].base > s.Start }) - 1
	if k < 0 || s.End > t.excerpts[k].base+len(t.excerpts[k].text) || s.End < s.Start {
		// A plan that reads text it did not ask for is a bug in the tool, not in the input.
		panic(fmt.Sprintf("transcript: span %d-%d is outside the text read", s.Start, s.End))
	}
	e := t.excerpts[k]
	return e.text[s.Start-e.base : s.End-e.base]
}

// LineEnd is where the record whose line starts at line.Start ends, its line break
// included (Record.Next); line.End when no record starts there.
func (t *Transcript) LineEnd(line Span) int {
	if r := t.recordAt(line.Start); r != nil && r.Next >= line.End {
		return r.Next
	}
	return line.End
}

// BodyText returns a block's payload as the model reads it: the decoded string, or the raw
// JSON of a structured payload. Parts are not included.
func (t *Transcript) BodyText(b *Block) string {
	if b.Body.IsZero() {
		return ""
	}
	raw := t.Slice(b.Body)
	if b.BodyJSON {
		return raw
	}
	return decodeString(raw)
}

// BodySize returns the length in bytes of BodyText(b), and its length in characters as
// utf8.RuneCountInString counts them, without building the text.
func (t *Transcript) BodySize(b *Block) (size, runes int) {
	if b.Body.IsZero() {
		return 0, 0
	}
	raw := t.Slice(b.Body)
	if b.BodyJSON {
		return len(raw), utf8.RuneCountInString(raw)
	}
	return stringSize(raw)
}

// BodyLen is the first result of BodySize, the length in bytes of BodyText(b), at less cost.
func (t *Transcript) BodyLen(b *Block) int {
	if b.Body.IsZero() {
		return 0
	}
	raw := t.Slice(b.Body)
	if b.BodyJSON {
		return len(raw)
	}
	return stringLen(raw)
}

// LastUsage returns the newest real usage figure, if the transcript records any.
func (t *Transcript) LastUsage() (Usage, bool) { return LastUsage(t.Usage) }

// LastUsage returns the newest of a list of usage figures, if there is one.
func LastUsage(us []Usage) (Usage, bool) {
	if len(us) == 0 {
		return Usage{}, false
	}
	return us[len(us)-1], true
}

// MessageBytes is message i as written in the document: its JSON value, or its lines for
// JSONL (a line break after each). Two versions of a conversation share a message when
// these bytes are equal.
func (t *Transcript) MessageBytes(i int) string {
	m := &t.Messages[i]
	if len(m.Lines) <= 1 {
		return t.Slice(m.Span)
	}
	var b strings.Builder
	for _, l := range m.Lines {
		b.WriteString(t.Slice(l))
		b.WriteByte('\n')
	}
	return b.String()
}
