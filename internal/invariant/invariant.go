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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ctxkit/ctxkit/internal/measure"
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
	// pinned context, the newest user message or the newest assistant message.
	Lossy bool
	// ProtectedResults lets a lossy tier change the tool results of a protected message,
	// and nothing else of it: ctx-budget's hard cap holds the newest result too, and its
	// normalizing (which loses nothing) applies to every result.
	ProtectedResults bool
	// Structural tools (ctx-repair, ctx-trim, ctx-summarize) may add, drop, move or merge
	// messages: the checks that compare messages one to one are skipped.
	Structural bool
	// Drops is for a tier that removes whole messages and changes none (ctx-trim): every
	// block of the output is a block of the input, in the input's order, under the same
	// role, with the same content (neighbours of one role may have been merged into one
	// message, as the Anthropic API merges them); each input message is kept whole or not
	// at all; the protected messages (DESIGN §4.6) are kept; a tool call and its result
	// are kept or dropped together. Added lists the texts the tier may insert as new text
	// blocks, or the starts of them (an opening user message the format needs, ctx-trim's
	// note).
	Drops bool
	Added []string
	// Sidechains reads the documents as the tool under test reads them with --sidechains:
	// a Claude Code log's subagent's conversation, where it holds one beside the session's.
	Sidechains bool
}

// Check runs tr on in and checks DESIGN §4 invariants 1-6 on the result, which it
// returns (nil when the transform failed). A lossy tier must keep the pinned context
// (Pinned) byte for byte, whatever it moves or drops.
func Check(t testing.TB, name string, in []byte, tr Transform, o Options) []byte {
	t.Helper()
	out, err := tr(in)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	before, err := transcript.Parse(in, transcript.Options{Name: name, Sidechains: o.Sidechains})
	if err != nil {
		t.Errorf("%s: input does not parse: %v", name, err)
		return out
	}
	after, err := transcript.Parse(out, transcript.Options{Name: name, Sidechains: o.Sidechains})
	if err != nil {
		t.Errorf("%s: output does not parse: %v", name, err)
		return out
	}
	if after.Format != before.Format {
		t.Errorf("%s: output is %s, input was %s", name, after.Format, before.Format)
	}

	if o.Drops {
		checkDrops(t, name, before, after, o.Added)
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
		if b, a := measure.Total(before, c), measure.Total(after, c); a > b {
			t.Errorf("%s: tokens went up from %d to %d", name, b, a)
		}
		checkPinned(t, name, before, after)
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
		if before.MessageBytes(i) == after.MessageBytes(i) {
			continue
		}
		if !o.ProtectedResults || exceptResults(before, i) != exceptResults(after, i) {
			t.Errorf("%s: protected message %d (%s) was altered", name, i, before.Messages[i].Role)
		}
	}
}

// exceptResults is message i's blocks, each tool result by its id alone.
func exceptResults(t *transcript.Transcript, i int) string {
	var b strings.Builder
	m := &t.Messages[i]
	fmt.Fprintf(&b, "%s %d|", m.Role, len(m.Blocks))
	for bi := range m.Blocks {
		if blk := &m.Blocks[bi]; blk.Kind == transcript.ToolResult {
			fmt.Fprintf(&b, "result %q|", blk.ToolID)
		} else {
			b.WriteString(t.Slice(blk.Span))
			b.WriteByte('|')
		}
	}
	return b.String()
}

// blockKey is what a block says to the model, with its role: two blocks with the same
// key are the same content, however the JSON around it is spelled (a string content
// becomes a text block when two messages are merged).
type blockKey struct {
	role, typ, id, text string
	kind                transcript.Kind
}

func keyOf(tr *transcript.Transcript, role string, b *transcript.Block) blockKey {
	k := blockKey{role: role, typ: b.Type, id: b.ToolID, kind: b.Kind, text: tr.BodyText(b)}
	if b.Image != nil {
		k.text += "\x00image " + b.Image.URL
		if !b.Image.Data.IsZero() {
			k.text += tr.Slice(b.Image.Data)
		}
	}
	if b.Encrypted > 0 || b.Kind == transcript.Other {
		k.text += "\x00" + tr.Slice(b.Span)
	}
	for i := range b.Parts {
		p := keyOf(tr, role, &b.Parts[i])
		k.text += "\x00part " + p.typ + " " + p.text
	}
	return k
}

