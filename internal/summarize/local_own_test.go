package summarize

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestExtractorOwnsNothing: Add keeps nothing of the transcript it is given. Each message
// comes in a transcript of its own whose text — the document bytes the message spans, and
// every string of the message — lives in a buffer the test overwrites once Add returns;
// the sections are still Local's on the whole document.
func TestExtractorOwnsNothing(t *testing.T) {
	for _, d := range localDocs(t) {
		for list, msgs := range messageLists(d.t) {
			x := NewExtractor()
			own := make([]transcript.Message, len(d.t.Messages))
			for _, mi := range msgs {
				one, arena := ownMessage(t, d.t, mi, own)
				x.Add(one, mi)
				for i := range arena {
					arena[i] = '#'
				}
				clear(own[mi].Blocks)
				own[mi] = transcript.Message{}
			}
			if got, want := x.Sections(), Local(d.t, msgs); !reflect.DeepEqual(got, want) {
				meta := Meta{Messages: len(msgs), Backend: "local"}
				t.Errorf("%s, %s messages: one message at a time differs from Local\ngot:\n%s\nwant:\n%s", d.name, list, Render(got, meta), Render(want, meta))
			}
		}
	}
}

// ownMessage puts a copy of message mi in own[mi] and returns a transcript that holds only
// it: Doc is the part of the document the message spans (Base its offset), and Doc and
// every string of the message are in the returned buffer. The strings are made with
// unsafe.String so that overwriting the buffer shows any the extractor kept.
func ownMessage(t *testing.T, tr *transcript.Transcript, mi int, own []transcript.Message) (*transcript.Transcript, []byte) {
	t.Helper()
	m := tr.Messages[mi]
	lo, hi := m.Span.Start, m.Span.End
	for _, l := range m.Lines {
		lo, hi = min(lo, l.Start), max(hi, l.End)
	}
	m.Blocks = copyBlocks(m.Blocks)
	size := hi - lo
	messageStrings(&m, func(s *string) { size += len(*s) })
	arena := make([]byte, 0, size)
	put := func(s string) string {
		at := len(arena)
		arena = append(arena, s...)
		return unsafe.String(unsafe.SliceData(arena[at:]), len(s))
	}
	doc := put(tr.Doc[lo-tr.Base : hi-tr.Base])
	messageStrings(&m, func(s *string) { *s = put(*s) })
	var inside func(bs []transcript.Block)
	inside = func(bs []transcript.Block) {
		for i := range bs {
			if b := &bs[i]; !b.Body.IsZero() && (b.Body.Start < lo || b.Body.End > hi) {
				t.Fatalf("message %d: a block's body %v is outside the message's lines [%d, %d)", mi, b.Body, lo, hi)
			}
			inside(bs[i].Parts)
		}
	}
	inside(m.Blocks)
	own[mi] = m
	return &transcript.Transcript{Format: tr.Format, Doc: doc, Base: lo, Messages: own}, arena
}

func copyBlocks(bs []transcript.Block) []transcript.Block {
	if bs == nil {
		return nil
	}
	out := slices.Clone(bs)
	for i := range out {
		b := &out[i]
		b.ToolIDs = slices.Clone(b.ToolIDs)
		b.Parts = copyBlocks(b.Parts)
		if b.Image != nil {
			img := *b.Image
			b.Image = &img
		}
	}
	return out
}

// messageStrings calls fn with every string of a message.
func messageStrings(m *transcript.Message, fn func(*string)) {
	fn(&m.Role)
	fn(&m.ID)
	fn(&m.Name)
	var blocks func(bs []transcript.Block)
	blocks = func(bs []transcript.Block) {
		for i := range bs {
			b := &bs[i]
			fn(&b.Type)
			fn(&b.ToolID)
			fn(&b.ToolName)
			for k := range b.ToolIDs {
				fn(&b.ToolIDs[k])
			}
			if b.Image != nil {
				fn(&b.Image.MediaType)
				fn(&b.Image.URL)
				fn(&b.Image.Detail)
			}
			blocks(b.Parts)
		}
	}
	blocks(m.Blocks)
}

// TestEveryAgentWrapped walks the formats: each agent that writes one has its wrappers,
// so its user messages are read without them.
func TestEveryAgentWrapped(t *testing.T) {
	for _, f := range transcript.Formats {
		if a := f.Agent(); a != "" {
			if _, ok := agentWrappers[a]; !ok {
				t.Errorf("%s: agent %q has no wrappers", f, a)
			}
		}
	}
}
