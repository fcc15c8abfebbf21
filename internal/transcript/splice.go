package transcript

import (
	"bufio"
	"fmt"
	"io"
	"slices"
)

// Editing a streamed JSONL transcript takes two passes over the document, neither of which
// holds it whole. The first is Stream: a tier keeps the messages of each record (their
// blocks and spans, not their text) and whatever it needs to know of their text, and
// Conversation assembles them into the conversation Parse would give, without the text, to
// plan with. The second is Splice: the document is read again and copied to the output,
// and only the spans the plan needs to look at are read into memory, edited, and written.

// Conversation returns the conversation of a streamed document as Parse reads it, but
// without its text: carried[seq] are the Messages that Stream passed for record seq, which
// the caller kept; a message's blocks are those of its parts, in order. Doc is empty, so
// Slice and BodyText must not be used on it: every span is a document offset, to be read
// in the second pass (Splice). (Parse assembles its transcript the same way.) With carried
// nil, the messages come without their blocks.
func (o *Outline) Conversation(carried [][]Message) *Transcript {
	t := &Transcript{Format: o.Format, Records: o.Records, Usage: o.Usage, Model: o.Model, Warnings: o.Warnings, Attachments: o.Attachments, Subagent: o.Subagent}
	if len(o.Messages) > 0 {
		t.Messages = make([]Message, len(o.Messages))
	}
	for i, m := range o.Messages {
		t.Messages[i] = withBlocks(m, o.Parts[i], carried)
	}
	if pr := o.Prior; pr != nil {
		tp := *pr
		tp.Messages = make([]Message, len(pr.Messages))
		for i, m := range pr.Messages {
			tp.Messages[i] = withBlocks(m, pr.Parts[i], carried)
		}
		t.Prior = &tp
	}
	settlePinned(t.Format, t.Messages)
	return t
}

// withBlocks is a message of an outline with the blocks of its parts, when they were
// carried.
func withBlocks(m Message, parts []Part, carried [][]Message) Message {
	switch {
	case carried == nil: // nothing was kept: the messages without their blocks
	case len(parts) == 1:
		m.Blocks = carried[parts[0].Record][parts[0].Message].Blocks
	default:
		for _, pt := range parts {
			m.Blocks = append(m.Blocks, carried[pt.Record][pt.Message].Blocks...)
		}
	}
	return m
}

// Splice copies the document r reads to w with edits made, as Apply does for a document in
// memory. regions are the spans the caller needs to read to decide the edits, in document
// order and not overlapping; for each, edit gets its text and document offset and returns
// the edits to make inside it (spans in document offsets). Everything outside them is
// copied as it is, a buffer at a time. Splice returns the number of edits made.
func Splice(r io.Reader, w io.Writer, regions []Span, edit func(i int, text string, base int) ([]Edit, error)) (int, error) {
	br := newSpliceReader(r)
	at, made := 0, 0
	for i, rg := range regions {
		if rg.Start < at || rg.End < rg.Start {
			return made, fmt.Errorf("region %d (%d-%d) is out of order", i, rg.Start, rg.End)
		}
		if _, err := io.CopyN(w, br, int64(rg.Start-at)); err != nil {
			return made, short(err)
		}
		buf := make([]byte, rg.Len())
		if _, err := io.ReadFull(br, buf); err != nil {
			return made, short(err)
		}
		at = rg.End
		part := &Transcript{Doc: string(buf), Base: rg.Start}
		edits, err := edit(i, part.Doc, rg.Start)
		if err != nil {
			return made, err
		}
		out, err := part.Apply(edits)
		if err != nil {
			return made, err
		}
		if _, err := w.Write(out); err != nil {
			return made, err
		}
		made += len(edits)
	}
	_, err := io.Copy(w, br)
	return made, err
}

// newSpliceReader buffers the second pass's reading of a document.
func newSpliceReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }

// short says that the document ended before a region did.
func short(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("the document is shorter than it was on the first pass: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// MergeSpans sorts spans and joins those that overlap or touch.
func MergeSpans(spans []Span) []Span {
	out := slices.Clone(spans)
	slices.SortFunc(out, func(a, b Span) int { return a.Start - b.Start })
	n := 0
	for _, s := range out {
		if n > 0 && s.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, s.End)
			continue
		}
		out[n] = s
		n++
	}
	return out[:n]
}
