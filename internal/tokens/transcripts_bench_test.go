package tokens

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/heldout"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkCountTranscripts counts what ctx-count counts exactly by default: the text of
// every block of every message but images and encrypted reasoning of documents of the OpenAI family (whose default counter
// is o200k), repeats and all, with a fresh counter per iteration. "generated" is a
// 4 MB document of each of codex, openai and responses (the shapes of scripts/bench.sh);
// "corpus-train" and "corpus-test" are the real conversations of ../shared/corpus of those
// formats, in the two halves of internal/heldout (tune on the first, report the second).
// Run on one core; cpu-MB/s is by CPU time, steadier on a busy machine:
//
//	go test -run '^$' -bench CountTranscripts -cpu 1 ./internal/tokens
func BenchmarkCountTranscripts(b *testing.B) {
	sets := transcriptTexts(b)
	for _, set := range []string{"generated", "corpus-train", "corpus-test"} {
		texts := sets[set]
		if len(texts) == 0 {
			continue // no corpus
		}
		var size int64
		for _, s := range texts {
			size += int64(len(s))
		}
		for _, name := range []string{"o200k", "cl100k"} {
			b.Run(set+"/"+name, func(b *testing.B) { benchCount(b, name, texts, size) })
		}
	}
}

var transcriptSets = sync.OnceValues(func() (map[string][]string, error) {
	sets := map[string][]string{}
	for i, format := range []string{"codex", "openai", "responses"} {
		var doc bytes.Buffer
		if err := testgen.Generate(&doc, testgen.Options{Format: format, Size: 4 << 20, Seed: int64(200 + i), Images: true}); err != nil {
			return nil, err
		}
		texts, err := blockTexts(doc.Bytes())
		if err != nil {
			return nil, err
		}
		sets["generated"] = append(sets["generated"], texts...)
	}
	if _, err := os.Stat(corpusDir); err != nil {
		return sets, nil
	}
	for _, f := range corpusFiles(&testing.T{}) {
		if strings.HasSuffix(f, ".meta.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		t, err := transcript.Parse(data, transcript.Options{})
		if err != nil || DefaultTokenizer(string(t.Format)) != "o200k" {
			continue // not a conversation of the OpenAI family
		}
		half := "corpus-train"
		if heldout.Test(f) {
			half = "corpus-test"
		}
		texts, err := blockTexts(data)
		if err != nil {
			return nil, err
		}
		sets[half] = append(sets[half], texts...)
	}
	return sets, nil
})

func transcriptTexts(b *testing.B) map[string][]string {
	sets, err := transcriptSets()
	if err != nil {
		b.Fatal(err)
	}
	return sets
}

// blockTexts returns the text of every block of every message of a document.
func blockTexts(data []byte) ([]string, error) {
	t, err := transcript.Parse(data, transcript.Options{})
	if err != nil {
		return nil, err
	}
	var texts []string
	for i := range t.Messages {
		for j := range t.Messages[i].Blocks {
			b := &t.Messages[i].Blocks[j]
			if b.Kind == transcript.Image || b.Encrypted > 0 {
				continue // priced by its pixels or size, not counted (measure.countSized)
			}
			if s := t.BodyText(b); s != "" {
				texts = append(texts, s)
			}
		}
	}
	return texts, nil
}
