package trim

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestLargeRolloutStreamedMatchesWhole: a Codex rollout larger than what is held while
// streaming (transcript.MaxHeld) is read from its file with a look ahead for its last
// compaction, and from stdin with the records held past the bound read again from the
// spool; both write what reading it whole writes. The quick loop's rollout is 4 MB over
// the bound, CTXKIT_LONG=1's 40 MB (most of this package's test time).
func TestLargeRolloutStreamedMatchesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 40 MB")
	}
	size := 40 << 20
	if !invariant.IsLong() {
		size = transcript.MaxHeld + 4<<20
	}
	var b bytes.Buffer
	if err := testgen.Generate(&b, testgen.Options{Format: "codex", Size: size, Seed: 6}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "doc.jsonl")
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--stats"}, {"--stats", "--max-tokens", "40k"}} {
		whole := invariant.RunTool(wholeTool(), append(args, file), nil)
		if whole.Code != 0 || len(whole.Stdout) < 1<<20 {
			t.Fatalf("%v: the whole run: exit %d, %d bytes: %s", args, whole.Code, len(whole.Stdout), whole.Stderr)
		}
		if s := invariant.RunTool(Tool(), append(args, file), nil); s != whole {
			t.Errorf("%v: streamed from the file, the run differs from the whole run: %.300s", args, s.Stderr)
		}
		whole = invariant.RunTool(wholeTool(), args, bytes.NewReader(b.Bytes())) // (the stats name stdin)
		if s := invariant.RunTool(Tool(), args, bytes.NewReader(b.Bytes())); s != whole {
			t.Errorf("%v: streamed from stdin, the run differs from the whole run: %.300s", args, s.Stderr)
		}
	}
}
