package transcript

import (
	"fmt"
	"strings"
	"unique"

	"github.com/tidwall/gjson"
)

// Outline is a JSONL conversation without its text: the records of the document, the live
// conversation's messages without their blocks, and which records' messages make up each
// of them. Stream returns it; Parse builds the same outline and fills in the blocks.
type Outline struct {
	Format Format
	// Records are all records (non-blank lines) of the document. Spans are document offsets;
	// Message is the index in Messages of the message the record is part of, or -1.
	Records []Record
	// Messages are the live conversation's messages; their Blocks are nil.
	Messages []Message
	// Parts lists, for each message, the record messages it is made of, in order. A Claude
	// Code assistant turn written over several lines has one part per line; its blocks are
	// the blocks of its parts, one after another.
	Parts [][]Part
	// Attachments are the live conversation's attachment records that put something into
	// the prompt (Claude Code), in order; their blocks' spans are document offsets.
	Attachments []Attachment
	// Prior is the conversation the newest compaction replaced, as in Transcript; its
	// Messages have no blocks.
	Prior *Prior
	// Usage, Model, Warnings and Subagent are as in Transcript.
	Usage    []Usage
	Model    string
	Warnings []string
	Subagent bool
}

// Part names one message a record carries: Messages[Message] of the one-record transcript
// that Stream passed for Records[Record].
type Part struct{ Record, Message int }

// recordParser reads the records of a JSONL transcript one at a time and, after the last,
// works out the live conversation. Parse and Stream both use it, so a streamed document
// gives exactly the conversation a parsed one does.
//
// Whatever a parser keeps of a record must not refer to the record's text (Stream drops
// each line after reading it): strings it keeps are copied.
type recordParser interface {
	// record reads record seq (raw is its line; r.Span places it in the document) and
	// returns the messages it carries, their spans in document offsets.
	record(seq int, r *Record, raw string) []Message
	// finish fills in the outline's Messages, Parts, Usage and Model.
	finish(o *Outline)
}

func newRecordParser(f Format, o Options) recordParser {
	switch f {
	case ClaudeCode:
		return &ccParser{sidechains: o.Sidechains, all: o.AllThreads, subagent: o.Subagent, byUUID: map[string]int{}, onlySidechains: true}
	case Codex:
		return &codexParser{}
	}
	return nil
}

// resolve ends a parse: the parser's outline, with each record linked to its message, and
// each record left out named with its reason (the parser names the reasons it knows in
// finish; a record it names none for carries no message).
func resolve(p recordParser, f Format, records []Record) *Outline {
	o := &Outline{Format: f, Records: records}
	p.finish(o)
	for mi, parts := range o.Parts {
		for _, pt := range parts {
			o.Records[pt.Record].Message = mi
			o.Records[pt.Record].Left = Read
		}
	}
	for i := range o.Records {
		if r := &o.Records[i]; r.Message < 0 && r.Left == Read {
			r.Left = NotMessage
			if f == Codex {
				r.Left = codexLeft(r)
			}
		}
	}
	return o
}

func parseJSONL(doc string, lines []Record, f Format, o Options) (*Transcript, error) {
	if o.Format != "" {
		if found := detectJSONL(doc, lines); found != "" && found != o.Format {
			return nil, formatMismatch(o.Format, found)
		}
	}
	p := newRecordParser(f, o)
	if p == nil {
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("the input has %d JSON records, one a line; %s documents are a single JSON value", len(lines), f)}
	}
	if cp, ok := p.(*codexParser); ok {
		cp.keep = true
	}
	carried := make([][]Message, len(lines))
	for i := range lines {
		carried[i] = p.record(i, &lines[i], doc[lines[i].Span.Start:lines[i].Span.End])
	}
	t := resolve(p, f, lines).Conversation(carried)
	t.Doc = doc
	t.memo = linesMemo(p, carried)
	return t, nil
}

// linesMemo is what Reparse keeps of a JSONL document's records as its reader read them.
func linesMemo(p recordParser, carried [][]Message) *reuse {
	m := &reuse{carried: carried}
	switch p := p.(type) {
	case *ccParser:
		m.cc = p.lines
	case *codexParser:
		m.codex = p.recs
	}
	return m
}

// checkLine validates one record line (start is its document offset). truncated says
// whether the error would read "truncated record" if the line is the document's last.
func checkLine(l string, start, line int) (e *Error, truncated bool) {
	if !Valid(l) {
		e = syntaxError(l, start)
		e.Line = line
		trimmed := strings.TrimSpace(l)
		return e, strings.HasPrefix(trimmed, "{") && !strings.HasSuffix(trimmed, "}")
	}
	if c := l[firstNonSpace(l)]; c != '{' {
		return &Error{Line: line, Offset: int64(start), Msg: fmt.Sprintf("expected a JSON object, found %s", typeName(gjson.Parse(l)))}, false
	}
	return nil, false
}

// markTruncated rewords the error of a document's last line that stops mid-record.
func markTruncated(e *Error) {
	e.Msg = "truncated record (the last line ends before its JSON value does): " + e.Msg
}

// keep copies a string out of a record's text, so holding it does not hold the line.
func keep(s string) string { return strings.Clone(s) }

// intern is keep for the few strings every record repeats (roles, record and block types,
// tool and model names): one shared copy of each.
func intern(s string) string { return unique.Make(s).Value() }

// detach copies every string of the messages that refers to their record's text.
func detach(ms []Message) {
	for i := range ms {
		m := &ms[i]
		m.Role, m.ID, m.Name = intern(m.Role), keep(m.ID), keep(m.Name)
		detachBlocks(m.Blocks)
	}
}

func detachBlocks(bs []Block) {
	for i := range bs {
		b := &bs[i]
		b.Type, b.ToolID, b.ToolName = intern(b.Type), keep(b.ToolID), intern(b.ToolName)
		if b.ToolIDs != nil {
			ids := make([]string, len(b.ToolIDs))
			for k, id := range b.ToolIDs {
				ids[k] = keep(id)
			}
			b.ToolIDs = ids
		}
		if b.Image != nil {
			img := *b.Image
			img.MediaType, img.URL, img.Detail = intern(img.MediaType), keep(img.URL), intern(img.Detail)
			b.Image = &img
		}
		detachBlocks(b.Parts)
	}
}
