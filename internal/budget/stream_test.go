package budget

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-budget reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-budget streaming the file, or
// stdin, writes the same bytes and the same --stats as ctx-budget reading it whole, at
// settings that cut nothing, cut with the hard cap, and cut at high utilization.
func TestStreamedMatchesWhole(t *testing.T) {
	cut := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Flags: [][]string{
		{},
		{"--cap", "2000", "--keep-recent", "0"},
		{"--window", "20000", "--mid-cap", "1000tok", "--high-cap", "800"},
	}}.Run(t)
	if cut < 10 {
		t.Fatalf("only %d runs cut anything: the test compares too little", cut)
	}
}
