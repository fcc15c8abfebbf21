package snip

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-snip reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-snip streaming the file, or
// stdin, writes the same bytes, the same --dry-run list, the same --stats and the same
// store as ctx-snip reading it whole: below the trigger, above it (clearing old results,
// inputs too), and idle, with and without a store.
func TestStreamedMatchesWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	var flags [][]string
	for _, f := range [][]string{
		{"--now", "2020-01-01T00:00:00Z"},
		{"--now", "2020-01-01T00:00:00Z", "--window", "20000", "--clear-inputs"},
		{"--now", "2020-01-01T00:00:00Z", "--window", "20000", "--dry-run"},
		{"--now", "2099-01-01T00:00:00Z", "--keep", "1"},
		{"--now", "2099-01-01T00:00:00Z", "--keep", "1", "--clear-inputs", "--no-store"},
	} {
		flags = append(flags, append([]string{"--store", store}, f...))
	}
	cleared := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Listing: "--dry-run", Flags: flags,
		Reset: func() { os.RemoveAll(store) },
		State: func() string { return invariant.StoreState(t, store) },
	}.Run(t)
	if cleared < 10 {
		t.Fatalf("only %d runs cleared anything: the test compares too little", cleared)
	}
}
