package transcript

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// BenchmarkParse reads generated 10 MB documents of each format; "gjson" is the reader it
// replaced (gjson_reference_test.go), for comparison. b.SetBytes makes it read in MB/s.
func BenchmarkParse(b *testing.B) {
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1, Images: true}); err != nil {
			b.Fatal(err)
		}
		doc := buf.Bytes()
		for _, r := range []struct {
			name  string
			parse func([]byte, Options) (*Transcript, error)
		}{{"scan", Parse}, {"gjson", gjParse}} {
			b.Run(format+"/"+r.name, func(b *testing.B) {
				b.SetBytes(int64(len(doc)))
				for b.Loop() {
					if _, err := r.parse(doc, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
