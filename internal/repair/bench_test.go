package repair

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkRepair measures ctx-repair on generated 10 MB documents: once clean (parse and
// check only), once with every third tool result pointed at a call that does not exist
// (parse, check, fix, splice, and the re-read that verifies the output).
func BenchmarkRepair(b *testing.B) {
	for _, format := range []string{"anthropic", "openai", "claude-code", "codex"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		clean := buf.Bytes()
		broken := breakEveryThird(b, clean)
		for _, doc := range []struct {
			name string
			data []byte
		}{{"clean", clean}, {"broken", broken}} {
			b.Run(format+"/"+doc.name, func(b *testing.B) {
				b.SetBytes(int64(len(doc.data)))
				for b.Loop() {
					if _, _, err := repairDoc(format, doc.data, transcript.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// breakEveryThird renames the tool id of every third result.
func breakEveryThird(b testing.TB, doc []byte) []byte {
	t, err := transcript.Parse(doc, transcript.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var edits []transcript.Edit
	n := 0
	for mi := range t.Messages {
		for bi := range t.Messages[mi].Blocks {
			bl := &t.Messages[mi].Blocks[bi]
			if bl.Kind != transcript.ToolResult || bl.ToolID == "" {
				continue
			}
			if n++; n%3 != 0 {
				continue
			}
			raw := t.Slice(bl.Span)
			q := transcript.Quote(bl.ToolID)
			if i := bytes.Index([]byte(raw), []byte(q)); i >= 0 {
				s := bl.Span.Start + i
				edits = append(edits, transcript.Edit{Span: transcript.Span{Start: s, End: s + len(q)}, With: `"gone` + bl.ToolID[min(4, len(bl.ToolID)):] + `"`})
			}
		}
	}
	out, err := t.Apply(edits)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
