package persist

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-persist reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-persist streaming the file, or
// stdin, writes the same bytes, the same --stats and the same store as ctx-persist reading
// it whole, at the default threshold and at thresholds that offload many results.
func TestStreamedMatchesWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	var flags [][]string
	for _, f := range [][]string{
		{},
		{"--threshold", "2KB", "--preview", "300"},
		{"--threshold", "500", "--preview", "0", "--sidechains"},
	} {
		flags = append(flags, append([]string{"--store", store}, f...))
	}
	offloaded := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Flags: flags,
		Reset: func() { os.RemoveAll(store) },
		State: func() string { return invariant.StoreState(t, store) },
	}.Run(t)
	if offloaded < 10 {
		t.Fatalf("only %d runs offloaded anything: the test compares too little", offloaded)
	}
}
