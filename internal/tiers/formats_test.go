package tiers_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// forced are the arguments that make each tier act on a 150 KB generated session.
var forced = map[string][]string{
	"ctx-persist":   {"--threshold", "2000", "--store", "STORE"},
	"ctx-budget":    {"--cap", "1000"},
	"ctx-snip":      {"--window", "30k", "--store", "STORE"},
	"ctx-summarize": {"--window", "30k", "--store", "STORE"},
	"ctx-trim":      {"--window", "30k"},
}

// TestEveryTierActsOnEveryFormat walks transcript.Formats: testgen writes each, every
// tier made to act on it changes something and leaves a valid document of the same
// format, and ctx-convert writes each to every target with its messages. A format added
// without its pieces (a reader, the result blocks a tier clears, a way to write a new
// message, repair rules, a generator) fails here instead of passing through unchanged.
func TestEveryTierActsOnEveryFormat(t *testing.T) {
	for _, tier := range tiers.All() {
		if _, ok := forced[tier.Name]; !ok {
			t.Errorf("%s: no arguments here that make it act", tier.Name)
		}
	}
	for _, f := range transcript.Formats {
		t.Run(string(f), func(t *testing.T) {
			if !slices.Contains(testgen.Formats, string(f)) {
				t.Fatalf("testgen cannot write %s", f)
			}
			var doc bytes.Buffer
			if err := testgen.Generate(&doc, testgen.Options{Format: string(f), Size: 150_000, Seed: 1}); err != nil {
				t.Fatal(err)
			}
			in, err := transcript.Parse(doc.Bytes(), transcript.Options{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			// A tier may leave what the input already broke (Cline answers a call with
			// user text), never break a rule the input kept.
			broken := map[repair.Rule]int{}
			for _, p := range repair.Check(in) {
				broken[p.Rule]++
			}
			cache := t.TempDir()
			getenv := func(k string) string {
				if k == "CTX_CACHE_DIR" {
					return cache
				}
				return ""
			}
			for _, tier := range tiers.All() {
				args := slices.Clone(forced[tier.Name])
				for i, a := range args {
					if a == "STORE" {
						args[i] = t.TempDir()
					}
				}
				args = append(args, "--stats")
				var out, errs bytes.Buffer
				if code := tier.Main(args, bytes.NewReader(doc.Bytes()), &out, &errs, getenv); code != 0 {
					t.Errorf("%s exited %d: %s", tier.Name, code, errs.String())
					continue
				}
				var st struct {
					Items  int    `json:"items"`
					Format string `json:"format"`
				}
				if err := json.Unmarshal(lastLine(errs.Bytes()), &st); err != nil {
					t.Errorf("%s: stats: %v in %q", tier.Name, err, errs.String())
				}
				if st.Items == 0 || st.Format != string(f) || bytes.Equal(out.Bytes(), doc.Bytes()) {
					t.Errorf("%s did not act on %s: %s", tier.Name, f, errs.String())
					continue
				}
				got, err := transcript.Parse(out.Bytes(), transcript.Options{})
				if err != nil || got.Format != f {
					t.Errorf("%s: output is not %s: %v", tier.Name, f, err)
					continue
				}
				for _, p := range repair.Check(got) {
					if broken[p.Rule] == 0 {
						t.Errorf("%s: output breaks a rule the input kept: %v", tier.Name, p)
						break
					}
				}
			}
			for _, to := range convert.Targets {
				res, err := convert.Convert(in, to)
				if err != nil {
					t.Errorf("convert to %s: %v", to, err)
					continue
				}
				if res.Messages < len(in.Messages)/2 {
					t.Errorf("convert to %s wrote %d of %d messages", to, res.Messages, len(in.Messages))
				}
			}
		})
	}
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}
