// Package tiers is ctxkit's one list of the saving tiers, in the order the default
// pipeline runs them: each tier's name, its command (Main, and Tool for a runner that
// keeps the parser), its Defaults (what its flags give when none is passed), and what
// ctx-count says of whether it would act. multicall, ctx-replay's default pipeline and
// in-process tools, and ctx-count's tier report and --savings all read this list, so a
// tier added here is known to every one of them (TestEveryTierListed).
//
// The tier packages do not import this one; it imports them.
package tiers

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// Measure is what ctx-count knows of a document when it says which tiers would act.
type Measure struct {
	// Utilization is the share of the effective window the document takes.
	Utilization float64
	// Window is false when there is no window to measure against.
	Window bool
	// LargestBytes and LargestChars are the size of the largest tool result.
	LargestBytes, LargestChars int
}

// NoWindow is the reason a tier that acts on utilization gives when there is no window.
const NoWindow = "no window to measure against"

// Tier is one saving tier.
type Tier struct {
	// Name is the command's name, ctx-persist...
	Name string
	// Mark is the letter ctx-replay's chart marks the tier's firings with.
	Mark byte
	// Main runs the tier's command line.
	Main cli.MainFunc
	// Tool describes the command, for a runner that parses many command lines.
	Tool func() *cli.Tool
	// New makes the tier a value of an in-process pipeline from its command line (the
	// arguments and the CTX_ variables getenv gives); cli.ErrNotATier for a command line
	// that is not a tier's run (a dry run). nil: the tier runs as its command.
	New func(args []string, getenv func(string) string) (pipeline.Tier, error)
	// Defaults returns the tier's defaults (persist.Defaults()...), the options its flags
	// give when none is passed.
	Defaults func() any
	// Acts says whether the tier, with its defaults, would act on a document so measured,
	// and why.
	Acts func(m Measure) (acts bool, reason string)
}

// all are the tiers, in the order of the default pipeline.
var all = []Tier{
	{Name: "ctx-persist", Mark: 'p', Main: persist.Main, Tool: persist.Tool, New: persist.New, Defaults: func() any { return persist.Defaults() },
		Acts: func(m Measure) (bool, string) {
			p := persist.Defaults()
			return m.LargestBytes > p.Threshold, fmt.Sprintf("largest tool result is %s bytes (offloads above %s)",
				human.Thousands(m.LargestBytes), human.Thousands(p.Threshold))
		}},
	{Name: "ctx-budget", Mark: 'b', Main: budget.Main, Tool: budget.Tool, New: budget.New, Defaults: func() any { return budget.Defaults() },
		Acts: func(m Measure) (bool, string) {
			b := budget.Defaults()
			limit := b.Cap.N
			switch u := m.Utilization; {
			case u > b.HighAt:
				limit = b.HighCap.N
			case u >= b.MidAt:
				limit = b.MidCap.N
			}
			return m.LargestChars > limit, fmt.Sprintf("largest tool result is %s characters; the cap at %.0f%% is %s",
				human.Thousands(m.LargestChars), m.Utilization*100, human.Thousands(limit))
		}},
	{Name: "ctx-snip", Mark: 's', Main: snip.Main, Tool: snip.Tool, New: snip.New, Defaults: func() any { return snip.Defaults() },
		Acts: above(func() float64 { return snip.Defaults().Trigger }, "clears stale tool results")},
	{Name: "ctx-summarize", Mark: 'S', Main: summarize.Main, Tool: summarize.Tool, New: summarize.New, Defaults: func() any { return summarize.Defaults() },
		Acts: above(func() float64 { return summarize.Defaults().Trigger }, "summarizes older turns")},
	{Name: "ctx-trim", Mark: 't', Main: trim.Main, Tool: trim.Tool, New: trim.New, Defaults: func() any { return trim.Defaults() },
		Acts: above(func() float64 { return trim.Defaults().Trigger }, "drops the oldest turns")},
}

// above is Acts for a tier that acts above a utilization trigger.
func above(trigger func() float64, what string) func(Measure) (bool, string) {
	return func(m Measure) (bool, string) {
		at := trigger()
		if !m.Window {
			return m.Utilization > at, NoWindow
		}
		return m.Utilization > at, fmt.Sprintf("%s above %.0f%%; now %.1f%%", what, at*100, m.Utilization*100)
	}
}

// All returns the tiers in the order of the default pipeline (a copy).
func All() []Tier { return append([]Tier(nil), all...) }

// Names returns the tiers' names in pipeline order.
func Names() []string {
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name
	}
	return names
}

// Pipe is the default pipeline as a shell pipeline: every tier, in order.
func Pipe() string { return strings.Join(Names(), " | ") }

// Lookup returns the tier named name.
func Lookup(name string) (Tier, bool) {
	for _, t := range all {
		if t.Name == name {
			return t, true
		}
	}
	return Tier{}, false
}
