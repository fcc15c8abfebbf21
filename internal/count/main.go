package count

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-count's command line.
type Flags struct {
	cli.Common `embed:""`

	Pass     bool        `short:"p" help:"Copy the document to stdout unchanged and write the report to stderr, to sit mid-pipeline."`
	FailOver cli.Percent `name:"fail-over" placeholder:"PCT" help:"Exit 1 when utilization is above PCT (85% or 0.85)." env:"CTX_FAIL_OVER"`
	Vs       string      `name:"vs" placeholder:"OTHER" help:"Compare with OTHER, another version of the conversation: tokens saved, messages changed, cache prefix kept."`
	JSON     bool        `name:"json" help:"Write the JSON report even when stdout is a terminal."`
}

const help = `Counts the tokens of a conversation document and shows where they go: by message, role,
block kind and tool, against the model's context window, and which tiers of the ctxkit
pipeline would act on it.

On a terminal it draws the window; piped, it writes one JSON report a line (one per file).
The report's fields are described in ctx-count(1).`

// Tool returns ctx-count's description for the runner.
func Tool() *cli.Tool {
	f := &Flags{}
	return &cli.Tool{
		Name:    "ctx-count",
		Summary: "Count a conversation's tokens and show where they go.",
		Help:    help,
		Grammar: f,
		Common:  func() *cli.Common { return &f.Common },
		Run:     func(ctx *cli.Context) error { return run(ctx, f) },
	}
}

// Main runs ctx-count and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

type measured struct {
	in     cli.Input // Data only for --pass and --vs, which hold the document whole
	t      *transcript.Transcript
	report Report
	err    error
}

func run(ctx *cli.Context, f *Flags) error {
	if f.InPlace {
		return cli.Usagef("ctx-count does not change documents; --in-place does not apply")
	}
	var results []measured
	if f.Pass || f.Vs != "" {
		// The document is passed on (-p) or compared (--vs): hold it whole.
		inputs, err := ctx.Inputs()
		if err != nil {
			return err
		}
		if len(inputs) != 1 {
			return cli.Usagef("--pass and --vs take one document, got %d", len(inputs))
		}
		results = []measured{measureOne(ctx, inputs[0])}
	} else {
		names, err := ctx.Sources()
		if err != nil {
			return err
		}
		results = streamAll(ctx, names)
	}
	for _, m := range results {
		if m.err != nil {
			return m.err
		}
	}
	if f.Vs != "" {
		return compare(ctx, f, results[0])
	}

	// The report goes to stdout (or -o), or with --pass to stderr while the document
	// takes stdout (or -o).
	var report bytes.Buffer
	human, color := ctx.StdoutTTY && !f.JSON && f.Output == "", ctx.Color
	if f.Pass {
		if err := ctx.WriteDocument(results[0].in, results[0].in.Data); err != nil {
			return err
		}
		human = ctx.StderrTTY && !f.JSON
		color = human && ctx.Getenv("NO_COLOR") == "" && ctx.Getenv("TERM") != "dumb"
	}
	for i, m := range results {
		if human {
			if i > 0 {
				fmt.Fprintln(&report)
			}
			Render(&report, &m.report, color)
			continue
		}
		if err := writeJSON(&report, m.report); err != nil {
			return err
		}
	}
	switch {
	case f.Pass:
		if _, err := ctx.Stderr.Write(report.Bytes()); err != nil {
			return cli.RuntimeError(err)
		}
	case f.Output != "":
		if err := ctx.WriteDocument(cli.Input{Name: "-"}, report.Bytes()); err != nil {
			return err
		}
	default:
		if _, err := ctx.Stdout.Write(report.Bytes()); err != nil {
			return cli.RuntimeError(err)
		}
	}

	over := 0
	for _, m := range results {
		r := m.report
		if err := ctx.WriteStats(cli.Stats{Tool: "ctx-count", File: m.in.Name, Format: r.Format,
			TokensBefore: r.Tokens, TokensAfter: r.Tokens, Extra: map[string]any{"utilization": r.Utilization}}); err != nil {
			return err
		}
		if f.FailOver > 0 && r.Utilization > float64(f.FailOver) {
			over++
		}
	}
	if over > 0 {
		return cli.CheckFailed(fmt.Errorf("%d of %d documents above %s utilization", over, len(results), f.FailOver))
	}
	return nil
}

// streamAll counts each input, two files at a time. JSONL transcripts are streamed record
// by record; other documents are read whole (cli.Context.Stream).
func streamAll(ctx *cli.Context, names []string) []measured {
	out := make([]measured, len(names))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = streamOne(ctx, names[i])
		}()
	}
	wg.Wait()
	return out
}

func streamOne(ctx *cli.Context, name string) measured {
	rc := newRecordCounter(ctx.Counter)
	t, outline, err := ctx.Stream(name, rc.record)
	rc.close()
	in := cli.Input{Name: name}
	switch {
	case err != nil:
		return measured{in: in, err: err}
	case t != nil:
		return measureTranscript(ctx, in, t)
	}
	m := measured{in: in}
	counter := rc.counter
	if counter == nil {
		if counter, m.err = ctx.Counter(outline.Format); m.err != nil {
			return m
		}
	}
	budget, err := ctx.BudgetOf(outline.Model, outline.Usage)
	if err != nil {
		m.err = err
		return m
	}
	m.report = summarise(rc.tally(outline), Options{File: name, Counter: counter, Budget: budget})
	return m
}

func measureOne(ctx *cli.Context, in cli.Input) measured {
	t, err := ctx.Parse(in)
	if err != nil {
		return measured{in: in, err: err}
	}
	return measureTranscript(ctx, in, t)
}

func measureTranscript(ctx *cli.Context, in cli.Input, t *transcript.Transcript) measured {
	m := measured{in: in, t: t}
	counter, err := ctx.Counter(m.t.Format)
	if err != nil {
		m.err = err
		return m
	}
	budget, err := ctx.Budget(m.t)
	if err != nil {
		m.err = err
		return m
	}
	m.report = Measure(m.t, Options{File: in.Name, Counter: counter, Budget: budget})
	return m
}

func compare(ctx *cli.Context, f *Flags, a measured) error {
	other, err := ctx.ReadFile(f.Vs)
	if err != nil {
		return err
	}
	b := measureOne(ctx, other)
	if b.err != nil {
		return b.err
	}
	c := Compare(a.t, a.report, b.t, b.report)
	var out bytes.Buffer
	if ctx.StdoutTTY && !f.JSON && f.Output == "" {
		RenderComparison(&out, &c)
	} else if err := writeJSON(&out, c); err != nil {
		return err
	}
	if f.Output != "" {
		return ctx.WriteDocument(cli.Input{Name: "-"}, out.Bytes())
	}
	_, err = ctx.Stdout.Write(out.Bytes())
	return err
}

// writeJSON writes v as one line of JSON, with <, > and & as themselves: previews quote
// transcripts full of tags and shell, which escapes would make unreadable.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
