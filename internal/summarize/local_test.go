package summarize

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// localDoc is a parsed document the extraction tests run on.
type localDoc struct {
	name string
	t    *transcript.Transcript
}

// localDocs are the samples, every corpus file when the corpus is there, and generated
// documents of every format.
func localDocs(t *testing.T) []localDoc {
	t.Helper()
	files := invariant.Samples(t)
	if _, err := os.Stat(corpusDir); err == nil {
		files = append(files, invariant.CorpusFiles(t)...)
	}
	var docs []localDoc
	add := func(name string, in []byte) {
		tr, err := transcript.Parse(in, transcript.Options{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs = append(docs, localDoc{name, tr})
	}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		add(path, in)
	}
	for _, format := range testgen.Formats {
		for seed, size := range []int{20 << 10, 300 << 10, 1 << 20} {
			var buf bytes.Buffer
			o := testgen.Options{Format: format, Size: size, Seed: int64(seed + 1), Images: seed == 1}
			if err := testgen.Generate(&buf, o); err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("testgen %s %d seed %d", format, size, o.Seed), buf.Bytes())
		}
	}
	return docs
}

var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus")

// messageLists are the lists of messages Local is tried on: all of them; what the tier
// summarizes when it acts at the document's size; prefixes, which cut calls from their
// results; and every other message, which leaves calls without results and results
// without calls.
func messageLists(t *transcript.Transcript) map[string][]int {
	n := len(t.Messages)
	all := make([]int, n)
	var odd []int
	for i := range all {
		all[i] = i
		if i%2 == 1 {
			odd = append(odd, i)
		}
	}
	o := Defaults()
	o.Counter = estimate()
	Measure(t, &o)
	o.Effective = o.Tokens
	return map[string][]int{
		"all":         all,
		"summarized":  newOnly(t, Choose(t, o)),
		"first third": all[:n/3],
		"first half":  all[:n/2],
		"odd":         odd,
	}
}

// TestLocalMatchesReference: Local gives what the summarizer gave before it became
// incremental, on every document and list of messages.
func TestLocalMatchesReference(t *testing.T) {
	docs := localDocs(t)
	compared := 0
	for _, d := range docs {
		for list, msgs := range messageLists(d.t) {
			got, want := Local(d.t, msgs), localReference(d.t, msgs)
			if !reflect.DeepEqual(got, want) {
				meta := Meta{Messages: len(msgs), Backend: "local"}
				t.Errorf("%s, %s messages: Local differs from the reference\ngot:\n%s\nwant:\n%s", d.name, list, Render(got, meta), Render(want, meta))
			}
			compared++
		}
	}
	t.Logf("%d documents, %d message lists compared", len(docs), compared)
}
