package count

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-count's command line.
type Flags struct {
	cli.Common `embed:""`

	Pass     bool        `short:"p" help:"Copy the document to stdout unchanged and write the report to stderr, to sit mid-pipeline."`
	FailOver cli.Percent `name:"fail-over" placeholder:"PCT" help:"Exit 1 when utilization is above PCT (85% or 0.85); default off." env:"CTX_FAIL_OVER"`
	Quiet    bool        `name:"quiet" short:"q" help:"With --fail-over, print no report and no verdict: the exit status alone says whether a conversation is over."`
	Vs       string      `name:"vs" placeholder:"OTHER" help:"Compare with OTHER, another version of the conversation: tokens saved, messages changed, cache prefix kept."`
	JSON     bool        `name:"json" help:"Write the JSON report even when stdout is a terminal."`
	Picture  bool        `name:"picture" help:"Draw the window picture even when stdout is not a terminal (watch ctx-count FILE)."`
	Color    string      `name:"color" enum:"auto,always,never" default:"auto" placeholder:"auto|always|never" help:"Colour the picture: auto on a terminal unless NO_COLOR is set or TERM is dumb." env:"CTX_COLOR"`
	Savings  bool        `name:"savings" help:"Run each tier on the document: what it would save now, what it would take out of the prompt cache, and whether that pays back within 10 requests."`
	All      bool        `name:"all" help:"With a folder of sessions, count each of them (newest first), not only the newest."`
	Text     bool        `name:"text" help:"Count plain text, not a conversation: the tokens of the whole input (with --tokenizer, or the counter --model's documents get), a bare number."`

	Sessions    bool `name:"sessions" help:"List the recent agent sessions of the current directory (--agent, --all-projects), newest first: size, tokens, utilization."`
	AllProjects bool `name:"all-projects" help:"With --sessions, list every project's sessions."`
	Limit       int  `name:"limit" default:"20" placeholder:"N" help:"With --sessions, list at most N (0: all)."`

	Source string `name:"source" enum:"auto,log,proxy" default:"auto" placeholder:"auto|log|proxy" help:"With --latest behind ctx-proxy: auto counts what the proxy sent when it is the conversation's newest request, log the client's log, proxy what the proxy sent."`

	Follow        bool          `name:"follow" help:"Draw the report again each time the file (or the --latest session) grows, until interrupted."`
	FollowTimeout time.Duration `name:"follow-timeout" placeholder:"DURATION" help:"With --follow, stop after DURATION (30s, 5m); default never."`

	// shownAs is the name a report gives its file when that is not the file read: --follow
	// on a FIFO reads the spool its stream is copied to.
	shownAs string
}

const help = `Counts the tokens of a conversation document and shows where they go: by message, role,
block kind and tool, against the model's context window, and which tiers of the ctxkit
pipeline would act on it.

On a terminal it draws the window; piped, it writes one JSON report a line (one per file).
The report's fields are described in ctx-count(1).

A folder (~/.claude/projects/<project>/, ~/.codex/sessions/) means its newest session log
(*.jsonl, by modification time); --all counts each. Of several files, one that is missing
or not a document gets an error line and the others are still reported; the exit status
then says the run failed.

--fail-over -q prints nothing (with --pass, only the document), for a script that wants
only the exit status; an input it cannot read is still an error on stderr.

--text counts plain text instead (as ttok does): one number, the tokens of the whole input
with --tokenizer, or the counter --model's documents get (o200k by default).`

// Tool returns ctx-count's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-count", "Count a conversation's tokens and show where they go.", help, run)
}

// Examples are ctx-count's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "where the tokens of the Claude Code or Codex session running in this directory went", Command: "ctx-count --latest"},
		{Does: "the recent sessions of every project: size, tokens, utilization", Command: "ctx-count --sessions --all-projects"},
		{Does: "fail (exit 1) when a conversation is past 85% of a GPT-5 window, saying nothing", Command: "ctx-count --model gpt-5 --fail-over 85% -q history.json"},
	}
}

