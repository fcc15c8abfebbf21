// Package invariant checks the promises every ctxkit tool keeps (DESIGN §4) on any
// document, so the tests of each tool, over the shared corpus and the samples, assert the
// same things the same way: the output is the same format and parses again, nothing
// outside the changed messages moves, no tool call loses its result, a second run changes
// nothing, a lossy tier never adds tokens and never touches the messages it must protect.
//
// It is a test helper: it reports through testing.TB and is imported only by tests.
package invariant

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Transform runs one tool, with fixed options, on a whole document.
type Transform func(in []byte) ([]byte, error)

// Options say which promises apply to the tool under test.
type Options struct {
	// Counter measures tokens for the Lossy check; nil means the estimate.
	Counter tokens.Counter
	// Lossy tiers never raise the token count and never alter the system prompt, the
	// newest user message or the newest assistant message.
	Lossy bool
	// Structural tools (ctx-repair, ctx-trim, ctx-summarize) may add, drop, move or merge
	// messages: the checks that compare messages one to one are skipped.
	Structural bool
}

// Check runs tr on in and checks DESIGN §4 invariants 1-6 on the result, which it
// returns (nil when the transform failed).
func Check(t testing.TB, name string, in []byte, tr Transform, o Options) []byte {
	t.Helper()
	out, err := tr(in)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	before, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		t.Errorf("%s: input does not parse: %v", name, err)
		return out
	}
	after, err := transcript.Parse(out, transcript.Options{Name: name})
	if err != nil {
		t.Errorf("%s: output does not parse: %v", name, err)
		return out
	}
	if after.Format != before.Format {
		t.Errorf("%s: output is %s, input was %s", name, after.Format, before.Format)
	}

	if !o.Structural {
		checkMessages(t, name, before, after, o)
		if b, a := orphans(before), orphans(after); a > b {
			t.Errorf("%s: %d unpaired tool calls or results, the input had %d", name, a, b)
		}
	}

	again, err := tr(out)
	switch {
	case err != nil:
		t.Errorf("%s: second run: %v", name, err)
	case !bytes.Equal(again, out):
		t.Errorf("%s: not idempotent: a second run changes byte %d", name, firstDiff(again, out))
	}

	if o.Lossy {
		c := o.Counter
		if c == nil {
			c, _ = tokens.New("estimate")
		}
		if b, a := count.Total(before, c), count.Total(after, c); a > b {
			t.Errorf("%s: tokens went up from %d to %d", name, b, a)
		}
	}
	return out
}

// Identity checks that tr gives in back byte for byte (a tier below its trigger).
func Identity(t testing.TB, name string, in []byte, tr Transform) {
	t.Helper()
	out, err := tr(in)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if !bytes.Equal(out, in) {
		t.Errorf("%s: below the trigger the output must be the input; it differs at byte %d", name, firstDiff(out, in))
	}
}

// checkMessages compares the two versions message by message: the envelope (everything
// outside the messages) is identical, the first change lies inside a message, and a lossy
// tier leaves its protected messages alone.
func checkMessages(t testing.TB, name string, before, after *transcript.Transcript, o Options) {
	t.Helper()
	if len(before.Messages) != len(after.Messages) {
		t.Errorf("%s: %d messages became %d", name, len(before.Messages), len(after.Messages))
		return
	}
	if sb, sa := skeleton(before), skeleton(after); sb != sa {
		t.Errorf("%s: bytes outside the messages changed (first difference at skeleton byte %d)", name, firstDiff([]byte(sb), []byte(sa)))
	}
	if p := firstDiff([]byte(before.Doc), []byte(after.Doc)); p >= 0 && !insideMessage(before, p) {
		t.Errorf("%s: the first change, at byte %d, is outside every message", name, p)
	}
	if !o.Lossy {
		return
	}
	for i := range before.Protected() {
		if messageBytes(before, i) != messageBytes(after, i) {
			t.Errorf("%s: protected message %d (%s) was altered", name, i, before.Messages[i].Role)
		}
	}
}

// spans returns the byte ranges the messages occupy, merged and in order.
func spans(tr *transcript.Transcript) []transcript.Span {
	var all []transcript.Span
	for _, m := range tr.Messages {
		all = append(all, m.Span)
		all = append(all, m.Lines...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	var merged []transcript.Span
	for _, s := range all {
		if n := len(merged); n > 0 && s.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, s.End)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// skeleton is the document with every message cut out: what no tier may change.
func skeleton(tr *transcript.Transcript) string {
	var b strings.Builder
	at := 0
	for _, s := range spans(tr) {
		b.WriteString(tr.Doc[at:s.Start])
		b.WriteString("\x00")
		at = s.End
	}
	b.WriteString(tr.Doc[at:])
	return b.String()
}

func insideMessage(tr *transcript.Transcript, p int) bool {
	for _, s := range spans(tr) {
		if s.Start <= p && p <= s.End {
			return true
		}
	}
	return false
}

func messageBytes(tr *transcript.Transcript, i int) string {
	m := &tr.Messages[i]
	if len(m.Lines) <= 1 {
		return tr.Slice(m.Span)
	}
	var b strings.Builder
	for _, l := range m.Lines {
		b.WriteString(tr.Slice(l))
		b.WriteByte('\n')
	}
	return b.String()
}

func orphans(tr *transcript.Transcript) int {
	n := 0
	for _, p := range tr.Pairs() {
		if p.Call == transcript.None || p.Result == transcript.None {
			n++
		}
	}
	return n
}

// firstDiff is the offset of the first byte where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

// CorpusFiles lists the conversation files of the shared corpus (../shared/corpus beside
// the repository), or skips the test when the corpus is not there.
func CorpusFiles(t testing.TB) []string {
	t.Helper()
	root := filepath.Join(repoRoot(t), "..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found at %s", root)
	}
	var files []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".traj") ||
			strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".meta.json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Samples lists the sample documents the project ships in testdata/.
func Samples(t testing.TB) []string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "testdata")
	var files []string
	for _, f := range []string{"session.jsonl", "anthropic.json", "openai.json", "responses.json", "codex.jsonl"} {
		files = append(files, filepath.Join(dir, f))
	}
	return files
}

// Folder names the corpus folder a file belongs to (claude-code, tau-bench, swe-agent),
// for tables per folder.
func Folder(path string) string {
	parts := strings.Split(filepath.ToSlash(path), "/")
	for i, p := range parts {
		if p == "corpus" && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return filepath.Base(filepath.Dir(path))
}

func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}
