package redact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRedact: the planted set's texts joined (about 0.4 MB, secrets in most lines),
// and a generated session document (JSON lines, few secrets): the cost of redacting a
// document whole, and the linear-time claim (compare the MB/s of the two sizes).
func BenchmarkRedact(b *testing.B) {
	var sb strings.Builder
	for _, c := range readPlanted(b) {
		sb.WriteString(c.Text)
	}
	session, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	r := New()
	for _, in := range []struct{ name, text string }{
		{"planted", sb.String()},
		{"planted-x4", strings.Repeat(sb.String(), 4)},
		{"session", string(session)},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			for b.Loop() {
				r.String(in.text)
			}
		})
	}
}
