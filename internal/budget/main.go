package budget

import (
	"io"
	"math"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-budget's command line.
type Flags struct {
	cli.Common `embed:""`

	Cap          Limit       `name:"cap" default:"50000" placeholder:"LIMIT" help:"Hard cap on every tool result, at any utilization; 0 turns it off." env:"CTX_BUDGET_CAP"`
	MidAt        cli.Percent `name:"mid-at" default:"50%" placeholder:"PCT" help:"Utilization from which results are held to --mid-cap as well." env:"CTX_BUDGET_MID_AT"`
	MidCap       Limit       `name:"mid-cap" default:"30000" placeholder:"LIMIT" help:"Cap on tool results from --mid-at utilization; 0 turns it off." env:"CTX_BUDGET_MID_CAP"`
	HighAt       cli.Percent `name:"high-at" default:"70%" placeholder:"PCT" help:"Utilization above which results are held to --high-cap as well." env:"CTX_BUDGET_HIGH_AT"`
	HighCap      Limit       `name:"high-cap" default:"15000" placeholder:"LIMIT" help:"Cap on tool results above --high-at utilization; 0 turns it off." env:"CTX_BUDGET_HIGH_CAP"`
	ErrorFactor  float64     `name:"error-factor" default:"2" placeholder:"X" help:"Multiply the caps by X for results that report an error (at least 1)." env:"CTX_BUDGET_ERROR_FACTOR"`
	KeepRecent   int         `name:"keep-recent" default:"1" placeholder:"N" help:"Never cut the newest N tool results." env:"CTX_BUDGET_KEEP_RECENT"`
	ExcludeTools []string    `name:"exclude-tools" sep:"," placeholder:"TOOL" help:"Never change results of these tools (comma list, repeatable); default none." env:"CTX_BUDGET_EXCLUDE_TOOLS"`
	Repay        int         `name:"repay" default:"10" placeholder:"N" help:"Cut results older than this request to the utilization's caps only when what that saves pays back the prompt cache it breaks within N requests; 0 turns the test off." env:"CTX_BUDGET_REPAY"`
	NoNormalize  bool        `name:"no-normalize" help:"Leave results under the caps as they are: no removing of terminal escapes, redraws, trailing white space, extra blank lines and repeated lines." env:"CTX_BUDGET_NO_NORMALIZE"`
}

const help = `Normalizes every tool result (terminal escapes, progress redraws, trailing white space,
extra blank lines and repeated lines go; file reads are left as they are) and caps its size.
Over a cap, a result keeps the lines that say something (its first lines, errors, file:line
diagnostics, failing tests, stack frames, its last lines), or else its head and tail, with
markers that say what was cut and how to get it back (re-run the call). A hard cap (--cap,
50,000 characters) is always on, on the newest result too; from --mid-at (50%) of the
effective window the other results are held to --mid-cap (30,000), above --high-at (70%)
to --high-cap (15,000). Utilization is measured before any edit. Results older than this
request are cut to those caps only where the saving repays the prompt cache it breaks
within --repay (10) requests.

A LIMIT is characters (50000, 30KB = 30,000 characters) or tokens (8k tokens, 8000tok),
measured with the run's token counter. Below every cap the output is the input, byte for
byte. Details in ctx-budget(1).`

// Tool returns ctx-budget's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-budget", "Cap the size of tool results, tighter as the context window fills.", help, run)
}

// Examples are ctx-budget's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "cap tool results in front of a request", Command: "ctx-budget < request.json | ctx-snip > out.json"},
		{Does: "hold every result to 8,000 tokens, never touching file reads", Command: "ctx-budget --cap '8k tokens' --exclude-tools Read convo.json > capped.json"},
		{Does: "cap a session in place and say what was saved", Command: "ctx-budget -i --stats SESSION.jsonl"},
	}
}

// OmitCommon: ctx-budget keeps nothing in a store: what it cuts is got back by re-running the call.
func (*Flags) OmitCommon() []string { return []string{"store"} }

// Main runs ctx-budget and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// options turns the flags into the tier's options.
func (f *Flags) options() (Options, error) {
	if math.IsNaN(f.ErrorFactor) || f.ErrorFactor < 1 {
		return Options{}, cli.Usagef("--error-factor must be at least 1, got %v", f.ErrorFactor)
	}
	if f.KeepRecent < 0 {
		return Options{}, cli.Usagef("--keep-recent must not be negative, got %d", f.KeepRecent)
	}
	if f.Repay < 0 {
		return Options{}, cli.Usagef("--repay must not be negative, got %d", f.Repay)
	}
	var exclude []string
	for _, n := range f.ExcludeTools {
		if n != "" {
			exclude = append(exclude, n)
		}
	}
	return Options{
		Cap:          f.Cap,
		MidAt:        f.MidAt.Fraction(),
		MidCap:       f.MidCap,
		HighAt:       f.HighAt.Fraction(),
		HighCap:      f.HighCap,
		ErrorFactor:  f.ErrorFactor,
		KeepRecent:   f.KeepRecent,
		ExcludeTools: exclude,
		Normalize:    !f.NoNormalize,
		Repay:        f.Repay,
	}, nil
}

// New is ctx-budget as a tier of an in-process pipeline: its command line (args, and the
// CTX_ variables getenv gives) read as Main reads it.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, _, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	return &Tier{O: o, M: m}, nil
}

func run(ctx *cli.Context, f *Flags) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	return ctx.Run(cli.Filter{Counted: true, Plan: func(d *cli.Doc) (*cli.Plan, error) { return planDoc(d, o) }})
}

// planDoc caps the results of one document. Only the results that may be over a limit
// are read (in the second pass of a streamed document), and cut there, on several cores
// at once; their figures are summed in document order (as ctx-persist does).
func planDoc(d *cli.Doc, o Options) (*cli.Plan, error) {
	c, err := newCapping(d.T, o, d, d.Context().StatsOn(), d.Visit)
	if err != nil || c == nil {
		return &cli.Plan{}, err
	}
	plan := &cli.Plan{Regions: c.regions(), EditConcurrently: true}
	plan.Edit = func(k int, text string, base int) ([]transcript.Edit, error) { return c.edit(k, text, base), nil }
	plan.Commit = func(k int) error {
		c.commit(k)
		return nil
	}
	plan.Written = func(s *cli.Stats) error {
		*s, plan.TokensDelta = c.stats()
		return nil
	}
	return plan, nil
}
