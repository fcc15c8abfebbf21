package measure

import (
	"reflect"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// OfNext is Of(t, c, false) for t, a later version of the document prev (the next request
// of a conversation, a document a tier edited; transcript.Reparse reads one) whose tally
// prevTally is (Of or OfNext of prev, with the same counter): a message of t that is one
// of prev's (transcript.Twins: the same bytes, read the same way) takes its count from
// prevTally instead of being counted again, and so do the attachments and the tool schemas
// that are prev's. Only what is new is counted; the tally's figures (the part not in the
// file, the reasoning no longer sent) are worked out again over all of it, as Of does.
//
// prevTally must be as Of or OfNext returned it. With another counter or format, or
// without a tally of prev, OfNext is Of.
func OfNext(prev *transcript.Transcript, prevTally *Tally, t *transcript.Transcript, c tokens.Counter) *Tally {
	if prev == nil || prevTally == nil || prev.Format != t.Format || prevTally.Format != t.Format ||
		len(prevTally.Messages) != len(prev.Messages) || !sameCounter(prevTally.Counter, c) {
		return Of(t, c, false)
	}
	twins := transcript.Twins(prev, t)
	msgs := make([]Message, len(t.Messages))
	var todo []int
	blocks := 0
	for i, j := range twins {
		if j < 0 {
			todo = append(todo, i)
		} else {
			blocks += len(prevTally.Messages[j].Blocks)
		}
	}
	slab := make([]Block, blocks) // one allocation for the blocks of every message kept
	for i, j := range twins {
		if j < 0 {
			continue
		}
		pm := &prevTally.Messages[j]
		bs := slab[:len(pm.Blocks):len(pm.Blocks)]
		slab = slab[len(pm.Blocks):]
		copy(bs, pm.Blocks)
		// The strings are t's own, not prev's: a tally kept from turn to turn must not
		// hold every earlier document its messages were first read from.
		m := &t.Messages[i]
		for k := range bs {
			// dropStaleReasoning priced prev's stale reasoning at nothing; it decides
			// again for t.
			if b := &bs[k]; b.Stale > 0 {
				b.Tokens, b.Stale = b.Stale, 0
			}
			if k < len(m.Blocks) {
				tb := &m.Blocks[k]
				bs[k].ToolName, bs[k].ToolID, bs[k].ToolIDs = tb.ToolName, tb.ToolID, tb.ToolIDs
			}
		}
		msgs[i] = Message{Role: m.Role, Blocks: bs}
	}
	if len(todo) > 0 {
		countInto(t, c, ProviderOf(t.Format), false, msgs, todo)
	}
	return tally(t, c, msgs, prevCounts(prev, prevTally))
}

// prevCounts maps the text of each attachment of prev (as knownAttachment keys it) and of
// its tool schemas to what prevTally counted of it.
func prevCounts(prev *transcript.Transcript, prevTally *Tally) map[string]int {
	known := make(map[string]int, len(prev.Attachments)+1)
	if len(prevTally.Attachments) == len(prev.Attachments) {
		for i := range prev.Attachments {
			if key := attachmentKey(prev, &prev.Attachments[i]); key != "" {
				known[key] = prevTally.Attachments[i].Tokens
			}
		}
	}
	if !prev.Tools.IsZero() && prevTally.HasSchema {
		known[prev.Slice(prev.Tools)] = prevTally.Schema
	}
	return known
}

// knownAttachment is what was counted before of an attachment with the same type and
// bytes, if anything was.
func knownAttachment(t *transcript.Transcript, a *transcript.Attachment, known map[string]int) (int, bool) {
	if len(known) == 0 {
		return 0, false // (no key made)
	}
	key := attachmentKey(t, a)
	if key == "" {
		return 0, false
	}
	n, ok := known[key]
	return n, ok
}

// attachmentKey is an attachment's type and the bytes it is read from, which make what it
// counts; "" when its block has no span.
func attachmentKey(t *transcript.Transcript, a *transcript.Attachment) string {
	if a.Block.Span.IsZero() {
		return ""
	}
	// The type never holds a NUL byte (a document with one is refused), nor does a schema
	// start with one: the keys of attachments and schemas do not meet.
	return "\x00" + a.Type + "\x00" + t.Slice(a.Block.Span)
}

// sameCounter reports whether two counters are the same one (a counter whose type cannot
// be compared is taken for another).
func sameCounter(a, b tokens.Counter) (same bool) {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false // a comparable type holding something that is not
		}
	}()
	return a == b
}
