package convert

import (
	"fmt"

	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Targets are the formats ctx-convert writes.
var Targets = []transcript.Format{transcript.Anthropic, transcript.OpenAI, transcript.Responses}

// DefaultTarget is the API format a saved transcript converts to when no target is named:
// the request format its agent sent. A Claude Code session becomes anthropic, a Codex
// rollout responses, and a conversation saved in an API format but not as a request body
// (a bare message array as tau-bench keeps it, SWE-agent's "history") a request of that
// format. A request body has none: converting it needs a target.
func DefaultTarget(t *transcript.Transcript) (transcript.Format, bool) {
	wire := t.Format.Wire()
	switch {
	case wire == 0:
		return "", false
	case t.Format.Agent() != "":
		return wire.Request(), true
	case t.ArrayPath != wire.Body():
		return t.Format, true
	}
	return "", false
}

// Result is a converted document and what the conversion could not carry over.
type Result struct {
	Doc []byte
	// Losses are what the target cannot express, by kind.
	Losses []Loss
	// Repaired are the problems of the converted document that ctx-repair's rules fixed
	// (a call the transcript never answered, two user messages in a row...).
	Repaired []repair.Problem
	// Messages is the number of messages written.
	Messages int

	// out is Doc parsed (without its final line break), for the statistics.
	out *transcript.Transcript
}

// Convert writes the conversation of t as a request document of format to.
func Convert(t *transcript.Transcript, to transcript.Format) (*Result, error) {
	return write(read(t), to, nil)
}

// write writes conversation c as a request document of format to. read, when set, is
// called once the conversation is read and written, before the output is checked: the
// document it was read from is let go there, and with c.sink set the output, held there
// until then, is read back into memory only after.
func write(c *conversation, to transcript.Format, read func()) (*Result, error) {
	var l losses
	var doc []byte
	switch to {
	case transcript.Anthropic:
		doc = writeAnthropic(c, &l)
	case transcript.OpenAI:
		doc = writeOpenAI(c, &l)
	case transcript.Responses:
		doc = writeResponses(c, &l)
	default:
		return nil, fmt.Errorf("cannot convert to %s: the targets are anthropic, openai and responses", to)
	}
	if c.sink != nil {
		sink := c.sink
		if c.sinkErr == nil {
			_, c.sinkErr = sink.Write(doc)
		}
		if err := c.sinkErr; err != nil {
			return nil, fmt.Errorf("hold the output: %w", err)
		}
		doc = nil
		c = nil
		if read != nil {
			read() // before the output is read back into memory, which then takes its room
		}
		var err error
		if doc, err = sink.Bytes(); err != nil {
			return nil, fmt.Errorf("hold the output: %w", err)
		}
	} else if read != nil {
		c = nil
		read()
	}
	// Parse keeps doc without copying it; the line break appended at the end goes past
	// what it holds, into the room the writer left, so doc is not copied either.
	out, err := transcript.Parse(doc, transcript.Options{Format: to})
	if err != nil {
		return nil, fmt.Errorf("internal error: the converted document does not parse: %w", err)
	}
	edits, problems, err := repair.Plan(out)
	if err != nil {
		return nil, err
	}
	final, fixed := out, doc
	if len(edits) > 0 {
		// Plan found nothing to fix otherwise; after fixing, check again.
		if fixed, err = out.Apply(edits); err != nil {
			return nil, err
		}
		if final, err = transcript.Parse(fixed, transcript.Options{Format: to}); err != nil {
			return nil, fmt.Errorf("internal error: the repaired document does not parse: %w", err)
		}
		if left := repair.Check(final); len(left) > 0 {
			return nil, fmt.Errorf("internal error: the converted document still breaks %d rules (first: %s)", len(left), left[0])
		}
	}
	n := 0
	for _, m := range final.Messages {
		if !m.Header {
			n++
		}
	}
	// A document on its own line, as jq and the other text tools end theirs.
	return &Result{Doc: append(fixed, '\n'), Losses: l.list(), Repaired: problems, Messages: n, out: final}, nil
}
