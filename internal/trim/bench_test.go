package trim

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkTrim measures the whole tier on generated 10 MB documents trimmed to half a
// 200k window: parse, measure, plan, splice, and the re-read that checks API validity.
func BenchmarkTrim(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code", "codex"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			doc := buf.Bytes()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, st, err := trimDoc(format, doc, capped(100_000), 0); err != nil || len(st.Dropped) == 0 {
					b.Fatalf("err %v, %d dropped", err, len(st.Dropped))
				}
			}
		})
	}
}

// BenchmarkPlan measures the planner alone on a parsed, measured 10 MB session: pairing,
// runs, the drop edits and, for Claude Code, re-chaining the kept branch.
func BenchmarkPlan(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			t, err := transcript.Parse(buf.Bytes(), transcript.Options{Name: format})
			if err != nil {
				b.Fatal(err)
			}
			o := capped(100_000)
			o.Counter = estimate()
			o.Tokens, o.PerMessage = measure.PerMessage(t, o.Counter)
			b.SetBytes(int64(buf.Len()))
			b.ResetTimer()
			for b.Loop() {
				if edits, st := Plan(t, o); len(edits) == 0 || !st.Fits {
					b.Fatalf("%d edits, fits %v", len(edits), st.Fits)
				}
			}
		})
	}
}
