package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"golang.org/x/tools/txtar"
)

// FuzzConvert: every document that parses converts to every target without an error, and
// the result parses as the target and passes ctx-repair's check (Convert verifies that
// itself and fails otherwise).
func FuzzConvert(f *testing.F) {
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "*.txtar"))
	for _, s := range scripts {
		if !strings.Contains(s, "convert") && !strings.Contains(s, "repair") {
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
	f.Add(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"","name":"x","input":"not an object"}]},{"role":"system","content":"late"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		tr, err := transcript.Parse([]byte(doc), transcript.Options{Name: "doc"})
		if err != nil {
			return
		}
		for _, to := range Targets {
			if _, err := Convert(tr, to); err != nil {
				t.Fatalf("%s -> %s: %v", tr.Format, to, err)
			}
		}
	})
}
