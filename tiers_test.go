package ctxkit_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// TestTierDefaultsAgree keeps ctx-count's "which tiers would act" in step with the tiers'
// own defaults.
func TestTierDefaultsAgree(t *testing.T) {
	c, b, s := count.Defaults(), budget.Defaults(), snip.Defaults()
	if c.BudgetCap != b.Cap.N || b.Cap.Tokens || c.BudgetMidCap != b.MidCap.N || c.BudgetLowCap != b.HighCap.N {
		t.Errorf("budget caps: count %+v, budget %+v", c, b)
	}
	if c.BudgetMidAt != b.MidAt || c.BudgetLowAt != b.HighAt {
		t.Errorf("budget thresholds: count %v/%v, budget %v/%v", c.BudgetMidAt, c.BudgetLowAt, b.MidAt, b.HighAt)
	}
	if c.SnipAt != s.Trigger {
		t.Errorf("snip trigger: count %v, snip %v", c.SnipAt, s.Trigger)
	}
	if sm := summarize.Defaults(); c.SummarizeAt != sm.Trigger {
		t.Errorf("summarize trigger: count %v, summarize %v", c.SummarizeAt, sm.Trigger)
	}
	if tr := trim.Defaults(); c.TrimAt != tr.Trigger {
		t.Errorf("trim trigger: count %v, trim %v", c.TrimAt, tr.Trigger)
	}
}
