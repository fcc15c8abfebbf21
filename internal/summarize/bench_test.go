package summarize

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkSummarize measures the tier with the local backend on generated 10 MB
// documents, far above the trigger of a 200k window: parse, measure, choose, extract,
// place, and the recount of the result.
func BenchmarkSummarize(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code", "codex"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			doc := buf.Bytes()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, sp, _, err := summarizeDoc(format, doc, 200_000, false); err != nil || !sp.Acts {
					b.Fatalf("err %v, acts %v", err, sp.Acts)
				}
			}
		})
	}
}

// BenchmarkLocal measures the extraction alone, over every message of generated 10 MB
// documents, parsed once.
func BenchmarkLocal(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code", "codex"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			t, err := transcript.Parse(buf.Bytes(), transcript.Options{Name: format})
			if err != nil {
				b.Fatal(err)
			}
			msgs := make([]int, len(t.Messages))
			for i := range msgs {
				msgs[i] = i
			}
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if s := Local(t, msgs); len(s["Commands and tests"]) == 0 {
					b.Fatal("no commands")
				}
			}
		})
	}
}
