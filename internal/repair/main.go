package repair

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-repair's command line.
type Flags struct {
	cli.Common `embed:""`

	Check bool `name:"check" short:"c" help:"Change nothing: list each problem on stdout and exit 1 if there is any."`
	Quiet bool `name:"quiet" short:"q" help:"With --check, print nothing: the exit status alone says whether there is a problem."`
}

const help = `Makes a conversation document one the provider's API accepts: every tool call answered,
no result without its call, call ids unique, and for Anthropic Messages roles alternating,
no empty messages or text blocks, a user message first. A missing result is filled with an
error result saying the call was interrupted; a result without its call is dropped; a
misplaced result is moved next to its call.

Messages with nothing to fix are left byte for byte as they were; a document with nothing
to fix is written out unchanged. Ids that a repair makes up are derived from the document,
so repairing twice gives the same bytes.

--check changes nothing: the problems are its output. It lists each (file, message index,
rule, ids) on stdout or -o, as text on a terminal and as JSON lines otherwise, says how
many it found on stderr, and exits 1 when there is any, 0 when there is none. It takes
several files. With -q it prints nothing, for a script that wants only the exit status;
an input it cannot read is still an error on stderr (exit 3 or 4). Rules and their names
are in ctx-repair(1).`

// Tool returns ctx-repair's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-repair", "Make a conversation one the API accepts: pair tool calls and results, fix roles.", help, run)
}

// Examples are ctx-repair's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "will the API accept this request?", Command: "ctx-repair --check request.json"},
		{Does: "after the lossy tiers, make sure nothing is left unpaired", Command: "ctx-budget < convo.json | ctx-snip | ctx-trim | ctx-repair > out.json"},
		{Does: "fix saved trajectories in place", Command: "ctx-repair -i --stats trajectories/*.traj"},
	}
}

// OmitCommon: ctx-repair keeps nothing in a store.
func (*Flags) OmitCommon() []string { return []string{"store"} }

// Main runs ctx-repair and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	switch {
	case f.Quiet && !f.Check:
		return cli.WithHint(cli.Usagef("-q/--quiet goes with --check"), "ctx-repair --check -q FILE...")
	case f.Quiet && f.Output != "":
		return cli.Usagef("--check -q writes nothing; -o does not apply")
	}
	found := 0
	return ctx.Run(cli.Filter{
		Reports: f.Check, // problems on stdout, not documents: several files too
		Plan: func(d *cli.Doc) (*cli.Plan, error) {
			p, n, err := planDoc(d, f)
			found += n
			return p, err
		},
		Done: func() error { return verdict(f, found) },
	})
}

// verdict is the run's error once every document is checked: with --check, a failed
// check when any problem was found, which -q leaves unsaid.
func verdict(f *Flags, found int) error {
	if f.Check && found > 0 && f.Quiet {
		return cli.CheckFailed(nil)
	}
	if f.Check && found > 0 {
		what := "problems"
		if found == 1 {
			what = "problem"
		}
		return cli.CheckFailed(fmt.Errorf("%d %s found", found, what))
	}
	return nil
}

// reported is one JSON line of --check.
type reported struct {
	File string `json:"file"`
	Problem
}

// planDoc checks or repairs one document and returns how many problems it has. The rules
// of Claude Code and Codex look only at the structure of the conversation (roles, blocks,
// tool ids), which the first pass over a streamed transcript keeps, so a check reads the
// document once; a document that needs fixing is read again whole, because the fixes
// build new records from the text of the old ones.
func planDoc(d *cli.Doc, f *Flags) (*cli.Plan, int, error) {
	problems := Check(d.T)
	p := &cli.Plan{}
	if f.Check && !f.Quiet {
		report, err := problemsReport(d.Context(), d.Display(), problems)
		if err != nil {
			return nil, 0, err
		}
		p.Report = report
	} else if len(problems) > 0 {
		if err := d.Whole(); err != nil {
			return nil, 0, err
		}
		edits, fixed, err := Plan(d.T)
		if err != nil {
			return nil, 0, cli.RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
		}
		problems = fixed
		p.Edits = edits
		if len(edits) > 0 {
			p.CountOutput = true
			p.Check = func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error) {
				t, err := verify(out, in.Format, d.Name)
				return out, t, err
			}
		}
	}
	rules := map[string]int{}
	for r, n := range Counts(problems) {
		rules[string(r)] = n
	}
	extra := map[string]any{"problems": len(problems), "rules": rules}
	if f.Check {
		extra["check"] = true
	} else {
		extra["fixed"] = len(problems)
	}
	p.Stats = cli.Stats{Items: len(problems), Extra: extra}
	return p, len(problems), nil
}

// verify re-reads a repaired document: it must parse as the same format and pass Check.
// A failure here is a bug in repair, reported rather than written out.
func verify(out []byte, format transcript.Format, name string) (*transcript.Transcript, error) {
	t, err := transcript.Parse(out, transcript.Options{Format: format, Name: name})
	if err != nil {
		return nil, fmt.Errorf("internal error: the repaired document does not parse: %w", err)
	}
	if left := Check(t); len(left) > 0 {
		return nil, fmt.Errorf("internal error: the repaired document still breaks %d rules (first: %s)", len(left), left[0])
	}
	return t, nil
}

// problemsReport is --check's output for one document: its problems, a line each, as text
// for a person when stdout is a terminal (and no -o), else as JSON lines for a program
// (ctx-repair --check | jq). They are the output of the check, not diagnostics: the count
// of them goes to stderr as the run's error line.
func problemsReport(ctx *cli.Context, file string, problems []Problem) ([]byte, error) {
	var buf bytes.Buffer
	if ctx.StdoutTTY && ctx.Common.Output == "" {
		// (their ids and names from the document, escaped as the file's name)
		for _, p := range problems {
			fmt.Fprintf(&buf, "%s: %s\n", human.Safe(file), human.Safe(p.String()))
		}
		return buf.Bytes(), nil
	}
	lines := make([]reported, len(problems))
	for i, p := range problems {
		lines[i] = reported{File: file, Problem: p}
	}
	if err := cli.JSONLines(&buf, lines...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
