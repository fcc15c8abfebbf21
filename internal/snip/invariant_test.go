package snip

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// transform is ctx-snip as a whole-document function: what Main does between reading and
// writing, with the window of --window (0 for the default). name is the file name, which
// tells an empty .jsonl session from an empty document.
func transform(t testing.TB, name string, o Options, window int) invariant.Transform {
	return func(in []byte) ([]byte, error) {
		out, _, err := runDoc(t, name, in, o, window)
		return out, err
	}
}

// runDoc runs the tier on a document and checks that its token figures match a recount
// of the output.
func runDoc(t testing.TB, name string, in []byte, o Options, window int) ([]byte, Stats, error) {
	out, st, o, err := snipDoc(name, in, o, window)
	if err != nil || len(st.Items)+st.Inputs == 0 {
		return out, st, err
	}
	after, err := transcript.Parse(out, transcript.Options{Name: name})
	if err != nil {
		return nil, st, fmt.Errorf("output does not parse: %w", err)
	}
	if got := measure.Total(after, o.Counter); got != o.Tokens+st.TokensDelta {
		t.Errorf("%s: tokens after = %d, the tier said %d%+d", name, got, o.Tokens, st.TokensDelta)
	}
	return out, st, nil
}

// snipDoc is what Main does with one document: parse, count, plan, splice.
func snipDoc(name string, in []byte, o Options, window int) ([]byte, Stats, Options, error) {
	tr, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return nil, Stats{}, o, err
	}
	if o.Counter == nil {
		o.Counter = estimate()
	}
	b, err := tokens.Window("", window, 0)
	if err != nil {
		return nil, Stats{}, o, err
	}
	o.Tokens, o.Effective = measure.Total(tr, o.Counter), b.Effective
	edits, _, st := Plan(tr, o)
	out, err := tr.Apply(edits)
	return out, st, o, err
}

// windows are the --window settings the invariants are checked at: the default window,
// where little is above the trigger, and two small ones that push most sessions past it.
var windows = []int{0, 50_000, 20_000}

// future is a clock long after every transcript: microcompact applies to all that carry
// timestamps.
var future = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

func checkAll(t *testing.T, files []string) (changed int) {
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		differs := false
		check := func(label string, o Options, window int) {
			out := invariant.Check(t, label+"/"+name, in, transform(t, name, o, window), invariant.Options{Lossy: true})
			differs = differs || (out != nil && !bytes.Equal(out, in))
		}
		for _, w := range windows {
			check(fmt.Sprintf("window%d", w), Defaults(), w)
			check(fmt.Sprintf("rules/window%d", w), rules(), w)
		}
		o := rules()
		o.Now = future
		check("now2100", o, 0)
		// Everything the tier can do at once: keep nothing, clear inputs too.
		o.Keep, o.MaxSearches, o.Trigger, o.Target, o.ClearInputs = 0, 1, 0, 0, true
		check("all", o, 20_000)
		// The same keeping every cleared text in a store: longer placeholders.
		o.Store = storeDir
		check("all-store", o, 20_000)
		st := Defaults()
		st.Store = storeDir
		check("window20000-store", st, 20_000)
		if differs {
			changed++
		}
	}
	return changed
}

func TestInvariantsCorpus(t *testing.T) {
	files := invariant.CorpusFiles(t)
	// The checks must have seen clearing, not only identities: two thirds of the files have tool
	// results (the non-function-calling SWE-agent files and results-free sessions do not).
	if changed := checkAll(t, files); changed < len(files)/2 {
		t.Errorf("the tier changed only %d of %d files", changed, len(files))
	}
}

func TestInvariantsSamples(t *testing.T) {
	files := invariant.Samples(t)
	if changed := checkAll(t, files); changed != len(files) {
		t.Errorf("the tier changed %d of %d samples", changed, len(files))
	}
	// Below the trigger at the default window, with a warm cache: identity.
	for _, f := range files {
		in, _ := os.ReadFile(f)
		invariant.Identity(t, filepath.Base(f), in, transform(t, filepath.Base(f), Defaults(), 0))
	}
}

// TestInvariantsGenerated runs over larger generated sessions in every format.
func TestInvariantsGenerated(t *testing.T) {
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 1 << 20, Seed: 3, Images: true}); err != nil {
			t.Fatal(err)
		}
		for _, w := range windows {
			out := invariant.Check(t, fmt.Sprintf("window%d/%s", w, format), buf.Bytes(), transform(t, format, Defaults(), w), invariant.Options{Lossy: true})
			if w == 0 && bytes.Equal(out, buf.Bytes()) {
				t.Errorf("%s: a 1 MB session is above 60%% of the default window, yet nothing was cleared", format)
			}
		}
	}
}
