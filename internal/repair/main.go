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
	names, err := ctx.DocumentNames(f.Check)
	if err != nil {
		return err
	}
	found := 0
	for _, name := range names {
		n, err := runOne(ctx, f, name)
		if err != nil {
			return err
		}
		found += n
	}
	return verdict(f, found)
}

// verdict is the run's error once every document is checked: with --check, a failed
// check when any problem was found.
func verdict(f *Flags, found int) error {
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

// runOne checks or repairs one document and returns how many problems it has. A JSONL
// transcript is streamed: the rules of Claude Code and Codex look only at the structure of
// the conversation (roles, blocks, tool ids), which the first pass keeps, so --check
// reads the document once (cli.Context.Stream, whatever stdout is). With nothing to fix
// the document is copied through in a second pass (cli.Document.Rewrite); a document
// that needs fixing is read again whole and repaired as a JSON document is, because the
// fixes build new records from the text of the old ones.
func runOne(ctx *cli.Context, f *Flags, name string) (int, error) {
	var carried [][]transcript.Message
	var counts *count.Streamed
	if statsOn(f) {
		counts = count.NewStreamed(ctx.Counter)
	}
	keep := func(seq int, rec *transcript.Transcript) error {
		carried = append(carried, rec.Messages)
		if counts != nil {
			return counts.Record(seq, rec)
		}
		return nil
	}
	var t *transcript.Transcript
	var outline *transcript.Outline
	var doc *cli.Document
	var err error
	if f.Check {
		t, outline, err = ctx.Stream(name, keep)
	} else if doc, err = ctx.ReadDocument(name, keep); err == nil {
		defer doc.Close()
		t, outline = doc.Transcript, doc.Outline
	}
	if counts != nil {
		counts.Close()
	}
	if err != nil {
		return 0, err
	}
	if t != nil {
		in := cli.Input{Name: name}
		if doc != nil {
			in = doc.Input
		}
		return runWhole(ctx, f, in, t)
	}

	problems := Check(outline.Conversation(carried))
	carried = nil // the first pass's structure has served
	switch {
	case f.Check:
		if err := writeProblems(ctx, displayName(name), problems); err != nil {
			return 0, err
		}
	case len(problems) > 0:
		// The fixes read the records they change, and build new ones from them.
		in, t, err := doc.Whole()
		if err != nil {
			return 0, err
		}
		return runWhole(ctx, f, in, t)
	default:
		if err := doc.Rewrite(nil, nil); err != nil {
			return 0, err
		}
	}
	if !statsOn(f) {
		return len(problems), nil
	}
	c, err := counts.CounterFor(outline.Format)
	if err != nil {
		return 0, err
	}
	total := counts.Counts(outline, c).Total
	return len(problems), writeStats(ctx, f, name, outline.Format, total, total, problems)
}

// runWhole checks or repairs a document read whole.
func runWhole(ctx *cli.Context, f *Flags, in cli.Input, t *transcript.Transcript) (int, error) {
	edits, problems, err := Plan(t)
	if err != nil {
		return 0, cli.RuntimeError(fmt.Errorf("%s: %w", displayName(in.Name), err))
	}
	out := in.Data
	if f.Check {
		if err := writeProblems(ctx, displayName(in.Name), problems); err != nil {
			return 0, err
		}
	} else {
		if len(edits) > 0 {
			if out, err = t.Apply(edits); err != nil {
				return 0, cli.RuntimeError(err)
			}
			if err := verify(out, t.Format, in.Name); err != nil {
				return 0, cli.RuntimeError(fmt.Errorf("%s: %w", displayName(in.Name), err))
			}
		}
		if err := ctx.WriteDocument(in, out); err != nil {
			return 0, err
		}
	}
	if !statsOn(f) {
		return len(problems), nil
	}
	counter, err := ctx.Counter(t.Format)
	if err != nil {
		return 0, err
	}
	before := count.Total(t, counter)
	after := before
	if !f.Check && len(problems) > 0 {
		if ta, err := transcript.Parse(out, transcript.Options{Format: t.Format, Name: in.Name}); err == nil {
			after = count.Total(ta, counter)
		}
	}
	return len(problems), writeStats(ctx, f, in.Name, t.Format, before, after, problems)
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

func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
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

func statsOn(f *Flags) bool { return f.Stats || f.StatsFile != "" }

func writeStats(ctx *cli.Context, f *Flags, name string, format transcript.Format, before, after int, problems []Problem) error {
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
		File: name, Format: string(format),
		TokensBefore: before, TokensAfter: after, Saved: before - after,
		Items: len(problems), Extra: extra,
	})
}
