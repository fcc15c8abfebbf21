package snip

import (
	"bytes"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-snip reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool {
	tool := Tool()
	f := tool.Grammar.(*Flags)
	tool.Run = func(ctx *cli.Context) error {
		o, err := f.options(ctx.Now())
		if err != nil {
			return err
		}
		ins, err := ctx.Documents(f.DryRun)
		if err != nil {
			return err
		}
		var list bytes.Buffer
		for _, in := range ins {
			t, err := ctx.Parse(in)
			if err != nil {
				return err
			}
			if err := runWhole(ctx, f, in, t, o, &list); err != nil {
				return err
			}
		}
		_, err = ctx.Stdout.Write(list.Bytes())
		return err
	}
	return tool
}

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-snip streaming the file, or
// stdin, writes the same bytes, the same --dry-run list and the same --stats as ctx-snip
// reading it whole: below the trigger, above it (clearing old results, inputs too), and
// idle.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	cleared := 0
	for _, file := range invariant.JSONLDocuments(t, dir) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{
			{"--now", "2020-01-01T00:00:00Z"},
			{"--now", "2020-01-01T00:00:00Z", "--window", "20000", "--clear-inputs"},
			{"--now", "2020-01-01T00:00:00Z", "--window", "20000", "--dry-run"},
			{"--now", "2099-01-01T00:00:00Z", "--keep", "1"},
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
			if whole.Stdout != string(data) && flags[len(flags)-1] != "--dry-run" {
				cleared++
			}
		}
	}
	if cleared < 10 {
		t.Fatalf("only %d runs cleared anything: the test compares too little", cleared)
	}
}