// checkDrops checks the promises of a tier that only drops messages (Options.Drops).
// Output blocks are matched to input blocks from the end backwards: such a tier drops the
// older of two identical messages, so the newest copy is the one kept.
func checkDrops(t testing.TB, name string, before, after *transcript.Transcript, added []string) {
	t.Helper()
	type ref struct {
		message int
		key     blockKey
	}
	var in []ref
	for mi := range before.Messages {
		m := &before.Messages[mi]
		for bi := range m.Blocks {
			in = append(in, ref{mi, keyOf(before, m.Role, &m.Blocks[bi])})
		}
	}
	allowed := func(text string) bool {
		for _, a := range added {
			if strings.HasPrefix(text, a) {
				return true
			}
		}
		return false
	}
	kept := make([]int, len(before.Messages)) // blocks of each input message in the output
	next := len(in)                           // input blocks at or after next are taken
	for mi := len(after.Messages) - 1; mi >= 0; mi-- {
		m := &after.Messages[mi]
		for bi := len(m.Blocks) - 1; bi >= 0; bi-- {
			k := keyOf(after, m.Role, &m.Blocks[bi])
			at := next - 1
			for at >= 0 && in[at].key != k {
				at--
			}
			if at >= 0 {
				kept[in[at].message]++
				next = at
				continue
			}
			if k.kind != transcript.Text || !allowed(k.text) {
				t.Errorf("%s: block %d of output message %d (%s) is not a block of the input, or is out of order", name, bi, mi, m.Role)
			}
		}
	}
	for mi, n := range kept {
		if all := len(before.Messages[mi].Blocks); n != 0 && n != all {
			t.Errorf("%s: input message %d (%s) lost %d of its %d blocks: a message is dropped whole or kept", name, mi, before.Messages[mi].Role, all-n, all)
		}
	}
	for mi := range before.Protected() {
		if len(before.Messages[mi].Blocks) > 0 && kept[mi] == 0 {
			t.Errorf("%s: protected message %d (%s) was dropped", name, mi, before.Messages[mi].Role)
		}
	}
	for _, p := range before.Pairs() {
		if p.Call == transcript.None || p.Result == transcript.None {
			continue
		}
		if (kept[p.Call.Message] > 0) != (kept[p.Result.Message] > 0) {
			t.Errorf("%s: tool call %q (message %d) and its result (message %d) were separated", name, p.ID, p.Call.Message, p.Result.Message)
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
	for _, f := range []string{"session.jsonl", "anthropic.json", "openai.json", "responses.json", "codex.jsonl", "cline.json"} {
		files = append(files, filepath.Join(dir, f))
	}
	return files
}

// ScriptDocument is a JSON or JSONL document written into one of the testscript scripts.
type ScriptDocument struct {
	Script string // the script's file name (x.txtar)
	Name   string // the document's name inside it
	Data   []byte
}

// ScriptDocuments lists the documents of every script in testdata/script, in order. Many
// are made to break the rules (bad input, wild shapes), which makes them worth reading in
// every test that holds a reader to a promise.
func ScriptDocuments(t testing.TB) []ScriptDocument {
	t.Helper()
	scripts, _ := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "script", "*.txtar"))
	var docs []ScriptDocument
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if strings.HasSuffix(f.Name, ".json") || strings.HasSuffix(f.Name, ".jsonl") {
				docs = append(docs, ScriptDocument{Script: filepath.Base(s), Name: f.Name, Data: f.Data})
			}
		}
	}
	return docs
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

// LongEnv names the environment variable that turns the long tests on: CTXKIT_LONG=1 runs
// every corpus session, the generated documents at full size and the replay-heavy checks
// (.ci/run and the README's test command set it). Without it, `go test ./...` is the quick
// loop: the same tests on a few sessions and smaller documents, the long-only ones skipped.
const LongEnv = "CTXKIT_LONG"

// IsLong reports whether the long tests run (CTXKIT_LONG=1), for a test that has a quick
// variant.
func IsLong() bool { return os.Getenv(LongEnv) == "1" }

// Long skips the test, saying how to run it, unless CTXKIT_LONG=1.
func Long(t testing.TB) {
	t.Helper()
	if !IsLong() {
		t.Skipf("long test: runs with %s=1 (as .ci/run does)", LongEnv)
	}
}

// Quick returns files as they are with CTXKIT_LONG=1, and otherwise n of them spread
// evenly over their sorted order (the first and the last among them), so that the quick
// loop still reads corpus sessions of every kind the order puts apart (folders, clients).
func Quick(files []string, n int) []string {
	if IsLong() || len(files) <= n {
		return files
	}
	sorted := slices.Clone(files)
	sort.Strings(sorted)
	if n <= 1 {
		return sorted[:n]
	}
	picked := make([]string, 0, n)
	for i := range n {
		picked = append(picked, sorted[i*(len(sorted)-1)/(n-1)])
	}
	return picked
}
