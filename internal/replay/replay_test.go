package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

func parseFile(t *testing.T, name string) *transcript.Transcript {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Parse(data, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A pipeline that changes nothing sends the session as it was: every request extends the
// one before, the figures are the session's own, and the cost ratio is 1.
func TestIdentityPipelineIsTheSession(t *testing.T) {
	for _, name := range []string{"anthropic.json", "openai.json", "responses.json", "cline.json", "session.jsonl", "codex.jsonl"} {
		t.Run(name, func(t *testing.T) {
			tr := parseFile(t, name)
			pipe, err := ParsePipe("ctx-count -p", Tools)
			if err != nil || !pipe.InProcess() {
				t.Fatalf("ParsePipe: %v, in process %v", err, pipe.InProcess())
			}
			c, _ := tokens.New("estimate")
			var turns []Turn
			tot, err := Replay(context.Background(), tr, Options{
				Pipe: pipe,
				Parse: func(b []byte) (*transcript.Transcript, error) {
					return transcript.Parse(b, transcript.Options{Format: tr.Format})
				},
				Counter:   c,
				Effective: 1 << 30,
				Price:     tokens.PriceOf("claude-sonnet-4-5", "anthropic"),
				Getenv:    func(string) string { return "" },
				Env:       map[string]string{"CTX_CACHE_DIR": "off"},
				Check:     true,
			}, func(tn Turn) error { turns = append(turns, tn); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if tot.Requests < 2 || len(turns) != tot.Requests {
				t.Fatalf("%d requests, %d turns", tot.Requests, len(turns))
			}
			if tot.CacheBreaks != 0 || tot.Tokens != tot.Uncompacted || tot.Cost != tot.CostUncompacted || tot.BilledRatio != 1 {
				t.Errorf("identity: %+v", tot)
			}
			for _, tn := range turns {
				if len(tn.Fired) != 0 || tn.Tokens != tn.Uncompacted {
					t.Errorf("turn %d: %+v", tn.Turn, tn)
				}
				if tn.Turn > 1 && tn.Cached == 0 {
					t.Errorf("turn %d reads nothing from the cache", tn.Turn)
				}
			}
		})
	}
}

func TestParsePipe(t *testing.T) {
	for _, c := range []struct {
		text      string
		inProcess bool
		stages    int
	}{
		{DefaultPipe, true, 5},
		{"ctx-snip --keep 2 --clear-inputs | ctx-trim", true, 2},
		{`ctx-budget --cap '20 KB'`, true, 1},
		{"/usr/local/bin/ctx-trim", true, 1},
		{"ctx-snip | jq -c .", false, 0},
		{"ctx-snip > /tmp/x", false, 0},
		{"ctx-snip --keep $N", false, 0},
		{"ctx-snip || cat", false, 0},
	} {
		p, err := ParsePipe(c.text, Tools)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if p.InProcess() != c.inProcess || len(p.stages) != c.stages {
			t.Errorf("%q: in process %v with %d stages, want %v with %d", c.text, p.InProcess(), len(p.stages), c.inProcess, c.stages)
		}
	}
	if _, err := ParsePipe("ctx-snip | | ctx-trim", Tools); err == nil {
		t.Error("an empty stage is accepted")
	}
}

// The history of a JSON document closes its array where the request ends, and the next
// request is the one sent plus what came since.
func TestHistoryAndExtend(t *testing.T) {
	doc := []byte("[\n {\"role\":\"user\",\"content\":\"a\"},\n {\"role\":\"assistant\",\"content\":\"b\"},\n {\"role\":\"user\",\"content\":\"c\"},\n {\"role\":\"assistant\",\"content\":\"d\"}\n]\n")
	tr, err := transcript.Parse(doc, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := Points(tr)
	if len(ps) != 2 || ps[0].Message != 1 || ps[1].Message != 3 {
		t.Fatalf("points %+v", ps)
	}
	first := historyOf(tr, ps[0].Cut)
	if want := "[\n {\"role\":\"user\",\"content\":\"a\"}]\n"; string(first) != want {
		t.Errorf("first request %q, want %q", first, want)
	}
	sent, err := transcript.Parse(first, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	next, err := extend(sent, tr, tr.Doc[ps[0].Cut:ps[1].Cut])
	if err != nil {
		t.Fatal(err)
	}
	if want := string(historyOf(tr, ps[1].Cut)); !bytes.Equal(next, []byte(want)) {
		t.Errorf("second request %q, want %q", next, want)
	}
}
