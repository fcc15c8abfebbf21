package snip

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkTransform measures the whole tier on a generated 10 MB document: parse,
// count, plan and splice, as ctx-snip runs it with the estimate counter. A 10 MB session
// is far above 60% of the default window, so the tier clears results down to the target.
// b.SetBytes makes the result read in MB/s.
func BenchmarkTransform(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code", "codex"} {
		b.Run(format, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			doc := buf.Bytes()
			b.SetBytes(int64(len(doc)))
			b.ResetTimer()
			for b.Loop() {
				if _, st, _, err := snipDoc(format, doc, Defaults(), 0); err != nil || len(st.Items) == 0 {
					b.Fatalf("err %v, %d cleared", err, len(st.Items))
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
	o.Tokens, o.Effective = 3_000_000, 1_000_000
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		if edits, _, _ := Plan(t, o); len(edits) == 0 {
			b.Fatal("nothing cleared")
		}
	}
}

// BenchmarkPlanRedact measures what redacting the kept texts costs the plan: with a store,
// every result's file is named (and so redacted) while the plan is made.
func BenchmarkPlanRedact(b *testing.B) {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: 10 << 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	t, err := transcript.Parse(buf.Bytes(), transcript.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, rd := range []struct {
		name string
		r    *redact.Redactor
	}{{"plain", nil}, {"redacted", redact.New()}} {
		b.Run(rd.name, func(b *testing.B) {
			o := Defaults()
			o.Counter = estimate()
			o.Tokens, o.Effective = 3_000_000, 1_000_000
			o.Store, o.Redact = "/st", rd.r
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if edits, _, _ := Plan(t, o); len(edits) == 0 {
					b.Fatal("nothing cleared")
				}
			}
		})
	}
}
