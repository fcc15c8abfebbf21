package repair

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"golang.org/x/tools/txtar"
)

// FuzzRepair: no input makes repair panic; whatever parses is repaired into a document
// of the same format that passes Check, and repairing that changes nothing. Seeds are the
// broken and repaired documents of the testscripts, the samples, and small corpus files.
func FuzzRepair(f *testing.F) {
	for _, s := range seedDocs(f) {
		f.Add(s, "")
	}
	f.Add(`[{"role":"user","content":"hi"},{"role":"user","content":""}]`, "anthropic")
	f.Fuzz(func(t *testing.T, doc, format string) {
		ff, err := transcript.ParseFormat(format)
		if err != nil {
			return
		}
		const name = "doc"
		tr, err := transcript.Parse([]byte(doc), transcript.Options{Format: ff, Name: name})
		if err != nil {
			return
		}
		out, _, err := repairDoc(name, []byte(doc), transcript.Options{Format: ff})
		if err != nil {
			t.Fatalf("repair of a readable %s document failed: %v", tr.Format, err)
		}
		again, problems, err := repairDoc(name, out, transcript.Options{Format: tr.Format})
		if err != nil || len(problems) > 0 || !bytes.Equal(again, out) {
			t.Fatalf("second repair: err %v, problems %v, changed %v", err, problems, !bytes.Equal(again, out))
		}
	})
}

func seedDocs(f *testing.F) []string {
	var seeds []string
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "repair_*.txtar"))
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".json") || strings.HasSuffix(file.Name, ".jsonl") {
				seeds = append(seeds, string(file.Data))
			}
		}
	}
	for _, p := range []string{"anthropic.json", "openai.json", "responses.json", "codex.jsonl", "session.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", p)); err == nil && len(b) < 64<<10 {
			seeds = append(seeds, string(b))
		}
	}
	corpus := filepath.Join("..", "..", "..", "shared", "corpus")
	_ = filepath.Walk(corpus, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Size() < 8<<10 && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".traj")) && !strings.HasSuffix(p, ".meta.json") {
			if b, err := os.ReadFile(p); err == nil {
				seeds = append(seeds, string(b))
			}
		}
		return nil
	})
	return seeds
}
