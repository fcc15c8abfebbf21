package convert

import (
	"errors"
	"fmt"
	"iter"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A Claude Code session or a Codex rollout is converted without holding it (issue 21): the
// run's first pass streams its records and keeps the conversation's structure (cli, package
// measure), and the second reads the document again a stretch at a time, as the writer asks
// for the messages of the next stretch (conversation.msg). Each stretch's text is let go
// once the messages read from it are written, so memory holds the structure, a stretch or
// two, and the output, not the input; a Claude Code session holds about twice its
// conversation, so that is less than half of what reading it whole took.
//
// The messages are read by the same code as a document read whole, from a transcript whose
// text is the stretch (Transcript.Base places it in the document), so the output is the
// same to the byte: TestStreamedMatchesWhole holds the two readings to it.

// stretchBytes is about how much of the document one stretch reads: large enough that the
// reads are few, small enough to weigh nothing beside the output.
var stretchBytes = 1 << 20 // a variable only for TestStreamedMatchesWhole, which cuts stretches small

// stretch is a stretch of the document and the messages (from, to) of the conversation in it.
type stretch struct {
	span     transcript.Span
	from, to int
}

// stretches cuts the document of t (a streamed document's structure) into stretches that
// hold its messages in order, every message in one stretch. ok is false where that cannot
// be done, which a document read whole must then do: a message before the one ahead of it in
// the document, or a header (which the writers need before the first message) after a
// message.
func stretches(t *transcript.Transcript) (out []stretch, ok bool) {
	others := false
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Header && others {
			return nil, false
		}
		others = others || !m.Header
		sp := m.Span
		grow := func(s transcript.Span) {
			if s.Len() > 0 || !s.IsZero() {
				sp.Start, sp.End = min(sp.Start, s.Start), max(sp.End, s.End)
			}
		}
		for _, l := range m.Lines {
			grow(l)
		}
		for bi := range m.Blocks {
			grow(m.Blocks[bi].Span)
		}
		n := len(out)
		switch {
		case n > 0 && sp.Start < out[n-1].span.Start:
			return nil, false
		// Messages that share records, or touch (cli.Doc.Visit would read them as one), or
		// that fit in the stretch with what lies between (a compaction or a dead branch can
		// leave megabytes between two messages, which are not read).
		case n > 0 && (sp.Start <= out[n-1].span.End || sp.End-out[n-1].span.Start <= stretchBytes):
			out[n-1].span.End = max(out[n-1].span.End, sp.End)
			out[n-1].to = i + 1
		default:
			out = append(out, stretch{span: sp, from: i, to: i + 1})
		}
	}
	return out, true
}

// errStopped ends the reading of the stretches when the conversion stops before the last.
var errStopped = errors.New("stopped")

// readStreamed is the conversation of a streamed document, whose messages are read as the
// writer asks for them; finish, called once the output is written, says whether reading the
// document again failed (it changed since the first pass, say), which makes the output
// worthless. ok is false where the document must be read whole (see stretches).
func readStreamed(d *cli.Doc) (c *conversation, finish func() error, ok bool) {
	t := d.T
	st, ok := stretches(t)
	if !ok {
		return nil, nil, false
	}
	spans := make([]transcript.Span, len(st))
	for i, s := range st {
		spans[i] = s.span
	}
	var err error
	next, stop := iter.Pull2(func(yield func(string, int) bool) {
		verr := d.Visit(spans, func(text string, base int) error {
			if !yield(text, base) {
				return errStopped
			}
			return nil
		})
		if verr != nil && !errors.Is(verr, errStopped) {
			err = verr
		}
	})
	c = readHead(t)
	k := 0
	c.next = func() bool {
		text, base, more := next()
		if !more {
			return false
		}
		s := st[k]
		if base != s.span.Start || len(text) != s.span.Len() {
			err = fmt.Errorf("internal: %s: read %d bytes at %d for the stretch %d-%d", d.Display(), len(text), base, s.span.Start, s.span.End)
			return false
		}
		k++
		// Visit gives each stretch a string of its own, which the parts read from it keep.
		c.readMessages(&transcript.Transcript{Format: t.Format, Doc: text, Base: base, Messages: t.Messages[s.from:s.to],
			ArrayPath: t.ArrayPath, Model: t.Model})
		return true
	}
	finish = func() error {
		stop()
		if err == nil && k < len(st) {
			err = fmt.Errorf("internal: %s: %d of %d stretches converted", d.Display(), k, len(st))
		}
		return err
	}
	return c, finish, true
}
