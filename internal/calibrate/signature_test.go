package calibrate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
)

// The samples of the inline session: its one thinking block stored empty is in the
// interval after the switch to Opus 4.7, which also loads a tool schema (left out), and
// in its reply (the output cross-check).
func TestSignatureSamples(t *testing.T) {
	ss := signatureSamples([]byte(session), "s.jsonl")
	var intervals, outputs int
	for _, s := range ss {
		switch {
		case s.Output:
			outputs++
			if len(s.Signatures) != 1 || s.Signatures[0] != len("c2lnbmF0dXJl") {
				t.Errorf("output sample %+v", s)
			}
		case s.Empty:
			intervals++
		}
	}
	if intervals != 0 || outputs != 1 {
		t.Errorf("%d intervals (the one with thinking stored empty loads a tool schema: none), %d replies (want 1)", intervals, outputs)
	}
	// Recorded with its text, the block is a sample of the main family's kind.
	withText := strings.Replace(strings.ReplaceAll(session, "claude-opus-4-7", "claude-sonnet-4-5-20250929"), `"thinking":""`, `"thinking":"Let me look at the file first."`, 1)
	ss = signatureSamples([]byte(withText), "s.jsonl")
	found := false
	for _, s := range ss {
		if !s.Empty && s.Tokens > 0 && s.Signatures[0] == len("c2lnbmF0dXJl") {
			found = true
		}
	}
	if !found {
		t.Errorf("no sample of the thinking recorded with its text: %+v", ss)
	}
}

// TestSignatureRatesAreTheFit holds the rates tokens prices thinking stored empty at to
// the fit on the corpus, and logs the fit's error (tokens/signature.go quotes it).
func TestSignatureRatesAreTheFit(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus not found at %s", dir)
	}
	ss, err := SignatureSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := FitSignatures(ss)
	if math.Abs(f.Header-tokens.SignatureHeader) > 0.5 {
		t.Errorf("fitted header %.1f bytes, tokens.SignatureHeader %d", f.Header, tokens.SignatureHeader)
	}
	for fam, g := range tokens.ClaudeFamilies() {
		if math.Abs(f.Rate[fam]-tokens.SignatureRate(g.Name)) > 0.0005 {
			t.Errorf("%s: fitted rate %.4f, tokens.SignatureRate %.3f", g.Name, f.Rate[fam], tokens.SignatureRate(g.Name))
		}
		all := ""
		if f.AllSamples[fam] {
			all = " (all it has: none left to hold out)"
		}
		t.Logf("%s: %.4f tokens a byte beyond %.1f, fitted on %d samples%s", g.Name, f.Rate[fam], f.Header, f.N[fam], all)
		for _, held := range []bool{false, true} {
			if sel := SelectSignatures(ss, fam, false, false, held, false); len(sel) > 0 {
				e := MeasureSignatures(sel, f.Rate[fam], f.Header)
				t.Logf("  recorded with text, held out %v: %d blocks, bias %.3f, mean |error| %.3f on %d of >= %d tokens", held, e.N, e.Bias, e.MeanAbs, e.N100, MinSignatureTokens)
			}
		}
		if sel := SelectSignatures(ss, fam, true, false, false, true); len(sel) > 0 {
			e, l := MeasureSignatures(sel, f.Rate[fam], f.Header), LeaveOneOut(sel, f.Header)
			t.Logf("  stored empty, intervals: %d, bias %.3f, explained %.3f; left out one at a time: bias %.3f, explained %.3f, mean |error| %.3f on %d of >= %d tokens",
				e.N, e.Bias, e.Explained, l.Bias, l.Explained, l.MeanAbs, l.N100, MinSignatureTokens)
		}
		if sel := SelectSignatures(ss, fam, true, true, false, true); len(sel) > 0 {
			t.Logf("  as output (cross-check): %d replies, rate of their own %.3f beyond the header, %.3f through zero", len(sel), emptyRate(sel, f.Header), emptyRate(sel, 0))
		}
	}
	// The held-out blocks of the main family: the bounds measured when the rate was fitted
	// (bias 0.964, mean |error| 0.085), with a little room.
	if sel := SelectSignatures(ss, 0, false, false, true, false); len(sel) > 0 {
		if e := MeasureSignatures(sel, tokens.SignatureRate(""), tokens.SignatureHeader); math.Abs(e.Bias-1) > 0.06 || e.MeanAbs > 0.12 {
			t.Errorf("held out: bias %.3f, mean |error| %.3f", e.Bias, e.MeanAbs)
		}
	}
}
