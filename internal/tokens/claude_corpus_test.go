package tokens_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/calibrate"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

// TestClaudeHeldOut measures the committed prices and framing on the corpus sessions the
// fit did not see (the split of calibrate.Held) and fails if they regress. The bounds
// are the figures measured when the prices were fitted (scripts/calibrate prints them
// into claude_table.go) with a little room; the old estimate (4 bytes a token) must stay
// worse.
func TestClaudeHeldOut(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus not found at %s", dir)
	}
	ivs, err := calibrate.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[string]struct {
		minN500    int     // intervals of >= 500 tokens held out, so the figures mean something
		maxBias    float64 // |bias - 1|
		maxMeanAbs float64
	}{
		// measured: mean 0.172, median 0.085, p90 0.438, bias 1.005 (old: 0.344, 0.319,
		// 0.624, 0.703), on 9 files, 135 intervals of >= 500 tokens. Half of those are one
		// Opus 4.5 session (deep-manifest a7da6a22, mean 0.22): plan mode and reminders put
		// hundreds of tokens into its requests that the file does not hold.
		"claude": {minN500: 25, maxBias: 0.05, maxMeanAbs: 0.18},
		// one session of Opus 4.7 (the parent and 6 subagents; 3 files held out, 9
		// intervals of >= 500 tokens): measured mean 0.321, median 0.090, p90 0.867, bias
		// 0.865 (old: 0.549, 0.411, 0.950, 0.520). Two of its nine intervals are a
		// subagent's second request, into which Claude Code put ~2,800 tokens it did not
		// log: they make the mean and the bias.
		"claude-opus-4-7": {minN500: 5, maxBias: 0.17, maxMeanAbs: 0.35},
	}
	for _, c := range calibrate.Compare(ivs, tokens.ClaudeFamilies(), calibrate.Current(), true) {
		b, ok := bounds[c.Family]
		if !ok {
			t.Errorf("family %s has no bounds", c.Family)
			continue
		}
		t.Logf("%s held out: %d intervals, %d of >= %d tokens; old mean %.3f median %.3f p90 %.3f bias %.3f; new mean %.3f median %.3f p90 %.3f bias %.3f",
			c.Family, c.New.N, c.New.N500, calibrate.MinTruth, c.Old.MeanAbs, c.Old.Median, c.Old.P90, c.Old.Bias, c.New.MeanAbs, c.New.Median, c.New.P90, c.New.Bias)
		if c.New.N500 < b.minN500 {
			t.Errorf("%s: %d held-out intervals of >= %d tokens, want at least %d", c.Family, c.New.N500, calibrate.MinTruth, b.minN500)
			continue
		}
		if d := c.New.Bias - 1; d > b.maxBias || d < -b.maxBias {
			t.Errorf("%s: held-out bias %.3f, want within %.0f%% of 1", c.Family, c.New.Bias, 100*b.maxBias)
		}
		if c.New.MeanAbs > b.maxMeanAbs {
			t.Errorf("%s: held-out mean relative error %.3f, want at most %.2f", c.Family, c.New.MeanAbs, b.maxMeanAbs)
		}
		if c.New.MeanAbs >= c.Old.MeanAbs || c.New.Median >= c.Old.Median || abs(c.New.Bias-1) >= abs(c.Old.Bias-1) {
			t.Errorf("%s: no better than 4 bytes a token: %+v vs %+v", c.Family, c.New, c.Old)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
