package summarize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"golang.org/x/tools/txtar"
)

// FuzzSummarize: a forced local summary of any readable document never panics, gives a
// document of the same format, keeps a valid document valid, and its size is what Write
// says (summarizeDoc checks that).
func FuzzSummarize(f *testing.F) {
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "*.txtar"))
	for _, s := range scripts {
		if base := filepath.Base(s); !strings.HasPrefix(base, "summarize_") && !strings.HasPrefix(base, "repair_") {
			continue
		}
		a, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".json") || strings.HasSuffix(file.Name, ".jsonl") {
				f.Add(string(file.Data))
			}
		}
	}
	for _, p := range []string{"anthropic.json", "openai.json", "responses.json", "codex.jsonl", "session.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", p)); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tr, err := transcript.Parse([]byte(doc), transcript.Options{Name: "doc"})
		if err != nil || len(tr.Messages) == 0 {
			return
		}
		out, _, _, err := summarizeDoc("doc", []byte(doc), 0, true)
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
