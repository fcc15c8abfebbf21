package trim

import (
	"strconv"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-trim reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-trim streaming the file, or
// stdin, writes the same bytes, list and --stats as ctx-trim reading it whole (which
// counts the trimmed document again for its stats), at goals that drop nothing, some
// messages, and everything that may go, with both strategies.
func TestStreamedMatchesWhole(t *testing.T) {
	trimmed := invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Listing: "-n", Flags: [][]string{
		{},
		{"--max-tokens", "20k"},
		{"--max-tokens", "3k", "--strategy", "first"},
		{"--max-tokens", "500"},
		{"--max-tokens", "3k", "-n"},
	}}.Run(t)
	t.Logf("%d runs dropped messages", trimmed)
	if trimmed < 10 {
		t.Fatalf("only %d runs dropped anything: the test compares too little", trimmed)
	}
}

// FuzzStreamedMatchesWhole: whatever a JSONL transcript holds (broken chains, uuids that
// are not strings, lines that are not messages), ctx-trim streaming it writes what
// ctx-trim reading it whole writes. Seeds are the JSONL documents of the trim scripts
// (small, so the fuzzer mutates them quickly).
func FuzzStreamedMatchesWhole(f *testing.F) {
	for _, doc := range invariant.ScriptJSONL(f, "trim_*.txtar") {
		f.Add(doc, uint16(300), false)
		f.Add(doc, uint16(50), true)
	}
	f.Fuzz(func(t *testing.T, doc string, maxTokens uint16, first bool) {
		args := []string{"--stats", "--max-tokens", strconv.Itoa(int(maxTokens) + 1)}
		if first {
			args = append(args, "--strategy", "first")
		}
		invariant.SameOnFile(t, Tool, wholeTool, doc, args...)
	})
}
