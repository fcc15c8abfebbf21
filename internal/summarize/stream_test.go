package summarize

import (
	"bytes"
	"os"
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
		return runOne(c, f, doc, nil, nil)
	}
	return tool
}

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-summarize streaming the file,
// or stdin, writes the same bytes and --stats as ctx-summarize reading it whole, below the
// trigger, forced with each kind of --keep, and with the pre-summary document offloaded.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	summarized := 0
	for _, file := range invariant.JSONLDocuments(t, dir) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{
			{},
			{"--force"},
			{"--force", "--keep", "2 turns"},
			{"--window", "30000", "--keep", "3k"},
			{"--force", "--offload", "--store", store},
		} {
			args := append(append([]string{"--stats"}, flags...), file)
			whole := invariant.RunTool(wholeTool(), args, nil)
			if whole.Code != 0 {
				t.Fatalf("%s %v: whole run failed: %+v", file, flags, whole)
			}
			if streamed := invariant.RunTool(Tool(), args, nil); streamed != whole {
				t.Fatalf("%s %v: streamed run differs from the whole run\nstreamed: %d %.300q\nwhole:    %d %.300q",
					file, flags, streamed.Code, streamed.Stderr, whole.Code, whole.Stderr)
			}
			stdinArgs := append([]string{"--stats"}, flags...)
			piped := invariant.RunTool(Tool(), stdinArgs, bytes.NewReader(data))
			if want := invariant.RunTool(wholeTool(), stdinArgs, bytes.NewReader(data)); piped != want {
				t.Fatalf("%s %v: streamed stdin differs from the whole run\nstreamed: %d %.300q\nwhole:    %d %.300q",
					file, flags, piped.Code, piped.Stderr, want.Code, want.Stderr)
			}
			if whole.Stdout != string(data) {
				summarized++
			}
		}
	}
	t.Logf("%d runs summarized", summarized)
	if summarized < 10 {
		t.Fatalf("only %d runs summarized anything: the test compares too little", summarized)
	}
}
