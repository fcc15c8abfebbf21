package count

import "github.com/ctxkit/ctxkit/internal/tiers"

// tierReport says which tool of the pipeline, with its defaults, would act on the document as
// measured: every tier of the registry, in pipeline order.
func tierReport(r *Report) []Tier {
	m := tiers.Measure{Utilization: r.Utilization, Window: r.EffectiveWindow > 0,
		LargestBytes: r.Largest.Bytes, LargestChars: r.Largest.Chars}
	var out []Tier
	for _, t := range tiers.All() {
		acts, reason := t.Acts(m)
		out = append(out, Tier{Tool: t.Name, Acts: acts, Reason: reason})
	}
	return out
}
