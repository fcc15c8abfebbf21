package tokens

import "testing"

func TestPriceOf(t *testing.T) {
	for _, c := range []struct{ model, provider, want string }{
		{"claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5"},
		{"claude-opus-4-1-20250805", "anthropic", "claude-opus-4-1"},
		{"us.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic", "claude-haiku-4-5"},
		{"gpt-5-codex", "openai", "gpt-5-codex"},
		{"gpt-4o-2024-08-06", "openai", "gpt-4o"},
		{"llama-3", "openai", "relative"},
		{"", "anthropic", "relative"},
	} {
		if got := PriceOf(c.model, c.provider); got.Model != c.want {
			t.Errorf("PriceOf(%q) = %s, want %s", c.model, got.Model, c.want)
		}
	}
	if p := PriceOf("", "openai"); p.CacheWrite != p.Input {
		t.Errorf("OpenAI writes the cache at the input price: %+v", p)
	}
}

func TestParsePrice(t *testing.T) {
	base := PriceOf("claude-sonnet-4-5", "anthropic")
	p, err := ParsePrice("input=1, read=0.05", base)
	if err != nil || p.Input != 1 || p.CacheRead != 0.05 || p.CacheWrite != base.CacheWrite || p.Model != "given" {
		t.Errorf("ParsePrice = %+v, %v", p, err)
	}
	for _, bad := range []string{"input", "input=x", "input=-1", "output=3"} {
		if _, err := ParsePrice(bad, base); err == nil {
			t.Errorf("ParsePrice(%q) accepted", bad)
		}
	}
}

// An edit at Anthropic's prices (write 1.25, read 0.1 of input) repays within n requests
// when saved * 0.1 * n >= (uncached - saved) * 1.25 - uncached * 0.1.
func TestRepays(t *testing.T) {
	p := Price{Input: 1, CacheWrite: 1.25, CacheRead: 0.1}
	for _, c := range []struct {
		saved, uncached, n int
		want               bool
	}{
		{5000, 10000, 10, false}, // a gain of 5,000 against 5,250
		{6000, 10000, 10, true},  // 6,000 against 4,000
		{1000, 100000, 10, false},
		{1000, 1000, 1, true}, // everything after the edit is gone: nothing to write again
		{0, 1000, 100, false},
	} {
		if got := p.Repays(c.saved, c.uncached, c.n); got != c.want {
			t.Errorf("Repays(%d, %d, %d) = %v", c.saved, c.uncached, c.n, got)
		}
	}
}

// Judge agrees with Repays and gives the figures: at Anthropic's relative prices, saving
// 6,000 of 10,000 tokens costs 1.25*4,000 - 0.1*10,000 = 4,000 once and returns 600 a
// request.
func TestJudge(t *testing.T) {
	p := Price{Input: 1, CacheWrite: 1.25, CacheRead: 0.1}
	r := p.Judge(6000, 10000, 10)
	if !r.Repays || r.Cost != 4000/1e6 || r.Returns != 6000/1e6 || r.Why() != "" {
		t.Errorf("Judge(6000, 10000, 10) = %+v", r)
	}
	r = p.Judge(5000, 10000, 1)
	if r.Repays || r.Why() != "saving 5000 tokens would not repay the 10000 it takes out of the prompt cache within 1 request (--repay)" {
		t.Errorf("Judge(5000, 10000, 1) = %+v, %q", r, r.Why())
	}
	if (Price{}).Judge(6000, 10000, 10).Cost == 0 {
		t.Error("no price: not judged at Anthropic's relative prices")
	}
}
