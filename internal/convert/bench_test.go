package convert

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkConvert measures parse and convert of generated 10 MB documents to each
// other API format.
func BenchmarkConvert(b *testing.B) {
	for _, c := range []struct {
		format string
		to     transcript.Format
	}{{"anthropic", transcript.OpenAI}, {"anthropic", transcript.Responses}, {"claude-code", transcript.Anthropic}, {"codex", transcript.Anthropic}} {
		b.Run(c.format+"-to-"+string(c.to), func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: c.format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			doc := buf.Bytes()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				t, err := transcript.Parse(doc, transcript.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Convert(t, c.to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
