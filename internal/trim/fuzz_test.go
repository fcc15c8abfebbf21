package trim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// FuzzTrim: no input makes the tier panic, and whatever parses is trimmed, at any cap and
// either strategy, into a document that keeps the promises of a tier that only drops
// messages (invariant Drops: kept messages unchanged and in order, the protected ones kept,
// no call parted from its result, no more tokens than before, a second run the same).
// Seeds are the documents of the trim scripts and the samples.
func FuzzTrim(f *testing.F) {
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "trim_*.txtar"))
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".json") || strings.HasSuffix(file.Name, ".jsonl") {
				f.Add(string(file.Data), uint16(60), false)
			}
		}
	}
	for _, p := range []string{"anthropic.json", "openai.json", "responses.json", "codex.jsonl", "session.jsonl"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", p)); err == nil {
			f.Add(string(b), uint16(5000), true)
		}
	}
	f.Fuzz(func(t *testing.T, doc string, maxTokens uint16, first bool) {
		const name = "doc"
		in, err := transcript.Parse([]byte(doc), transcript.Options{Name: name})
		if err != nil {
			return
		}
		o := capped(int(maxTokens) + 1)
		if first {
			o.Strategy = KeepFirst
		}
		out, _, err := trimDoc(name, []byte(doc), o, 0)
		if err != nil {
			t.Fatalf("trimming a readable %s document failed: %v", in.Format, err)
		}
		res, err := transcript.Parse(out, transcript.Options{Format: in.Format, Name: name})
		if err != nil {
			t.Fatalf("the trimmed %s document does not parse: %v\n%s", in.Format, err, out)
		}
		detected := transcript.Format("")
		if again, err := transcript.Parse(out, transcript.Options{Name: name}); err == nil {
			detected = again.Format
		}
		if detected != in.Format {
			// Dropping every block only one format has can leave a chat of plain texts that
			// reads the same in Anthropic and OpenAI form (detection then says OpenAI, unless
			// the request names a Claude model or has a system field); the rest of the checks
			// read documents by detection.
			if res.Format != transcript.Anthropic || detected != transcript.OpenAI {
				t.Fatalf("a trimmed %s document reads as %q", in.Format, detected)
			}
			return
		}
		invariant.Check(t, name, []byte(doc), transform(name, o, 0),
			invariant.Options{Structural: true, Lossy: true, Drops: true, Added: []string{repair.FirstUserText, transcript.TrimNote}})
	})
}
