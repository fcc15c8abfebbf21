package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-repair's command line.
type Flags struct {
	cli.Common `embed:""`

	Check bool `name:"check" short:"c" help:"Change nothing: list each problem on stderr and exit 1 if there is any."`
}

const help = `Makes a conversation document one the provider's API accepts: every tool call answered,
no result without its call, call ids unique, and for Anthropic Messages roles alternating,
no empty messages or text blocks, a user message first. A missing result is filled with an
error result saying the call was interrupted; a result without its call is dropped; a
misplaced result is moved next to its call.

Messages with nothing to fix are left byte for byte as they were; a document with nothing
to fix is written out unchanged. Ids that a repair makes up are derived from the document,
so repairing twice gives the same bytes.

--check changes nothing: it lists each problem (message index, rule, ids) on stderr, as
text on a terminal and as JSON lines otherwise, and exits 1 when there is any, 0 when
there is none. It takes several files. Rules and their names are in ctx-repair(1).`

// Tool returns ctx-repair's description for the runner.
func Tool() *cli.Tool {
	f := &Flags{}
	return &cli.Tool{
		Name:    "ctx-repair",
		Summary: "Make a conversation one the API accepts: pair tool calls and results, fix roles.",
		Help:    help,
		Grammar: f,
		Common:  func() *cli.Common { return &f.Common },
		Run:     func(ctx *cli.Context) error { return run(ctx, f) },
	}
}

// Main runs ctx-repair and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	ins, err := ctx.Documents(f.Check)
	if err != nil {
		return err
	}
	found := 0
	for _, in := range ins {
		n, err := runOne(ctx, f, in)
		if err != nil {
			return err
		}
		found += n
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

func runOne(ctx *cli.Context, f *Flags, in cli.Input) (int, error) {
	t, err := ctx.Parse(in)
	if err != nil {
		return 0, err
	}
	edits, problems, err := Plan(t)
	if err != nil {
		return 0, cli.RuntimeError(fmt.Errorf("%s: %w", displayName(in), err))
	}
	out := in.Data
	if f.Check {
		if err := writeProblems(ctx, displayName(in), problems); err != nil {
			return 0, err
		}
	} else {
		if len(edits) > 0 {
			if out, err = t.Apply(edits); err != nil {
				return 0, cli.RuntimeError(err)
			}
			if err := verify(out, t.Format, in.Name); err != nil {
				return 0, cli.RuntimeError(fmt.Errorf("%s: %w", displayName(in), err))
			}
		}
		if err := ctx.WriteDocument(in, out); err != nil {
			return 0, err
		}
	}
	return len(problems), writeStats(ctx, f, in, t, out, problems)
}

// verify re-reads a repaired document: it must parse as the same format and pass Check.
// A failure here is a bug in repair, reported rather than written out.
func verify(out []byte, format transcript.Format, name string) error {
	t, err := transcript.Parse(out, transcript.Options{Format: format, Name: name})
	if err != nil {
		return fmt.Errorf("internal error: the repaired document does not parse: %w", err)
	}
	if left := Check(t); len(left) > 0 {
		return fmt.Errorf("internal error: the repaired document still breaks %d rules (first: %s)", len(left), left[0])
	}
	return nil
}

func displayName(in cli.Input) string {
	if in.IsStdin() {
		return "stdin"
	}
	return in.Name
}

func writeProblems(ctx *cli.Context, file string, problems []Problem) error {
	var buf bytes.Buffer
	if ctx.StderrTTY {
		for _, p := range problems {
			fmt.Fprintf(&buf, "%s: %s\n", file, p)
		}
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, p := range problems {
			if err := enc.Encode(reported{File: file, Problem: p}); err != nil {
				return cli.RuntimeError(err)
			}
		}
	}
	if _, err := ctx.Stderr.Write(buf.Bytes()); err != nil {
		return cli.RuntimeError(fmt.Errorf("write stderr: %w", err))
	}
	return nil
}

func writeStats(ctx *cli.Context, f *Flags, in cli.Input, t *transcript.Transcript, out []byte, problems []Problem) error {
	if !f.Stats && f.StatsFile == "" {
		return nil
	}
	counter, err := ctx.Counter(t.Format)
	if err != nil {
		return err
	}
	before := count.Total(t, counter)
	after := before
	if !f.Check && len(problems) > 0 {
		if ta, err := transcript.Parse(out, transcript.Options{Format: t.Format, Name: in.Name}); err == nil {
			after = count.Total(ta, counter)
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
	return ctx.WriteStats(cli.Stats{
		File: in.Name, Format: string(t.Format),
		TokensBefore: before, TokensAfter: after, Saved: before - after,
		Items: len(problems), Extra: extra,
	})
}
