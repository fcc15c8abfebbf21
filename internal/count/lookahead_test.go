package count

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// TestLookAheadMatchesStdin: a Codex rollout larger than what is held while streaming,
// read from a file (looked at from its end for its last compaction, the records before
// it never held) reports what it does read from stdin (held, no look ahead).
func TestLookAheadMatchesStdin(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 20 MB")
	}
	var b bytes.Buffer
	if err := testgen.Generate(&b, testgen.Options{Format: "codex", Size: 20 << 20, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`"type":"compacted"`)) {
		t.Fatal("the generated rollout has no compaction")
	}
	doc := filepath.Join(t.TempDir(), "doc.jsonl")
	if err := os.WriteFile(doc, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "CTX_CACHE_DIR" {
			return "off"
		}
		return ""
	}
	var file, stdin, errb bytes.Buffer
	if code := Main([]string{"--tokenizer", "o200k", doc}, bytes.NewReader(nil), &file, &errb, env); code != 0 {
		t.Fatalf("from the file: exit %d: %s", code, errb.String())
	}
	if code := Main([]string{"--tokenizer", "o200k"}, bytes.NewReader(b.Bytes()), &stdin, &errb, env); code != 0 {
		t.Fatalf("from stdin: exit %d: %s", code, errb.String())
	}
	// The report names its file; stdin is "-".
	f, s := bytes.ReplaceAll(file.Bytes(), []byte(doc), []byte("-")), stdin.Bytes()
	if len(s) < 1000 || !bytes.Equal(f, s) {
		t.Errorf("the report from the file differs from the one from stdin:\n%.400s\n%.400s", f, s)
	}
}
