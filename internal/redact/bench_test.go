package redact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// BenchmarkRedact: the planted set's texts joined (about 0.3 MB, a secret in most texts)
// once and four times over, and generated Claude Code sessions (no secret) of 150 KB and
// 8 MB: the cost of redacting a document whole, and the linear-time claim (the MB/s of a
// text and of four or fifty times as much are of one order). cpu-ns/op is the process's CPU
// time an op, which a loaded machine changes less than the wall time.
func BenchmarkRedact(b *testing.B) {
	var sb strings.Builder
	for _, c := range readPlanted(b) {
		sb.WriteString(c.Text)
	}
	session, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var gen bytes.Buffer
	if err := testgen.Generate(&gen, testgen.Options{Format: "claude-code", Size: 8 << 20, Seed: 1, Images: true}); err != nil {
		b.Fatal(err)
	}
	r := New()
	for _, in := range []struct{ name, text string }{
		{"planted", sb.String()},
		{"planted-x4", strings.Repeat(sb.String(), 4)},
		{"session", string(session)},
		{"session-8MB", gen.String()},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			cpu, n := benchload.CPUTime(), 0
			for b.Loop() {
				r.String(in.text)
				n++
			}
			b.ReportMetric(float64(benchload.CPUTime()-cpu)/float64(n), "cpu-ns/op")
		})
	}
}
