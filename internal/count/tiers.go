package count

import "fmt"

// The default triggers of the pipeline's tiers (DESIGN §1). They are the documented
// defaults of each tool; ctx-count reports against them so a user can see what the plain
// pipeline would do.
const (
	persistThreshold   = 30_000 // bytes of one tool result
	budgetHardCap      = 50_000 // characters of one tool result, always
	budgetMidCap       = 30_000 // from budgetMidAt utilization
	budgetLowCap       = 15_000 // above budgetLowAt
	budgetMidAt        = 0.50
	budgetLowAt        = 0.70
	snipAt             = 0.60
	summarizeAt        = 0.85
	trimAt             = 0.95
	percent            = 100
	tierPersist        = "ctx-persist"
	tierBudget         = "ctx-budget"
	tierSnip           = "ctx-snip"
	tierSummarize      = "ctx-summarize"
	tierTrim           = "ctx-trim"
	utilizationMissing = "no window to measure against"
)

// TierDefaults are the triggers ctx-count reports against. Each is the default of the tier
// that owns it; the tiers import this package (for Total), so the numbers are repeated
// here, and a test in the root package checks they agree with budget.Defaults and
// snip.Defaults.
type TierDefaults struct {
	PersistBytes                          int
	BudgetCap, BudgetMidCap, BudgetLowCap int
	BudgetMidAt, BudgetLowAt              float64
	SnipAt, SummarizeAt, TrimAt           float64
}

// Defaults returns the triggers in force.
func Defaults() TierDefaults {
	return TierDefaults{
		PersistBytes: persistThreshold,
		BudgetCap:    budgetHardCap, BudgetMidCap: budgetMidCap, BudgetLowCap: budgetLowCap,
		BudgetMidAt: budgetMidAt, BudgetLowAt: budgetLowAt,
		SnipAt: snipAt, SummarizeAt: summarizeAt, TrimAt: trimAt,
	}
}

// tiers says which tool of the pipeline would act on the document as measured.
func tiers(r *Report) []Tier {
	u := r.Utilization
	var out []Tier
	largest := r.Largest
	out = append(out, Tier{Tool: tierPersist, Acts: largest.Bytes > persistThreshold,
		Reason: fmt.Sprintf("largest tool result is %s bytes (offloads above %s)", thousands(largest.Bytes), thousands(persistThreshold))})

	limit := budgetHardCap
	switch {
	case u > budgetLowAt:
		limit = budgetLowCap
	case u >= budgetMidAt:
		limit = budgetMidCap
	}
	out = append(out, Tier{Tool: tierBudget, Acts: largest.Chars > limit,
		Reason: fmt.Sprintf("largest tool result is %s characters; the cap at %.0f%% is %s", thousands(largest.Chars), u*percent, thousands(limit))})

	for _, lt := range []struct {
		tool string
		at   float64
		what string
	}{
		{tierSnip, snipAt, "clears stale tool results"},
		{tierSummarize, summarizeAt, "summarizes older turns"},
		{tierTrim, trimAt, "drops the oldest turns"},
	} {
		out = append(out, Tier{Tool: lt.tool, Acts: u > lt.at,
			Reason: fmt.Sprintf("%s above %.0f%%; now %.1f%%", lt.what, lt.at*percent, u*percent)})
	}
	if r.EffectiveWindow <= 0 {
		for i := range out[2:] {
			out[2+i].Reason = utilizationMissing
		}
	}
	return out
}

// thousands writes n with thin grouping commas: 1234567 -> 1,234,567.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
