package budget

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// transform is ctx-budget as a whole-document function: what Main does between reading
// and writing, with the window of --window (0 for the default).
// name is the file name, which tells an empty .jsonl session from an empty document.
func transform(name string, o Options, window int) invariant.Transform {
	return func(in []byte) ([]byte, error) {
		out, _, _, err := runDoc(name, in, o, window)
		return out, err
	}
}

func runDoc(name string, in []byte, o Options, window int) ([]byte, Stats, int, error) {
	t, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return nil, Stats{}, 0, err
	}
	if o.Counter == nil {
		o.Counter = estimate()
	}
	b, err := tokens.Window("", window, 0)
	if err != nil {
		return nil, Stats{}, 0, err
	}
	total, u := Utilization(t, o.Counter, b)
	o.Utilization = u
	edits, st := Plan(t, o)
	out, err := t.Apply(edits)
	return out, st, total, err
}

// windows are the --window settings the invariants are checked at: the default window,
// where only the hard cap acts, and two small ones that push utilization past 70%.
var windows = []int{0, 50_000, 20_000}

func checkAll(t *testing.T, files []string) {
	changed := 0
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		for _, w := range windows {
			invariant.Check(t, fmt.Sprintf("window%d/%s", w, name), in, transform(name, Defaults(), w), invariant.Options{Lossy: true, ProtectedResults: true})
		}
		// A cap low enough to cut nearly every result, errors and parts included.
		o := Defaults()
		o.Cap, o.KeepRecent = Chars(2000), 0
		if out := invariant.Check(t, "cap2000/"+name, in, transform(name, o, 0), invariant.Options{Lossy: true, ProtectedResults: true}); !bytes.Equal(out, in) {
			changed++
		}
		o.Cap = Toks(300)
		invariant.Check(t, "cap300tok/"+name, in, transform(name, o, 0), invariant.Options{Lossy: true, ProtectedResults: true})
	}
	// The checks above must have seen cuts, not only identities.
	if changed < len(files)/10 {
		t.Errorf("a 2,000 character cap changed only %d of %d files", changed, len(files))
	}
}

func TestInvariantsCorpus(t *testing.T) {
	checkAll(t, invariant.CorpusFiles(t))
}

func TestInvariantsSamples(t *testing.T) {
	files := invariant.Samples(t)
	checkAll(t, files)
	// The samples' results are below the default cap: identity.
	for _, f := range files {
		in, _ := os.ReadFile(f)
		invariant.Identity(t, filepath.Base(f), in, transform(filepath.Base(f), Defaults(), 0))
	}
}

// TestInvariantsGenerated runs over generated sessions with 50-200 KB results, which the
// default caps cut in every format (their old results at 63% of the default window, the
// cache aside: --repay 0).
func TestInvariantsGenerated(t *testing.T) {
	cutting := Defaults()
	cutting.Repay = 0
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 1 << 20, Seed: 3, Images: true}); err != nil {
			t.Fatal(err)
		}
		out := invariant.Check(t, format, buf.Bytes(), transform(format, cutting, 0), invariant.Options{Lossy: true, ProtectedResults: true})
		if bytes.Equal(out, buf.Bytes()) {
			t.Errorf("%s: nothing was cut in a document with 50-200 KB results", format)
		}
		for _, w := range windows[1:] {
			invariant.Check(t, fmt.Sprintf("window%d/%s", w, format), buf.Bytes(), transform(format, Defaults(), w), invariant.Options{Lossy: true, ProtectedResults: true})
		}
	}
}
