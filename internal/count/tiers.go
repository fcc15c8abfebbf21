package count

import (
	"fmt"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/trim"
)

const utilizationMissing = "no window to measure against"

// tiers says which tool of the pipeline, with its defaults, would act on the document as
// measured.
func tiers(r *Report) []Tier {
	u := r.Utilization
	largest := r.Largest
	p := persist.Defaults()
	out := []Tier{{Tool: "ctx-persist", Acts: largest.Bytes > p.Threshold,
		Reason: fmt.Sprintf("largest tool result is %s bytes (offloads above %s)", human.Thousands(largest.Bytes), human.Thousands(p.Threshold))}}

	b := budget.Defaults()
	limit := b.Cap.N
	switch {
	case u > b.HighAt:
		limit = b.HighCap.N
	case u >= b.MidAt:
		limit = b.MidCap.N
	}
	out = append(out, Tier{Tool: "ctx-budget", Acts: largest.Chars > limit,
		Reason: fmt.Sprintf("largest tool result is %s characters; the cap at %.0f%% is %s", human.Thousands(largest.Chars), u*100, human.Thousands(limit))})

	for _, lt := range []struct {
		tool string
		at   float64
		what string
	}{
		{"ctx-snip", snip.Defaults().Trigger, "clears stale tool results"},
		{"ctx-summarize", summarize.Defaults().Trigger, "summarizes older turns"},
		{"ctx-trim", trim.Defaults().Trigger, "drops the oldest turns"},
	} {
		out = append(out, Tier{Tool: lt.tool, Acts: u > lt.at,
			Reason: fmt.Sprintf("%s above %.0f%%; now %.1f%%", lt.what, lt.at*100, u*100)})
	}
	if r.EffectiveWindow <= 0 {
		for i := range out[2:] {
			out[2+i].Reason = utilizationMissing
		}
	}
	return out
}
