package trim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"golang.org/x/tools/txtar"
)

// FuzzTrimValid: trimming any readable document to half its size never panics, gives a
// document of the same format, and keeps a valid document valid.
func FuzzTrimValid(f *testing.F) {
	for _, s := range validSeeds(f, "trim_", "repair_") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tr, err := transcript.Parse([]byte(doc), transcript.Options{Name: "doc"})
		if err != nil || len(tr.Messages) == 0 {
			return
		}
		o := Options{Strategy: KeepLast, Counter: estimate()}
		o.Tokens, o.PerMessage = measure.PerMessage(tr, o.Counter)
		o.MaxTokens = max(o.Tokens/2, 1)
		out, _, _, err := Apply(tr, o)
		if err != nil {
			t.Fatalf("%s: %v", tr.Format, err)
		}
		after, err := transcript.Parse(out, transcript.Options{Format: tr.Format, Name: "doc.jsonl"})
		if err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		if len(repair.Check(tr)) == 0 {
			if ps := repair.Check(after); len(ps) > 0 {
				t.Fatalf("a valid %s document became invalid: %v", tr.Format, ps[0])
			}
		}
	})
}

// validSeeds are the documents of the testscripts whose names start with one of prefixes, and
// the samples.
func validSeeds(f *testing.F, prefixes ...string) []string {
	var out []string
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "*.txtar"))
	for _, s := range scripts {
		keep := false
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(filepath.Base(s), p)
		}
		if !keep {
			continue
		}
		a, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".json") || strings.HasSuffix(file.Name, ".jsonl") {
				out = append(out, string(file.Data))
			}
		}
	}
	for _, p := range []string{"anthropic.json", "openai.json", "responses.json", "codex.jsonl", "session.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", p)); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}
