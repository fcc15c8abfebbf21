package summarize

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-summarize reading the document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool {
	tool := Tool()
	f := tool.Grammar.(*Flags)
	tool.Run = func(c *cli.Context) error {
		names, err := c.DocumentNames(false)
		if err != nil {
			return err
		}
		doc, err := c.ReadWhole(names[0])
		if err != nil {
			return err
		}
		return runOne(c, f, doc, nil)
	}
	return tool
}

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
