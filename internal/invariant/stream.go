package invariant

import (
	"bytes"
	"fmt"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/tidwall/gjson"
)

// JSONLDocuments lists JSONL transcripts for the tests that hold a filter's streamed run
// (two passes over the file or stdin, cli's two passes) to its run on the document read whole:
// the samples, the corpus's JSONL files when the corpus is there, and generated Claude Code
// and Codex sessions written to dir, one of them larger than what a spool keeps in memory.
// The quick loop (without CTXKIT_LONG=1) reads 8 corpus files rather than all of them, and
// its largest generated session is 2 MB, larger than what a spool keeps of a pipe but not
// of a file: the 9 MB one, which a file's spool moves to disk too, is the long run's.
func JSONLDocuments(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	for _, f := range Samples(t) {
		if strings.HasSuffix(f, ".jsonl") {
			files = append(files, f)
		}
	}
	var corpus []string
	root := filepath.Join(repoRoot(t), "..", "shared", "corpus")
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".jsonl") {
			corpus = append(corpus, p)
		}
		return nil
	})
	files = append(files, Quick(corpus, 8)...)
	largest := 9 << 20
	if !IsLong() {
		largest = 2 << 20
	}
	for _, g := range []testgen.Options{
		{Format: "claude-code", Size: 300 << 10, Seed: 1, Images: true},
		{Format: "claude-code", Size: 600 << 10, Seed: 2},
		{Format: "codex", Size: 300 << 10, Seed: 1},
		{Format: "codex", Size: 600 << 10, Seed: 2, Images: true},
		{Format: "claude-code", Size: largest, Seed: 3},
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

// StreamCheck holds a filter's streamed runs of JSONL transcripts to its runs on the
// same documents read whole.
type StreamCheck struct {
	// Tool is the filter; Whole the same filter made to read every document whole.
	Tool, Whole func() *cli.Tool
	// Flags are the settings to compare at, one run each; --stats is added to every run.
	Flags [][]string
	// Reset, when set, is called before every run (to empty a store), and State says
	// what a run left behind besides its output, to be compared too.
	Reset func()
	State func() string
	// Listing names a flag that makes the output a listing rather than the document.
	Listing string
}

// Run compares, on every document of JSONLDocuments and at every setting, the streamed
// and the whole runs on the file and on stdin: exit status, stdout, stderr and State
// must be the same. It returns how many runs changed the document, for the caller to
// check that the comparison covered edits. In the quick loop a document over 1 MB (the
// generated session there for what a pipe's spool moves to disk) runs from stdin only: its
// file runs, most of the time, read a file as the smaller ones do.
func (c StreamCheck) Run(t *testing.T) (changed int) {
	t.Helper()
	for _, file := range JSONLDocuments(t, t.TempDir()) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sources := [][]byte{nil, data} // the file, then stdin
		if !IsLong() && len(data) > 1<<20 {
			sources = sources[1:]
		}
		for _, flags := range c.Flags {
			run := func(tool *cli.Tool, stdin []byte) (Run, string) {
				if c.Reset != nil {
					c.Reset()
				}
				args := append([]string{"--stats"}, flags...)
				var in io.Reader
				if stdin != nil {
					in = bytes.NewReader(stdin)
				} else {
					args = append(args, file)
				}
				r := RunTool(tool, args, in)
				if c.State != nil {
					return r, c.State()
				}
				return r, ""
			}
			for _, stdin := range sources {
				whole, wholeState := run(c.Whole(), stdin)
				if whole.Code != 0 && stdin == nil { // (empty stdin is an error; an empty .jsonl file is not)
					t.Fatalf("%s %v: whole run failed: %+v", file, flags, whole)
				}
				streamed, streamedState := run(c.Tool(), stdin)
				if streamed != whole || streamedState != wholeState {
					t.Fatalf("%s %v (stdin %t): streamed run differs from the whole run\nstreamed: %d %.300q\nwhole:    %d %.300q",
						file, flags, stdin != nil, streamed.Code, streamed.Stderr, whole.Code, whole.Stderr)
				}
				listing := c.Listing != "" && slices.Contains(flags, c.Listing)
				if stdin == nil && whole.Stdout != string(data) && !listing {
					changed++
				}
			}
		}
	}
	return changed
}

// ScriptJSONL returns the JSONL documents of the testscripts whose names match pattern
// (testdata/script/trim_*.txtar...): small transcripts, good fuzz seeds.
func ScriptJSONL(t testing.TB, pattern string) []string {
	t.Helper()
	scripts, _ := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "script", pattern))
	var docs []string
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".jsonl") {
				docs = append(docs, string(file.Data))
			}
		}
	}
	return docs
}

// SameOnFile writes doc to a .jsonl file and fails t unless the filter and its
// whole-document twin, run on it with args (the file last), give the same exit status,
// stdout and stderr. A fuzz target's body; documents of one line are skipped, as they are
// read whole anyway.
func SameOnFile(t *testing.T, tool, whole func() *cli.Tool, doc string, args ...string) {
	t.Helper()
	if !strings.Contains(doc, "\n") {
		return
	}
	file := filepath.Join(t.TempDir(), "doc.jsonl")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, file)
	w := RunTool(whole(), args, nil)
	if s := RunTool(tool(), args, nil); s != w {
		t.Fatalf("streamed run differs from the whole run\nstreamed: %+v\nwhole:    %+v", s, w)
	}
}

// StoreState lists a store's files with their contents, a packed text as the file of its
// own it would be (packs are named by what they hold in the order it was written, which
// concurrent writes choose), and its index lines without the time they were written.
func StoreState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	loose := map[string]bool{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			if info.Name() == index.Dir && filepath.Dir(p) == filepath.Clean(dir) {
				return filepath.SkipDir // ctx-recall's index: derived, its files named at random
			}
			if info.Name() == store.PacksDir && filepath.Dir(p) == filepath.Clean(dir) {
				return filepath.SkipDir // listed below, text by text
			}
			return nil
		}
		loose[info.Name()] = true
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if filepath.Base(p) == "index.jsonl" {
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				lines = append(lines, "index "+gjson.Get(l, `@this|{hash,tool,tool_call_id,bytes,lines,tokens,source}`).Raw)
			}
			return nil
		}
		lines = append(lines, rel+" "+string(data))
		return nil
	})
	if st, err := store.Open(dir); err == nil {
		hashes, err := st.Hashes("")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hashes {
			if loose[h] {
				continue
			}
			data, err := st.Get(h)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, h[:2]+"/"+h+" "+string(data))
		}
		st.Close()
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