// OmitCommon: ctx-count only reads documents: -i is refused.
func (*Flags) OmitCommon() []string { return []string{"in-place"} }

// Main runs ctx-count and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.InPlace {
		return cli.Usagef("ctx-count does not change documents; --in-place does not apply")
	}
	if err := f.checkQuiet(); err != nil {
		return err
	}
	if f.Source != sourceAuto && !f.Latest {
		return cli.WithHint(cli.Usagef("--source picks what --latest reads; without --latest it picks nothing"), "add --latest")
	}
	if f.Sessions {
		return listSessions(ctx, f)
	}
	if f.Latest {
		ctx.ChooseLatest = chooseSent(ctx, f)
	}
	if f.Text {
		return runText(ctx, f)
	}
	if (f.Pass || f.Vs != "") && len(f.Files) > 1 {
		return cli.Usagef("--pass and --vs take one document, got %d", len(f.Files))
	}
	if (f.Pass || f.Vs != "") && f.All {
		return cli.Usagef("--pass and --vs take one document; --all counts several")
	}
	reports, over := 0, 0
	// What the calls were about, taken from each record as the document is read (the
	// report's counts keep no text): a new document starts again at record 0.
	var notes *Notes
	filter := cli.Filter{
		Record: func(seq int, rec *transcript.Transcript, c tokens.Counter) error {
			if seq == 0 || notes == nil {
				notes = &Notes{}
			}
			notes.Add(rec, c)
			return nil
		},
		// The report is the output; with --pass the document is, and the report goes to
		// stderr. --pass and --vs hold the document whole (passed on, compared).
		Reports: !f.Pass,
		Whole:   f.Pass || f.Vs != "" || f.Savings,
		// --savings runs every tier on the document in this process: no memory limit
		// from its size, which the tiers' copies would keep the collector at.
		HoldsMore: f.Savings,
		Counted:   true,
		Previews:  true,
		// The report reads the counts; --vs compares the messages of a document read whole.
		TallyOnly: !f.Savings,
		// A report of many files is not lost to one of them, and a folder is its sessions.
		KeepGoing:   true,
		Sessions:    true,
		AllSessions: f.All,
		TextHint:    "to count plain text, use --text",
		Plan: func(d *cli.Doc) (*cli.Plan, error) {
			r, err := report(d, notes, true)
			notes = nil
			if err != nil {
				return nil, err
			}
			if f.shownAs != "" {
				r.File = f.shownAs
			}
			if f.Savings {
				if err := addSavings(d, &r); err != nil {
					return nil, err
				}
			}
			if f.FailOver > 0 && r.Utilization > float64(f.FailOver) {
				over++
			}
			p := &cli.Plan{Stats: cli.Stats{Extra: map[string]any{"utilization": r.Utilization}}}
			var out bytes.Buffer
			switch {
			case f.Quiet: // no report: the exit status says it all
			case f.Vs != "":
				err = compare(d, f, r, &out)
				p.Report = out.Bytes()
			case f.Pass:
				human := (d.Context().StderrTTY || f.Picture) && !f.JSON
				color := f.colored(ctx, d.Context().StderrTTY)
				if err = write(&out, r, human, color, ctx.Columns, reports); err == nil {
					_, err = ctx.Stderr.Write(out.Bytes())
				}
			default:
				human := (ctx.StdoutTTY || f.Picture) && !f.JSON && f.Output == ""
				err = write(&out, r, human, f.colored(ctx, ctx.StdoutTTY), ctx.Columns, reports)
				p.Report = out.Bytes()
			}
			reports++
			return p, err
		},
		Done: func() error {
			if over > 0 && f.Quiet {
				return cli.CheckFailed(nil)
			}
			if over > 0 {
				return cli.CheckFailed(fmt.Errorf("%d of %d documents above %s utilization", over, reports, f.FailOver))
			}
			return nil
		},
	}
	if f.Follow {
		return follow(ctx, f, func() error {
			// Each drawing is a first report: no blank line before it, no verdict.
			reports, over = 0, 0
			filter.Done = nil
			return ctx.Run(filter)
		})
	}
	return ctx.Run(filter)
}

