package budget

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkTransform measures the whole tier on a generated 10 MB document: parse,
// utilization, plan and splice, as ctx-budget runs it (the estimate counter).
// b.SetBytes makes the result read in MB/s.
func BenchmarkTransform(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code", "codex", "openai", "responses"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			doc := buf.Bytes()
			tr := transform(format, Defaults(), 0)
			b.SetBytes(int64(len(doc)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlan measures the tier alone on a parsed 10 MB document.
func BenchmarkPlan(b *testing.B) {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: 10 << 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	t, err := transcript.Parse(buf.Bytes(), transcript.Options{})
	if err != nil {
		b.Fatal(err)
	}
	o := Defaults()
	o.Counter = estimate()
	o.Utilization = 0.8
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		if edits, _ := Plan(t, o); len(edits) == 0 {
			b.Fatal("nothing cut")
		}
	}
}
