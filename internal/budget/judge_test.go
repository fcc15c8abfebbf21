package budget

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// planJudged is Plan with each message's tokens given (as the command gives them), the old
// results judged by bounds when bounded (judgeBounded, a run without statistics) or by
// cutting them all (judgeOld): the edits, and how many results the judgement cut.
func planJudged(tr *transcript.Transcript, o Options, counts measure.Counts, bounded bool) ([]transcript.Edit, int) {
	o.PerMessage = counts.PerMessage
	p, st := newPlanner(tr, o)
	if bounded {
		p.bounds = counts.Blocks
	}
	judged := 0
	pre, _ := p.judgeOld(&st, func(i int, s *Stats) ([]transcript.Edit, error) {
		judged++
		return p.cut(tr, i, s), nil
	})
	var edits []transcript.Edit
	for i := range p.results {
		if c, ok := pre[i]; ok {
			edits = append(edits, c.edits...)
			continue
		}
		edits = append(edits, p.cut(tr, i, &st)...)
	}
	return edits, judged
}

// TestJudgeBoundedCutsAsJudgeOld: judging the old results by bounds on what their cuts
// save cuts the same results the same way as cutting them all first, on generated
// documents of every format at several --repay values (starts early, late, none), and
// cuts fewer of them where most are held.
func TestJudgeBoundedCutsAsJudgeOld(t *testing.T) {
	fewer := false
	for _, format := range []string{"anthropic", "claude-code", "codex", "openai", "responses"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 2 << 20, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(buf.Bytes(), transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		o200k, err := tokens.New("o200k_base")
		if err != nil {
			t.Fatal(err)
		}
		// (the estimate counts by length, Claude's reads literals, o200k decodes)
		for ci, c := range []tokens.Counter{estimate(), tokens.Claude(""), o200k} {
			name := []string{"estimate", "Claude's estimate", "o200k_base"}[ci]
			counts := measure.Of(tr, c, false).Counts()
			for _, repay := range []int{1, 3, 10, 30, 100} {
				o := Defaults()
				o.Counter, o.Utilization, o.Repay = c, 0.8, repay
				o.Price = tokens.PriceOf("", measure.ProviderOf(tr.Format))
				want, all := planJudged(tr, o, counts, false)
				got, judged := planJudged(tr, o, counts, true)
				where := fmt.Sprintf("%s, %s, repay %d", format, name, repay)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: judged by bounds, %d edits; cutting them all, %d", where, len(got), len(want))
				}
				if judged > all {
					t.Errorf("%s: judged by bounds, %d results cut; cutting them all, %d", where, judged, all)
				}
				fewer = fewer || judged < all
			}
		}
	}
	if !fewer {
		t.Error("judging by bounds never cut fewer results than cutting them all")
	}
}
