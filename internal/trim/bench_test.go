package trim

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
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
