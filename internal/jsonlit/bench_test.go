package jsonlit_test

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/jsonlit"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkAppendDecoded decodes the text of every block of generated 4 MB documents of
// the OpenAI family (the texts ctx-count counts, one literal at a time into one scratch
// buffer, as measure.countSized does); "loop" is the decoder AppendDecoded replaced, a
// strings.IndexByte and an append for each run between escapes. cpu-MB/s is by CPU time:
//
//	go test -run '^$' -bench AppendDecoded -cpu 1 ./internal/jsonlit
func BenchmarkAppendDecoded(b *testing.B) {
	for _, format := range []string{"codex", "openai", "responses"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 4 << 20, Seed: 1, Images: true}); err != nil {
			b.Fatal(err)
		}
		t, err := transcript.Parse(buf.Bytes(), transcript.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var raws []string
		var size int64
		for i := range t.Messages {
			for j := range t.Messages[i].Blocks {
				bl := &t.Messages[i].Blocks[j]
				if raw := t.Slice(bl.Body); !bl.BodyJSON && len(raw) >= 2 && raw[0] == '"' {
					raws = append(raws, raw[1:len(raw)-1])
					size += int64(len(raw))
				}
			}
		}
		for _, d := range []struct {
			name   string
			decode func([]byte, string) []byte
		}{{"now", jsonlit.AppendDecoded}, {"loop", jsonlit.AppendDecodedSlow}} {
			b.Run(format+"/"+d.name, func(b *testing.B) {
				b.SetBytes(size)
				var scratch []byte
				cpu := benchload.CPUTime()
				for b.Loop() {
					for _, s := range raws {
						scratch = d.decode(scratch[:0], s)
					}
				}
				if d := benchload.CPUTime() - cpu; d > 0 {
					b.ReportMetric(float64(size)*float64(b.N)/1e6/d.Seconds(), "cpu-MB/s")
				}
			})
		}
	}
}
