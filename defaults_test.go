package ctxkit_test

import (
	"math"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// parseDefaults fills a tool's flags with their defaults, as a run with no flags does.
func parseDefaults(t *testing.T, tool *cli.Tool) {
	t.Helper()
	k, err := kong.New(tool.Grammar, kong.Vars(tool.Vars))
	if err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
	if _, err := k.Parse(nil); err != nil {
		t.Fatalf("%s: %v", tool.Name, err)
	}
}

// TestFlagDefaultsAreTheTiers: the defaults a tool's flags give are its tier's Defaults(),
// which ctx-count reports against (the tiers ctx-count says would act are the tools run
// without flags). It walks the tiers' registry: a tier with no check here fails.
func TestFlagDefaultsAreTheTiers(t *testing.T) {
	checks := map[string]func(t *testing.T, flags, defaults any){
		"ctx-budget": func(t *testing.T, flags, defaults any) {
			bf, b := flags.(*budget.Flags), defaults.(budget.Options)
			if bf.Cap != b.Cap || bf.MidCap != b.MidCap || bf.HighCap != b.HighCap || bf.MidAt.Fraction() != b.MidAt ||
				bf.HighAt.Fraction() != b.HighAt || bf.ErrorFactor != b.ErrorFactor || bf.KeepRecent != b.KeepRecent || bf.Repay != b.Repay {
				t.Errorf("ctx-budget flags %+v, budget.Defaults %+v", *bf, b)
			}
		},
		"ctx-snip": func(t *testing.T, flags, defaults any) {
			sf, s := flags.(*snip.Flags), defaults.(snip.Options)
			if sf.Trigger.Fraction() != s.Trigger || sf.Keep != s.Keep || sf.MaxSearches != s.MaxSearches || sf.Idle != s.Idle ||
				sf.ClearAtLeast.Share != s.MinShare || sf.ClearAtLeast.Tokens != s.MinSaving || sf.Repay != s.Repay {
				t.Errorf("ctx-snip flags %+v, snip.Defaults %+v", *sf, s)
			}
		},
		"ctx-trim": func(t *testing.T, flags, defaults any) {
			if tf, tr := flags.(*trim.Flags), defaults.(trim.Options); tf.Trigger.Fraction() != tr.Trigger || tf.Strategy != string(tr.Strategy) || tf.Repay != tr.Repay {
				t.Errorf("ctx-trim flags %+v, trim.Defaults %+v", *tf, tr)
			}
		},
		"ctx-summarize": func(t *testing.T, flags, defaults any) {
			mf, m := flags.(*summarize.Flags), defaults.(summarize.Options)
			if at, to, _ := cli.TriggerTarget(mf.Trigger, mf.Target); at != m.Trigger || math.Abs(to-m.Target) > 1e-9 || mf.Repay != m.Repay {
				t.Errorf("ctx-summarize flags %+v, summarize.Defaults %+v", *mf, m)
			}
		},
		"ctx-persist": func(t *testing.T, flags, defaults any) {
			if pf, p := flags.(*persist.Flags), defaults.(persist.Options); pf.Threshold.Int() != p.Threshold || pf.Preview.Int() != p.Preview || pf.Store != p.Store {
				t.Errorf("ctx-persist flags %+v, persist.Defaults %+v", *pf, p)
			}
		},
	}
	for _, tier := range tiers.All() {
		check, ok := checks[tier.Name]
		if !ok {
			t.Errorf("%s: no check that its flags' defaults are its Defaults()", tier.Name)
			continue
		}
		tool := tier.Tool()
		parseDefaults(t, tool)
		check(t, tool.Grammar, tier.Defaults())
	}
}
