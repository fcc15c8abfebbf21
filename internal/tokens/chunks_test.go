package tokens

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// TestChunkedCountsAdd: a long text counted in chunks counts what it counts whole, on every
// long string of generated sessions and of the corpus, and on texts made of their lines
// in another order (where the chunks of one text turn up in another).
func TestChunkedCountsAdd(t *testing.T) {
	var texts []string
	seen := map[string]bool{}
	for i, format := range []string{"claude-code", "codex", "openai"} {
		var doc bytes.Buffer
		if err := testgen.Generate(&doc, testgen.Options{Format: format, Size: 1 << 20, Seed: int64(40 + i)}); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, jsonStrings(doc.Bytes(), seen)...)
	}
	if _, err := os.Stat(corpusDir); err == nil && !testing.Short() {
		for _, f := range corpusFiles(t) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, jsonStrings(data, seen)...)
		}
	}
	long := 0
	for _, name := range []string{"o200k", "cl100k"} {
		c := newBPECounter(name, vocabFor(name))
		for k, text := range texts {
			if len(text) < chunkedMinBytes {
				continue
			}
			long++
			want := countText(c.vocab, text, nil, nil)
			if got := c.countChunked(text); got != want {
				t.Fatalf("%s: text %d (%d bytes): %d in chunks, %d whole", name, k, len(text), got, want)
			}
			if got := c.Recount(text); got != want {
				t.Fatalf("%s: text %d: Recount %d, whole %d", name, k, got, want)
			}
			// The same lines without the first, and with the halves swapped.
			lines := strings.SplitAfter(text, "\n")
			for _, v := range []string{strings.Join(lines[1:], ""), strings.Join(append(lines[len(lines)/2:], lines[:len(lines)/2]...), "")} {
				if got, want := c.countChunked(v), countText(c.vocab, v, nil, nil); got != want {
					t.Fatalf("%s: text %d, its lines moved: %d in chunks, %d whole", name, k, got, want)
				}
			}
		}
	}
	if long < 20 {
		t.Fatalf("only %d long texts to compare", long)
	}
	t.Logf("%d long texts compared", long)
}

// FuzzChunkedCountsAdd: any text, cut into chunks of a few bytes, counts what it counts
// whole.
func FuzzChunkedCountsAdd(f *testing.F) {
	for _, s := range handTexts() {
		f.Add(s)
	}
	f.Add("a\nb\n/c\n d\n\te\n}\n{\n'x\n\r\nq")
	f.Fuzz(func(t *testing.T, text string) {
		defer func(min, bits int) { chunkMinBytes, chunkLineBits = min, bits }(chunkMinBytes, chunkLineBits)
		chunkLineBits = 0
		for _, min := range []int{1, 3} {
			chunkMinBytes = min
			for _, name := range []string{"o200k", "cl100k"} {
				c := newBPECounter(name, vocabFor(name))
				if got, want := c.countChunked(text), countText(c.vocab, text, nil, nil); got != want {
					t.Fatalf("%s: %q: %d in chunks, %d whole", name, text, got, want)
				}
			}
		}
	})
}