// checkQuiet refuses -q where it would silence nothing but a check (it needs --fail-over)
// or where what is asked for is a report to read, or a file to write.
func (f *Flags) checkQuiet() error {
	if !f.Quiet {
		return nil
	}
	if f.FailOver <= 0 {
		return cli.WithHint(cli.Usagef("-q/--quiet goes with --fail-over"), "ctx-count --fail-over 85% -q FILE...")
	}
	for _, no := range []struct {
		set  bool
		flag string
	}{{f.Output != "", "-o"}, {f.Vs != "", "--vs"}, {f.Savings, "--savings"}, {f.Follow, "--follow"}, {f.Sessions, "--sessions"}} {
		if no.set {
			return cli.Usagef("--fail-over -q writes no report; %s does not apply", no.flag)
		}
	}
	return nil
}

// report measures one document; with contexts, each subagent of a session too
// (SubagentContext), where the listing (--sessions) takes their recorded figures only.
func report(d *cli.Doc, notes *Notes, contexts bool) (Report, error) {
	counter, err := d.Counter()
	if err != nil {
		return Report{}, err
	}
	window, err := d.Window()
	if err != nil {
		return Report{}, err
	}
	tl, err := d.Tally()
	if err != nil {
		return Report{}, err
	}
	if notes == nil {
		notes = &Notes{}
	}
	if d.T.Subagent && notes.thread != 2 {
		// A subagent's lines read from the session's log (--sidechains): its figures are
		// those of the conversation read, not the session's the notes took.
		notes.session, notes.compactedAfter, notes.compactions = prompts(d.T.Usage), nil, 0
	}
	o := Options{File: d.Name, Counter: counter, Window: window, Notes: notes, Summaries: summaries(d.T)}
	if a := d.APICount(); a != nil {
		shown := *a
		shown.Scale = math.Round(a.Scale*1000) / 1000
		o.API = &shown
	}
	r := summarise(tl, o)
	var parent *measure.Tally
	if contexts {
		parent = tl
	}
	r.Session = sessionFigures(d.Context(), d.Name, d.T, notes, parent, &r)
	return r, nil
}

// write writes one report: a picture for a person (after a blank line when it is not the
// first), or a JSON line.
func write(w *bytes.Buffer, r Report, human, color bool, width, i int) error {
	if !human {
		return cli.JSONLines(w, r)
	}
	if i > 0 {
		fmt.Fprintln(w)
	}
	Render(w, &r, color, width)
	return nil
}

// colored says whether the picture is coloured: --color, else (auto) on a terminal that
// takes colour.
func (f *Flags) colored(ctx *cli.Context, terminal bool) bool {
	switch f.Color {
	case "always":
		return true
	case "never":
		return false
	}
	return terminal && ctx.Getenv("NO_COLOR") == "" && ctx.Getenv("TERM") != "dumb"
}

// compare writes the comparison of the document with --vs OTHER, read whole.
func compare(d *cli.Doc, f *Flags, r Report, w *bytes.Buffer) error {
	ctx := d.Context()
	b, err := ctx.ReadConversation(f.Vs)
	if err != nil {
		return err
	}
	counter, err := ctx.Counter(b.Format, b.Model)
	if err != nil {
		return err
	}
	window, err := ctx.Window(b.Model, b.Usage)
	if err != nil {
		return err
	}
	rb := Measure(b, Options{File: f.Vs, Counter: counter, Window: window})
	c := Compare(d.T, r, b, rb)
	if ctx.StdoutTTY && !f.JSON && f.Output == "" {
		RenderComparison(w, &c)
		return nil
	}
	return cli.JSONLines(w, c)
}
