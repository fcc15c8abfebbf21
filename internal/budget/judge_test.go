package budget

import (
	"bytes"
	"fmt"
	"slices"
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

// TestJudgeBoundedAtTheEdge: judged by bounds, an old result whose bound is exactly what
// its cut saves, at a start whose saving repays exactly (the least that does) or falls a
// token short, is cut, kept or held as cutting them all decides. A bound taken below a
// saving, or a start passed over while it could still repay, changes the edits here.
func TestJudgeBoundedAtTheEdge(t *testing.T) {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: 1 << 20, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Parse(buf.Bytes(), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := estimate()
	counts := measure.Of(tr, c, false).Counts()
	o := Defaults()
	o.Counter, o.Utilization = c, 0.8
	o.Price = tokens.PriceOf("", measure.ProviderOf(tr.Format))
	o.PerMessage = counts.PerMessage

	// What each old result's cut saves, as judgeOld measures it.
	p, _ := newPlanner(tr, o)
	saved := map[transcript.Ref]int{}
	var changed []transcript.Ref // the old results a cut changes, oldest first
	p.judging = true
	for i, ref := range p.results {
		if ref.Message >= p.arrival || p.skip[i] || p.hardOnly[i] || !mayExceed(textUnits(tr.Block(ref)), p.limits) {
			continue
		}
		var s Stats
		if len(p.cut(tr, i, &s)) > 0 {
			saved[ref] = -s.TokensDelta
			changed = append(changed, ref)
		} else {
			saved[ref] = 0
		}
	}
	if len(changed) < 3 {
		t.Fatalf("%d old results cut; the test needs a few", len(changed))
	}
	// Bounds exactly the savings (the blocks of other results as counted).
	bounds := make([][]int, len(counts.Blocks))
	for mi := range counts.Blocks {
		bounds[mi] = slices.Clone(counts.Blocks[mi])
	}
	for ref, n := range saved {
		bounds[ref.Message][ref.Block] = n
	}
	// The start tried: the third newest result a cut changes, the savings from it on S.
	k := len(changed) - 3
	at := changed[k].Message
	s := 0
	for _, ref := range changed[k:] {
		s += saved[ref]
	}
	// most: the most tokens from the start on that saving S repays.
	lo, hi := 0, 1<<40
	for lo < hi {
		if mid := (lo + hi + 1) / 2; o.Price.Judge(s, mid, o.Repay).Repays {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	most := lo
	if !o.Price.Judge(s, most, o.Repay).Repays || o.Price.Judge(s, most+1, o.Repay).Repays {
		t.Fatalf("no edge at %d tokens", most)
	}
	var edits []string
	for _, uncached := range []int{most, most + 1} {
		// The tokens from the start on: the start's message holds them all, the newer
		// ones none (any start after it repays), the older ones far more than any saving
		// (none before it repays): the start is this one, or the next.
		per := make([]int, len(counts.PerMessage))
		for mi := range at {
			per[mi] = 1 << 30
		}
		per[at] = uncached
		n := measure.Counts{PerMessage: per, Blocks: bounds}
		want, _ := planJudged(tr, o, n, false)
		got, judged := planJudged(tr, o, n, true)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d tokens from the start on (repays up to %d): judged by bounds, %d edits; cutting them all, %d", uncached, most, len(got), len(want))
		}
		if judged == 0 {
			t.Errorf("%d tokens from the start on: judged by bounds without cutting anything", uncached)
		}
		edits = append(edits, fmt.Sprint(want))
	}
	if edits[0] == edits[1] {
		t.Error("the same edits a token either side of the edge: the test does not reach it")
	}
}
