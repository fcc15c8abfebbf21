package trim

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-trim's command line.
type Flags struct {
	cli.Common `embed:""`

	Trigger   cli.Percent         `name:"trigger" default:"95%" placeholder:"PCT" help:"Act above this utilization of the effective window." env:"CTX_TRIM_TRIGGER"`
	Target    cli.OptionalPercent `name:"target" placeholder:"PCT" help:"Drop messages down to this utilization (default 10 points below --trigger)." env:"CTX_TRIM_TARGET"`
	MaxTokens cli.Count           `name:"max-tokens" placeholder:"TOKENS" help:"Also act above this many tokens and drop down to it (150k, 150000); the window's trigger still applies; default off." env:"CTX_TRIM_MAX_TOKENS"`
	Strategy  string              `name:"strategy" enum:"last,first" default:"last" placeholder:"last|first" help:"Keep the newest messages (last) or also the opening exchange (first)." env:"CTX_TRIM_STRATEGY"`
	Repay     int                 `name:"repay" default:"1" placeholder:"N" help:"Where the request would stay over the window anyway, drop only when what it saves pays back the prompt cache it breaks within N requests; 0 turns the test off." env:"CTX_TRIM_REPAY"`
	DryRun    bool                `name:"dry-run" short:"n" help:"List the messages that would be dropped; do not change the document."`
}

const help = `The emergency tier: when a conversation is above --trigger (95%) of the effective
window, drops the oldest messages until it is down to --target (10 points below the
trigger); when it is above --max-tokens, down to that. Over both, the lower goal wins.

Kept always: the system prompt and system or developer messages, summary messages
(ctx-summarize's, Claude Code's compact summaries, Codex's compacted history), and the
newest user and assistant messages with everything after them. A tool call and its result
are dropped together, never one without the other. --strategy first also keeps the
opening exchange (the task as the user first put it) and drops from the middle.

Where dropping leaves an Anthropic conversation opening with an assistant message, a
user message saying the beginning is not included goes first (its tokens count). A valid
input stays valid: where two user messages meet, ctx-repair's rules merge them. Below the
trigger the output is the input, byte for byte.
Details in ctx-trim(1).`

// Tool returns ctx-trim's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-trim", "Drop the oldest turns until the conversation fits.", help, run)
}

// Examples are ctx-trim's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "the last tier of the pipeline, in front of a request", Command: "ctx-budget < request.json | ctx-snip | ctx-summarize | ctx-trim > out.json"},
		{Does: "what would go to make a session fit 100k tokens, keeping the task statement", Command: "ctx-trim -n --max-tokens 100k --strategy first SESSION.jsonl"},
	}
}

// OmitCommon: ctx-trim keeps nothing in a store: what it drops is gone from the output only.
func (*Flags) OmitCommon() []string { return []string{"store"} }

// Main runs ctx-trim and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// New is ctx-trim as a tier of an in-process pipeline: its command line (args, and the
// CTX_ variables getenv gives) read as Main reads it.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, _, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	if f.DryRun {
		return nil, cli.ErrNotATier
	}
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	return &Tier{O: o, M: m}, nil
}

func (f *Flags) options() (Options, error) {
	o := Defaults()
	var err error
	if o.Trigger, o.Target, err = cli.TriggerTarget(f.Trigger, f.Target); err != nil {
		return o, err
	}
	o.MaxTokens = f.MaxTokens.Int()
	o.Strategy = f.Strategy
	if f.Repay < 0 {
		return o, cli.Usagef("--repay must not be negative, got %d", f.Repay)
	}
	o.Repay = f.Repay
	return o, nil
}

func run(ctx *cli.Context, f *Flags) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	return ctx.Run(cli.Filter{
		Reports: f.DryRun, // a list, not documents: several files too
		Counted: true,
		Plan:    func(d *cli.Doc) (*cli.Plan, error) { return planDoc(d, f, o) },
	})
}

// planDoc trims one document: the tier's decision (decide, as in a pipeline), with the
// text its edits need read from a streamed document. The plan needs no text but the first
// lines of the Claude Code messages it re-chains.
func planDoc(d *cli.Doc, f *Flags, o Options) (*cli.Plan, error) {
	m, err := d.Measure()
	if err != nil {
		return nil, err
	}
	t := d.T
	dc := decide(t, m, o)
	if f.DryRun {
		st := dc.drops.Stats
		var list bytes.Buffer
		if err := listDrops(&list, d.Display(), t, &st, d.Context().StdoutTTY && f.Output == ""); err != nil {
			return nil, err
		}
		p := cli.PlanOf(d, dc.plan(t, false))
		p.Report = list.Bytes()
		p.Stats.Extra["dry_run"] = true
		return p, nil
	}
	if err := d.Excerpt(dc.excerpts(t)); err != nil {
		return nil, err
	}
	return cli.PlanOf(d, dc.plan(t, true)), nil
}

// listDrops adds the dry run's list of the messages to drop, with their line numbers.
func listDrops(list *bytes.Buffer, file string, t *transcript.Transcript, st *Stats, human bool) error {
	lines := map[int]int{}
	for _, r := range t.Records {
		lines[r.Span.Start] = r.Line
	}
	for i := range st.Dropped {
		if m := &t.Messages[st.Dropped[i].Message]; len(m.Lines) > 0 {
			st.Dropped[i].Line = lines[m.Lines[0].Start]
		}
	}
	return writeList(list, file, st, human)
}

type listed struct {
	File string `json:"file"`
	Dropped
}

func writeList(w *bytes.Buffer, file string, st *Stats, forPerson bool) error {
	if !forPerson {
		lines := make([]listed, len(st.Dropped))
		for i, d := range st.Dropped {
			lines[i] = listed{File: file, Dropped: d}
		}
		return cli.JSONLines(w, lines...)
	}
	if len(st.Dropped) == 0 {
		fmt.Fprintf(w, "%s: nothing to drop (%s)\n", human.Safe(file), st.Trigger)
		return nil
	}
	fmt.Fprintf(w, "%s: would drop %d messages, %d tokens (%s; goal %d tokens)\n", human.Safe(file), len(st.Dropped), st.TokensDropped, st.Trigger, st.Goal)
	if st.Opened {
		fmt.Fprintf(w, "and put an opening user message first (%d tokens): the first message kept is the assistant's\n", st.OpenerTokens)
	}
	if !st.Fits {
		fmt.Fprintf(w, "and still be above the goal: what must stay is more than %d tokens\n", st.Goal)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tLINE\tROLE\tTOKENS")
	for _, d := range st.Dropped {
		line := "-"
		if d.Line > 0 {
			line = fmt.Sprint(d.Line)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\n", d.Message, line, human.Safe(d.Role), d.Tokens)
	}
	return tw.Flush()
}
