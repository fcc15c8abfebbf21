package tokens

import "testing"

// Every family has a rate; a block stored empty costs its rate times its signature's bytes
// beyond the header, at least a token, and the Claude estimate prices it at its family's.
func TestSignatureTokens(t *testing.T) {
	for _, f := range ClaudeFamilies() {
		if _, ok := signatureRates[f.Name]; !ok {
			t.Errorf("family %s has no signature rate", f.Name)
		}
	}
	if SignatureTokens(0.2, 0) != 0 || SignatureTokens(0.2, SignatureHeader) != 1 || SignatureTokens(0.25, SignatureHeader+4000) != 1000 {
		t.Errorf("SignatureTokens: %d, %d, %d", SignatureTokens(0.2, 0), SignatureTokens(0.2, SignatureHeader), SignatureTokens(0.25, SignatureHeader+4000))
	}
	for _, model := range []string{"claude-opus-4-7", "claude-sonnet-4-5-20250929", ""} {
		p, ok := Claude(model).(SignaturePricer)
		if !ok {
			t.Fatalf("the Claude estimate of %q prices no signature", model)
		}
		if got, want := p.SignatureTokens(10260), SignatureTokens(SignatureRate(model), 10260); got != want {
			t.Errorf("%q: %d, want %d", model, got, want)
		}
	}
	if SignatureRate("claude-opus-4-7") == SignatureRate("claude-sonnet-4-5") {
		t.Error("Opus 4.7 is priced as the main family")
	}
	if s := Claude("claude-opus-4-7").(*ClaudeCounter).Scaled(1.5, "api"); s.SignatureTokens(10260) != Claude("claude-opus-4-7").(*ClaudeCounter).SignatureTokens(10260) {
		t.Error("a scaled estimate prices signatures at another family's rate")
	}
}
