package count

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// TestLookAheadMatchesStdin: a Codex rollout read from a file (looked at from its end for
// its last compaction: the records before it are never held, and each other one is counted
// as it is read) reports what it does read from stdin (held, no look ahead), whether it
// is larger than what is held while streaming or not, and whether it compacts or not.
func TestLookAheadMatchesStdin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		compacts bool
	}{
		{"20 MB", 20 << 20, true},
		{"6 MB", 6 << 20, true},
		{"6 MB without compaction", 6 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.size > 8<<20 {
				t.Skip("generates 20 MB")
			}
			if tc.size > 8<<20 { // larger than what streaming holds: the long run's case
				invariant.Long(t)
			}
			var b bytes.Buffer
			if err := testgen.Generate(&b, testgen.Options{Format: "codex", Size: tc.size, Seed: 5}); err != nil {
				t.Fatal(err)
			}
			data := b.Bytes()
			if !bytes.Contains(data, []byte(`"type":"compacted"`)) {
				t.Fatal("the generated rollout has no compaction")
			}
			if !tc.compacts {
				var kept [][]byte
				for _, line := range bytes.SplitAfter(data, []byte("\n")) {
					if !bytes.Contains(line, []byte(`"type":"compacted"`)) {
						kept = append(kept, line)
					}
				}
				data = bytes.Join(kept, nil)
			}
			doc := filepath.Join(t.TempDir(), "doc.jsonl")
			if err := os.WriteFile(doc, data, 0o600); err != nil {
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
			if code := Main([]string{"--tokenizer", "o200k"}, bytes.NewReader(data), &stdin, &errb, env); code != 0 {
				t.Fatalf("from stdin: exit %d: %s", code, errb.String())
			}
			// The report names its file; stdin is "-".
			f, s := bytes.ReplaceAll(file.Bytes(), []byte(doc), []byte("-")), stdin.Bytes()
			if len(s) < 1000 || !bytes.Equal(f, s) {
				t.Errorf("the report from the file differs from the one from stdin:\n%.400s\n%.400s", f, s)
			}
		})
	}
}
