package budget

import (
	"cmp"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Tier is ctx-budget as a value of an in-process pipeline (New reads its command line
// into one): Plan caps what ctx-budget's command would.
type Tier struct {
	O Options
	M pipeline.Measuring
}

// Name is the tier's command.
func (*Tier) Name() string { return "ctx-budget" }

// Measuring is how the tier measures a document.
func (t *Tier) Measuring() pipeline.Measuring { return t.M }

// Plan caps d's results.
func (t *Tier) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	c, err := newCapping(d.T, t.O, d.Under(t.M), true, d.Visit)
	if err != nil || c == nil {
		return &pipeline.Plan{}, err
	}
	var edits []transcript.Edit
	for k, span := range c.regions() {
		edits = append(edits, c.edit(k, d.T.Slice(span), span.Start)...)
		c.commit(k)
	}
	st, delta := c.stats()
	return &pipeline.Plan{Edits: edits, TokensDelta: delta, Stats: st}, nil
}

// capping is the capping of one document's results, region by region (a result that may
// be over a limit each): edit decides a region's cut (on any goroutine), commit adds its
// figures (in document order), stats sums them up.
type capping struct {
	t        *transcript.Transcript
	p        *planner
	st       Stats
	u        float64
	pre      map[int]precut
	which    []int
	cutStats []Stats
}

// newCapping measures the document as the tier needs (not at all when no result can be
// over a limit and nothing is normalized, unless stats are wanted: then nil) and cuts the
// old results first, to judge whether that repays the cache it breaks (visit reads their
// text).
func newCapping(t *transcript.Transcript, o Options, m pipeline.Measured, stats bool, visit func([]transcript.Span, func(string, int) error) error) (*capping, error) {
	var err error
	if o.Counter, err = m.Counter(); err != nil {
		return nil, err
	}
	mayCut := MayCut(t, o)
	if !stats && !mayCut && !o.Normalize {
		// Nothing can be over any limit: no need to read or measure the document.
		return nil, nil
	}
	var u float64
	var bounds [][]int
	if mayCut || stats {
		// (Below every cap the utilization changes nothing: it is measured only when a
		// result may be over one, or for --stats.)
		if u, _, _, err = m.Utilization(); err != nil {
			return nil, err
		}
	}
	o.Utilization = u
	if mayCut && o.Repay > 0 {
		// (what judging the old results' cuts needs: the model's prices, and each
		// message's tokens, already counted for the utilization)
		w, err := m.Window()
		if err != nil {
			return nil, err
		}
		o.Price = tokens.PriceOf(cmp.Or(w.Model, t.Model), measure.ProviderOf(t.Format))
		n, err := m.Counts()
		if err != nil {
			return nil, err
		}
		o.PerMessage = n.PerMessage
		if !stats && len(n.Blocks) == len(t.Messages) {
			// (no figures wanted: the old results are judged by bounds, cut only where
			// that decides: judgeBounded)
			bounds = n.Blocks
		}
	}
	p, st := newPlanner(t, o)
	p.bounds = bounds
	c := &capping{t: t, p: p, st: st, u: u}
	// The old results over the utilization's caps are cut first, to judge whether that
	// repays the cache it breaks; the cuts that stand are written as they are.
	c.pre, err = p.judgeOld(&c.st, func(i int, s *Stats) ([]transcript.Edit, error) {
		var edits []transcript.Edit
		err := visit([]transcript.Span{t.Block(p.results[i]).Span}, func(text string, base int) error {
			edits = p.cut(&transcript.Transcript{Format: t.Format, Doc: text, Base: base}, i, s)
			return nil
		})
		return edits, err
	})
	if err != nil {
		return nil, err
	}
	p.noDelta = !stats // (the judgement, which needs it, is made)
	for i := range p.results {
		if p.mayCut(i) {
			c.which = append(c.which, i)
		}
	}
	c.cutStats = make([]Stats, len(c.which))
	return c, nil
}

// regions are the spans of the results that may be cut, in document order.
func (c *capping) regions() []transcript.Span {
	spans := make([]transcript.Span, len(c.which))
	for k, i := range c.which {
		spans[k] = c.t.Block(c.p.results[i]).Span
	}
	return spans
}

// edit cuts region k: each cut is decided from its result alone, into figures of its own.
func (c *capping) edit(k int, text string, base int) []transcript.Edit {
	if pre, ok := c.pre[c.which[k]]; ok {
		c.cutStats[k] = pre.st
		return pre.edits
	}
	return c.p.cut(&transcript.Transcript{Format: c.t.Format, Doc: text, Base: base}, c.which[k], &c.cutStats[k])
}

func (c *capping) commit(k int) { c.st.addCut(c.cutStats[k]) }

// stats are the run's stats and the change in tokens.
func (c *capping) stats() (pipeline.Stats, int) {
	st := &c.st
	// Items are the results changed: cut, or only normalized (collapsing repeated lines
	// can save thousands of tokens with no cut, and a pipeline's reader, as ctx-replay's
	// and ctx-proxy's, takes items > 0 as the tier having fired).
	s := pipeline.Stats{
		Items: st.Changed, Trigger: st.Trigger,
		Extra: map[string]any{
			"cut":             st.Cut,
			"utilization":     c.u,
			"limits":          st.Limits,
			"results":         st.Results,
			"recut":           st.Recut,
			"skipped":         st.Skipped,
			"errors":          st.Errors,
			"chars_removed":   st.CharsRemoved,
			"normalized":      st.Normalized,
			"normalize_saved": st.NormalizedTokens,
		},
	}
	if st.Repay != nil {
		s.Extra["repay"] = *st.Repay
		if st.Held > 0 {
			s.Extra["held_to_hard_cap"] = st.Held
		}
	}
	return s, st.TokensDelta
}
