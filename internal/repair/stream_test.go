package repair

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// wholeTool is ctx-repair reading every document whole, as it reads JSON documents (and
// as it read every document before JSONL transcripts were streamed): the reference its
// streamed runs are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// variant is a document to run both ways: a file as it is, or a broken copy of it.
type variant struct {
	name string
	data []byte
}

// TestStreamedMatchesWhole: on every sample, corpus file and generated transcript, and on
// broken copies of each (a call cut, a result cut, a result pointed at no call, ids made
// empty or reused, a Codex output moved before its call, every third result renamed),
// ctx-repair as it runs gives what it gives reading every document whole: the same
// stdout, stderr, --stats and exit status with --check and when fixing, from the file and
// from stdin, and the same -o and --in-place files (an unchanged file left untouched).
// JSON documents are read whole both ways, by the same code; they are here, as they are
// and in two modes only, to show that nothing changed for them. The quick loop takes 16
// of the corpus's JSON documents (invariant.Quick) and only the first broken copy of the
// generated session over 1 MB (here for its size); CTXKIT_LONG=1 takes every one.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	files := invariant.JSONLDocuments(t, dir)
	var corpusJSON []string
	for _, f := range corpusOrNone(t) {
		if !strings.HasSuffix(f, ".jsonl") {
			corpusJSON = append(corpusJSON, f)
		}
	}
	big := 4 << 20 // bytes: a document this large is here for its size
	if !invariant.IsLong() {
		big = 1 << 20
	}
	for _, f := range append(invariant.Samples(t), invariant.Quick(corpusJSON, 16)...) {
		if !strings.HasSuffix(f, ".jsonl") { // JSONLDocuments has those
			files = append(files, f)
		}
	}
	var mu sync.Mutex
	var jsonl, docs, fixed, cleanJSONL int
	t.Run("files", func(t *testing.T) {
		for fi, file := range files {
			t.Run(fmt.Sprint(fi), func(t *testing.T) {
				t.Parallel()
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				isJSONL := strings.HasSuffix(file, ".jsonl")
				variants := []variant{{"as it is", data}}
				if isJSONL {
					variants = append(variants, brokenJSONL(t, data)...)
				}
				if len(data) > big && len(variants) > 2 {
					variants = variants[:2] // the large one is here for its size
				}
				var paths []string
				nfixed, nclean := 0, 0
				for vi, v := range variants {
					path := file
					if vi > 0 {
						path = filepath.Join(dir, fmt.Sprintf("%d-%d%s", fi, vi, filepath.Ext(file)))
						if err := os.WriteFile(path, v.data, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					paths = append(paths, path)
					// Reading stdin and writing files is the same code for every broken
					// copy (read again whole): the first will do.
					full := vi <= 1
					whole := compareRuns(t, fmt.Sprintf("%s (%s)", file, v.name), filepath.Join(dir, fmt.Sprint(fi)), path, v.data, isJSONL, full)
					if whole.Stdout != string(v.data) {
						nfixed++
					} else if isJSONL {
						nclean++
					}
				}
				// Several files in one --check run: the problems of each, and one verdict.
				args := append([]string{"--check", "--stats"}, paths...)
				if s, w := invariant.RunTool(Tool(), args, nil), invariant.RunTool(wholeTool(), args, nil); s != w {
					t.Fatalf("%s: --check of %d files differs\nstreamed: %d %.400q\nwhole:    %d %.400q", file, len(paths), s.Code, s.Stderr, w.Code, w.Stderr)
				}
				mu.Lock()
				defer mu.Unlock()
				docs += len(variants)
				fixed += nfixed
				cleanJSONL += nclean
				if isJSONL {
					jsonl++
				}
			})
		}
	})
	t.Logf("%d files (%d JSONL), %d documents with the broken copies: %d fixed, %d JSONL with nothing to fix", len(files), jsonl, docs, fixed, cleanJSONL)
	if !t.Failed() && (fixed < 20 || cleanJSONL < 5) {
		t.Fatalf("%d documents fixed, %d clean JSONL: the test compares too little", fixed, cleanJSONL)
	}
}

// TestStreamedMatchesWholeOnBadInput: documents that are not valid, files that cannot be
// read and --format and --sidechains give the same errors, output and exit status both
// ways.
func TestStreamedMatchesWholeOnBadInput(t *testing.T) {
	dir := t.TempDir()
	session, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	codex, err := os.ReadFile(filepath.Join("..", "..", "testdata", "codex.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(session, []byte("\n"))
	half := len(lines) / 2
	docs := map[string][]byte{
		"session.jsonl":   session,
		"codex.jsonl":     codex,
		"truncated.jsonl": session[:len(session)-10],
		"nul.jsonl":       append(append([]byte(nil), session...), 0, '\n'),
		"bad-line.jsonl":  bytes.Join([][]byte{bytes.Join(lines[:half], nil), []byte("{\"type\":\n"), bytes.Join(lines[half:], nil)}, nil),
		"empty.jsonl":     nil,
		"broken.jsonl":    brokenJSONL(t, session)[0].data,
	}
	var names []string
	for name, data := range docs {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, name)
		for _, flags := range [][]string{nil, {"--check"}, {"--format", "codex"}, {"--format", "claude-code"}, {"--check", "--format", "codex"}, {"--sidechains", "--stats"}} {
			for _, stdin := range []bool{false, true} {
				args := append([]string(nil), flags...)
				var in []byte
				if stdin {
					in = docs[name]
				} else {
					args = append(args, path)
				}
				run := func(tool *cli.Tool) invariant.Run {
					var r io.Reader
					if stdin {
						r = bytes.NewReader(in)
					}
					return invariant.RunTool(tool, args, r)
				}
				if s, w := run(Tool()), run(wholeTool()); s != w {
					t.Errorf("%s %q (stdin %v): streamed run differs\nstreamed: %d %.300q %.300q\nwhole:    %d %.300q %.300q", name, args, stdin, s.Code, s.Stderr, s.Stdout, w.Code, w.Stderr, w.Stdout)
				}
			}
		}
	}
	for _, args := range [][]string{
		{filepath.Join(dir, "missing.jsonl")},
		{dir},
		{"--check", filepath.Join(dir, "session.jsonl"), filepath.Join(dir, "missing.jsonl")},
		{"--check", filepath.Join(dir, "broken.jsonl"), filepath.Join(dir, "truncated.jsonl")},
		{filepath.Join(dir, "session.jsonl"), filepath.Join(dir, "codex.jsonl")},
		{"--in-place"},
		{"--check", "-", "-"},
	} {
		in := bytes.NewReader(session)
		s := invariant.RunTool(Tool(), args, in)
		in.Seek(0, io.SeekStart)
		if w := invariant.RunTool(wholeTool(), args, in); s != w {
			t.Errorf("%q: streamed run differs\nstreamed: %d %.300q\nwhole:    %d %.300q", args, s.Code, s.Stderr, w.Code, w.Stderr)
		}
	}
}

// compareRuns runs ctx-repair both ways on one document and fails the test on any
// difference: --check and fixing the file, and with full set and a JSONL document, from
// stdin and with -o and --in-place (writing files named after out) too. It returns the
// whole run that fixes the file to stdout.
func compareRuns(t *testing.T, what, out, path string, data []byte, isJSONL, full bool) invariant.Run {
	t.Helper()
	same := func(args []string, stdin []byte, files ...string) invariant.Run {
		t.Helper()
		run := func(tool *cli.Tool) (invariant.Run, string) {
			var in io.Reader
			if stdin != nil {
				in = bytes.NewReader(stdin)
			}
			r := invariant.RunTool(tool, args, in)
			return r, fileStates(t, files)
		}
		reset(t, data, files)
		whole, wholeFiles := run(wholeTool())
		reset(t, data, files)
		streamed, streamedFiles := run(Tool())
		if streamed != whole || streamedFiles != wholeFiles {
			t.Fatalf("%s %q: streamed run differs from the whole run\nstreamed: %d %.400q %.400q %.200q\nwhole:    %d %.400q %.400q %.200q",
				what, args, streamed.Code, streamed.Stderr, streamed.Stdout, streamedFiles, whole.Code, whole.Stderr, whole.Stdout, wholeFiles)
		}
		return whole
	}
	same([]string{"--check", "--stats", path}, nil)
	fixed := same([]string{"--stats", path}, nil)
	if !isJSONL || !full {
		return fixed
	}
	same([]string{"--check"}, data)
	same([]string{"--stats"}, data)
	ext := filepath.Ext(path)
	same([]string{"-o", out + "-out" + ext, path}, nil, out+"-out"+ext)
	same([]string{"--in-place", "--stats", out + "-edited" + ext}, nil, out+"-edited"+ext)
	return fixed
}

// old is the time reset gives the files a run may write, to tell whether it wrote them.
var old = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// reset puts the files a run may write back as they were before it: the -o file gone, the
// file edited in place a copy of the document with an old time.
func reset(t *testing.T, data []byte, files []string) {
	t.Helper()
	for _, f := range files {
		os.Remove(f)
		if strings.Contains(filepath.Base(f), "-edited") {
			if err := os.WriteFile(f, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fileStates describes the files a run may write: their bytes, and whether they were
// written at all.
func fileStates(t *testing.T, files []string) string {
	var b strings.Builder
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", filepath.Base(f), err)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: written %v, %d bytes %q\n", filepath.Base(f), !st.ModTime().Equal(old), len(data), data)
	}
	return b.String()
}

// brokenJSONL makes broken copies of a Claude Code or Codex transcript: the first call
// cut (its result an orphan), the first and the middle results cut (their calls left
// unanswered), the newest result pointed at no call, the first call's id emptied, the
// second call given the first's id, every third result renamed, and for Codex the first
// output moved before its call. A Claude Code block is cut from its record's content; a
// Codex item goes with its record line.
func brokenJSONL(t testing.TB, in []byte) []variant {
	tr, err := transcript.Parse(in, transcript.Options{})
	if err != nil || !tr.Format.JSONL() {
		return nil
	}
	var calls, results []transcript.Ref
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if tr.Format == transcript.Codex && !ownLine(tr, mi) {
				continue // an item of a compacted record's history
			}
			switch {
			case b.Kind == transcript.ToolCall && tr.Messages[mi].Role == "assistant" && b.ToolID != "":
				calls = append(calls, transcript.Ref{Message: mi, Block: bi})
			case b.Kind == transcript.ToolResult && b.ToolID != "":
				results = append(results, transcript.Ref{Message: mi, Block: bi})
			}
		}
	}
	var out []variant
	add := func(name string, edits ...transcript.Edit) {
		if b, err := tr.Apply(edits); err == nil {
			out = append(out, variant{name, b})
		}
	}
	cut := func(r transcript.Ref) transcript.Edit {
		if tr.Format == transcript.Codex {
			return lineEdit(tr, tr.Messages[r.Message].Lines[0])
		}
		return deleteElement(tr, tr.Block(r).Span)
	}
	idKey := "id"
	if tr.Format == transcript.Codex {
		idKey = "call_id"
	}
	setID := func(r transcript.Ref, key, literal string) (transcript.Edit, bool) {
		b := tr.Block(r)
		v := gjson.Get(tr.Slice(b.Span), key)
		if !v.Exists() || v.Index == 0 {
			return transcript.Edit{}, false
		}
		at := b.Span.Start + v.Index
		return transcript.Edit{Span: transcript.Span{Start: at, End: at + len(v.Raw)}, With: literal}, true
	}
	for i, b := range breakings(t, "doc.jsonl", in) {
		out = append(out, variant{fmt.Sprintf("orphan #%d", i), b})
	}
	if len(calls) > 0 {
		add("first call cut", cut(calls[0]))
		if e, ok := setID(calls[0], idKey, `""`); ok {
			add("first call id empty", e)
		}
	}
	if len(calls) > 1 {
		if e, ok := setID(calls[1], idKey, transcript.Quote(tr.Block(calls[0]).ToolID)); ok {
			add("second call reuses the first id", e)
		}
	}
	if len(results) > 0 {
		add("first result cut", cut(results[0]))
		if mid := results[len(results)/2]; mid.Message != results[0].Message {
			add("middle result cut", cut(mid))
		}
		out = append(out, variant{"every third result renamed", breakEveryThird(t, in)})
	}
	if tr.Format == transcript.Codex && len(results) > 0 {
		// The first output moved to the line before its call's.
		r := results[0]
		for _, c := range calls {
			if tr.Block(c).ToolID == tr.Block(r).ToolID && c.Message < r.Message {
				line := tr.Messages[r.Message].Lines[0]
				at := tr.Messages[c.Message].Lines[0].Start
				add("first output before its call", transcript.Edit{Span: transcript.Span{Start: at, End: at}, With: tr.Slice(line) + "\n"}, lineEdit(tr, line))
				break
			}
		}
	}
	return out
}

// ownLine reports whether a Codex message is the payload of its record line.
func ownLine(tr *transcript.Transcript, mi int) bool {
	m := &tr.Messages[mi]
	if len(m.Lines) == 0 {
		return false
	}
	p := gjson.Get(tr.Slice(m.Lines[0]), "payload")
	return p.Index > 0 && m.Lines[0].Start+p.Index == m.Span.Start
}

// lineEdit deletes a record line and its line break.
func lineEdit(tr *transcript.Transcript, line transcript.Span) transcript.Edit {
	end := line.End
	if i := strings.IndexByte(tr.Doc[end:], '\n'); i >= 0 {
		end += i + 1
	} else {
		end = len(tr.Doc)
	}
	return transcript.Edit{Span: transcript.Span{Start: line.Start, End: end}}
}

// TestStreamedMemory: checking a large Claude Code transcript, and copying it through
// when there is nothing to fix, holds a small part of it in memory, from a file and from
// stdin: what the parser keeps of each record (about 1.5 KB), and for a copy the 8 MB of
// held stdout a spool keeps in memory. Reading whole holds the document itself and its
// parse; the same measurement of that run shows it.
func TestStreamedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 64 MB document")
	}
	const size = 64 << 20
	const limit = 40 << 20
	path := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := testgen.Generate(f, testgen.Options{Format: "claude-code", Size: size, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		tool  *cli.Tool
		args  []string
		stdin bool
	}{
		{"--check FILE", Tool(), []string{"--check", path}, false},
		{"FILE", Tool(), []string{path}, false},
		{"--check < FILE", Tool(), []string{"--check"}, true},
		{"< FILE", Tool(), nil, true},
		{"FILE read whole", wholeTool(), []string{path}, false},
	} {
		var stdin io.Reader = strings.NewReader("")
		if c.stdin {
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			stdin = struct{ io.Reader }{in} // not a file: read as a pipe is
		}
		var stdout countingWriter
		peak := peakHeap(func() {
			if code := cli.Main(c.tool, c.args, stdin, &stdout, io.Discard, nil); code != 0 {
				t.Fatalf("%s: exit %d", c.name, code)
			}
		})
		t.Logf("%s: %d MB document, live heap grew by %.1f MB at most", c.name, st.Size()>>20, float64(peak)/(1<<20))
		if c.args == nil || c.args[0] == path {
			if stdout.n != st.Size() {
				t.Fatalf("%s: wrote %d bytes, want the %d of the input", c.name, stdout.n, st.Size())
			}
		}
		switch {
		case c.name == "FILE read whole":
			if peak < uint64(st.Size()) {
				t.Errorf("%s: the heap grew by %.1f MB, less than the document: the measurement misses what a run holds", c.name, float64(peak)/(1<<20))
			}
		case peak > limit:
			t.Errorf("%s: the heap grew by %.1f MB on a %d MB document; want under %d MB", c.name, float64(peak)/(1<<20), st.Size()>>20, limit>>20)
		}
	}
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// peakHeap runs fn and returns how far the live heap grew above where it was, sampled
// every few milliseconds after a collection.
func peakHeap(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	sample()
	return peak
}
