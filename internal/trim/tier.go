package trim

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Tier is ctx-trim as a value of an in-process pipeline (New reads its command line into
// one): Plan decides from the shared document what ctx-trim's command would.
type Tier struct {
	O Options
	M pipeline.Measuring
}

// Name is the tier's command.
func (*Tier) Name() string { return "ctx-trim" }

// Measuring is how the tier measures a document.
func (t *Tier) Measuring() pipeline.Measuring { return t.M }

// Plan trims d.
func (t *Tier) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	ms, err := d.Measure(t.M)
	if err != nil {
		return nil, err
	}
	dc := decide(d.T, ms, t.O)
	return dc.plan(d.T, true), nil
}

// decision is what the tier decided for one document, before its edits are made (a
// streamed document's command reads the text they need in between: excerpts).
type decision struct {
	o     Options
	drops Drops
	after int // the document's tokens after the drops
}

// decide works out the drops from the document's measures.
func decide(t *transcript.Transcript, m pipeline.Measures, o Options) decision {
	o.Counter, o.Effective, o.Tokens, o.PerMessage, o.Removed = m.Counter, m.Window.Effective, m.Counts.Total, m.Counts.PerMessage, m.Counts.Removed()
	o.Price = tokens.PriceOf(cmp.Or(m.Window.Model, t.Model), measure.ProviderOf(t.Format))
	drops := Choose(t, o)
	st := drops.Stats
	return decision{o: o, drops: drops, after: o.Tokens - st.TokensDropped + st.OpenerTokens + st.NoteTokens}
}

// excerpts are the spans of t whose text the edits need: the first lines of the Claude
// Code messages they re-chain, and the line the note goes before.
func (dc *decision) excerpts(t *transcript.Transcript) []transcript.Span {
	st := &dc.drops.Stats
	if len(st.Dropped) == 0 {
		return nil
	}
	var lines []transcript.Span
	for _, rc := range t.RechainTargets(dc.drops.Drop, "") {
		lines = append(lines, t.Messages[rc.Message].Lines[0])
	}
	if st.Noted {
		lines = append(lines, dc.drops.NoteLine(t))
	}
	return lines
}

// plan is the decision as edits (none for a dry run: edits false), stats and warnings.
// The stats' "repaired" count is filled in by the plan's Check, when it runs.
func (dc *decision) plan(t *transcript.Transcript, edits bool) *pipeline.Plan {
	st, o := dc.drops.Stats, dc.o
	p := &pipeline.Plan{TokensDelta: dc.after - o.Tokens}
	rules := map[string]int{}
	if len(st.Dropped) > 0 && edits {
		p.Edits = dc.drops.Edits(t)
		// Dropping whole units never parts a call from its result, but where two user
		// messages meet the Messages API's rules want them merged.
		if repair.WouldBreak(t, dc.drops.Drop, st.Opened) {
			p.Check = func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error) {
				fixed, problems, err := repair.KeepValid(in, out)
				for r, n := range repair.Counts(problems) {
					rules[string(r)] += n
				}
				return fixed, nil, err
			}
		}
	}
	if st.Opened {
		rules[string(repair.FirstNotUser)]++
	}
	switch {
	case st.HeldBack && st.Least > o.Effective:
		_, why, _ := strings.Cut(st.Trigger, ", but ")
		p.Warnings = append(p.Warnings, "nothing dropped: "+why)
	case st.HeldBack:
		p.Warnings = append(p.Warnings, fmt.Sprintf("cannot get down to %d tokens (dropping all it may would leave %d), and the document fits the window: nothing dropped", st.Goal, st.Least))
	case st.Acts && !st.Fits:
		p.Warnings = append(p.Warnings, fmt.Sprintf("cannot get down to %d tokens: what must be kept (system prompt, pinned context, summaries, the newest exchange) is %d tokens", st.Goal, dc.after))
	}
	extra := map[string]any{"fits": st.Fits, "goal": st.Goal, "messages_kept": st.Kept, "repaired": rules, "strategy": o.Strategy}
	if st.Repay != nil {
		extra["repay"] = *st.Repay
	}
	p.Stats = pipeline.Stats{Items: len(st.Dropped), Trigger: st.Trigger, Extra: extra}
	return p
}
