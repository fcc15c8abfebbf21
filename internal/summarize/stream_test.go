package summarize

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-summarize reading the document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-summarize streaming the file,
// or stdin, writes the same bytes and --stats as ctx-summarize reading it whole, below the
// trigger, forced with each kind of --keep, and with the pre-summary document offloaded.
func TestStreamedMatchesWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	summarized := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Flags: [][]string{
		{},
		{"--force"},
		{"--force", "--keep", "2 turns"},
		{"--window", "30000", "--keep", "3k"},
		{"--force", "--offload", "--store", store},
	}}.Run(t)
	t.Logf("%d runs summarized", summarized)
	if summarized < 10 {
		t.Fatalf("only %d runs summarized anything: the test compares too little", summarized)
	}
}

// FuzzStreamedMatchesWhole: whatever a JSONL transcript holds, ctx-summarize streaming it
// writes what ctx-summarize reading it whole writes, forced, with a kept tail of turns or
// of tokens. Seeds are the JSONL documents of the summarize and trim scripts.
func FuzzStreamedMatchesWhole(f *testing.F) {
	for _, pattern := range []string{"summarize_*.txtar", "trim_*.txtar"} {
		for _, doc := range invariant.ScriptJSONL(f, pattern) {
			f.Add(doc, uint8(1), false)
			f.Add(doc, uint8(200), true)
		}
	}
	f.Fuzz(func(t *testing.T, doc string, keep uint8, tokens bool) {
		k := strconv.Itoa(int(keep)) + " turns"
		if tokens {
			k = strconv.Itoa(int(keep))
		}
		invariant.SameOnFile(t, Tool, wholeTool, doc, "--stats", "--force", "--keep", k)
	})
}
