package snip

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// BenchmarkMainStore measures ctx-snip as a command on a generated 10 MB document with a
// store on disk (STORE_BENCH_DIR, else the test's temporary directory): "new", every
// cleared text written into an empty store; "again", the same run into the store the
// first one filled (a pipeline's next turn, or texts ctx-persist stored before). It
// reports the files and bytes the store holds after one run (b.SetBytes: MB/s of the
// document).
func BenchmarkMainStore(b *testing.B) {
	for _, format := range []string{"anthropic", "claude-code"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 10 << 20, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		if d := os.Getenv("STORE_BENCH_DIR"); d != "" {
			var err error
			if dir, err = os.MkdirTemp(d, "snipbench-"); err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
		}
		in := filepath.Join(dir, "doc.json")
		if err := os.WriteFile(in, buf.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
		run := func(b *testing.B, st string) {
			var out, errb bytes.Buffer
			args := []string{"--tokenizer", "estimate", "--repay", "0", "--format", format, "--store", st, in}
			if code := Main(args, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 {
				b.Fatalf("exit %d: %s", code, errb.String())
			}
		}
		for _, again := range []bool{false, true} {
			name := format + "/new"
			if again {
				name = format + "/again"
			}
			b.Run(name, func(b *testing.B) {
				st := filepath.Join(dir, "store")
				os.RemoveAll(st)
				if again {
					run(b, st)
				}
				b.SetBytes(int64(buf.Len()))
				b.ResetTimer()
				for b.Loop() {
					if !again {
						b.StopTimer()
						os.RemoveAll(st)
						b.StartTimer()
					}
					run(b, st)
				}
				b.StopTimer()
				files, size := 0, int64(0)
				filepath.WalkDir(st, func(p string, e fs.DirEntry, err error) error {
					if err == nil && e.Type().IsRegular() {
						files++
						if fi, err := e.Info(); err == nil {
							size += fi.Size()
						}
					}
					return nil
				})
				b.ReportMetric(float64(files), "files")
				b.ReportMetric(float64(size)/float64(buf.Len()), "stored/doc")
			})
		}
	}
}
