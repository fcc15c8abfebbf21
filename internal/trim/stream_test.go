package trim

import (
	"bytes"
	"os"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-trim reading every document whole, as it reads JSON documents: the
// reference its streamed runs of JSONL transcripts are held to.
func wholeTool() *cli.Tool {
	tool := Tool()
	f := tool.Grammar.(*Flags)
	tool.Run = func(ctx *cli.Context) error {
		o, err := f.options()
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
		if f.DryRun {
			_, err := ctx.Stdout.Write(list.Bytes())
			return err
		}
		return nil
	}
	return tool
}

// TestStreamedMatchesWhole: on every JSONL transcript, ctx-trim streaming the file, or
// stdin, writes the same bytes, list and --stats as ctx-trim reading it whole (which
// counts the trimmed document again for its stats), at goals that drop nothing, some
// messages, and everything that may go, with both strategies.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	trimmed := 0
	for _, file := range invariant.JSONLDocuments(t, dir) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{
			{},
			{"--max-tokens", "20k"},
			{"--max-tokens", "3k", "--strategy", "first"},
			{"--max-tokens", "500"},
			{"--max-tokens", "3k", "-n"},
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
			if whole.Stdout != string(data) && (len(flags) == 0 || flags[len(flags)-1] != "-n") {
				trimmed++
			}
		}
	}
	t.Logf("%d runs dropped messages", trimmed)
	if trimmed < 10 {
		t.Fatalf("only %d runs dropped anything: the test compares too little", trimmed)
	}
}
