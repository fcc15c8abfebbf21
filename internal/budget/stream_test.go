package budget

import (
	"bytes"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-budget reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool {
	tool := Tool()
	f := tool.Grammar.(*Flags)
	tool.Run = func(ctx *cli.Context) error {
		o, err := f.options()
		if err != nil {
			return err
		}
		ins, err := ctx.Documents(false)
		if err != nil {
			return err
		}
		for _, in := range ins {
			t, err := ctx.Parse(in)
			if err != nil {
				return err
			}
			if err := runWhole(ctx, in, t, o); err != nil {
				return err
			}
		}
		return nil
	}
	return tool
}

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-budget streaming the file, or
// stdin, writes the same bytes and the same --stats as ctx-budget reading it whole, at
// settings that cut nothing, cut with the hard cap, and cut at high utilization.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	cut := 0
	for _, file := range invariant.JSONLDocuments(t, dir) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{
			{},
			{"--cap", "2000", "--keep-recent", "0"},
			{"--window", "20000", "--mid-cap", "1000tok", "--high-cap", "800"},
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
				cut++
			}
		}
	}
	if cut < 10 {
		t.Fatalf("only %d runs cut anything: the test compares too little", cut)
	}
}
