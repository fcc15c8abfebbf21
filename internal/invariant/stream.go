package invariant

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// JSONLDocuments lists JSONL transcripts for the tests that hold a filter's streamed run
// (two passes over the file or stdin, cli.Document) to its run on the document read whole:
// the samples, the corpus's JSONL files when the corpus is there, and generated Claude Code
// and Codex sessions written to dir, one of them larger than what a spool keeps in memory.
func JSONLDocuments(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	for _, f := range Samples(t) {
		if strings.HasSuffix(f, ".jsonl") {
			files = append(files, f)
		}
	}
	root := filepath.Join(repoRoot(t), "..", "shared", "corpus")
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	for _, g := range []testgen.Options{
		{Format: "claude-code", Size: 300 << 10, Seed: 1, Images: true},
		{Format: "claude-code", Size: 600 << 10, Seed: 2},
		{Format: "codex", Size: 300 << 10, Seed: 1},
		{Format: "codex", Size: 600 << 10, Seed: 2, Images: true},
		{Format: "claude-code", Size: 9 << 20, Seed: 3},
	} {
		var b bytes.Buffer
		if err := testgen.Generate(&b, g); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", g.Format, g.Seed))
		if err := os.WriteFile(name, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	return files
}

// Run is what one run of a tool gave.
type Run struct {
	Code           int
	Stdout, Stderr string
}

// RunTool runs a tool in-process with args, reading stdin when it is not nil.
func RunTool(tool *cli.Tool, args []string, stdin io.Reader) Run {
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := cli.Main(tool, args, stdin, &out, &errb, nil)
	return Run{code, out.String(), errb.String()}
}
