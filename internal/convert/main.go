package convert

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-convert's command line.
type Flags struct {
	cli.Common `embed:""`

	To     string `name:"to" short:"t" enum:",anthropic,openai,responses" default:"" placeholder:"anthropic|openai|responses" help:"Target format (default: anthropic for a Claude Code session, responses for a Codex rollout, openai for a SWE-agent or tau-bench log)." env:"CTX_CONVERT_TO"`
	Strict bool   `name:"strict" help:"Fail (exit 1, nothing written) when something cannot be expressed in the target."`
}

const help = `Converts a conversation document to an API request document: between Anthropic
Messages, OpenAI Chat Completions and OpenAI Responses, and from saved transcripts (a
Claude Code session to anthropic, a Codex rollout to responses, a SWE-agent trajectory or
a tau-bench log to openai).

Roles, text, images, tool calls and results, the system prompt and the tool schemas are
carried over; so are model, max tokens, temperature, top_p and stop sequences where the
target has them (the model only within one provider). What the target cannot express
(reasoning from another provider, an image in a Chat Completions tool result, an error
flag...) is listed on stderr as a warning with its count; --strict makes it an error
(the model name, which never crosses providers, is only a warning).

The result follows ctx-repair's rules: what the source broke (a call never answered,
two user messages in a row) is fixed and reported. Details in ctx-convert(1).`

// Tool returns ctx-convert's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-convert", "Convert a conversation between API formats; saved transcripts to API requests.", help, run)
}

// Examples are ctx-convert's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "a Claude Code session as a Messages API request", Command: "ctx-convert SESSION.jsonl > request.json"},
		{Does: "an Anthropic conversation for an OpenAI-compatible server, failing if anything is lost", Command: "ctx-convert --strict --to openai chat.json > openai.json"},
		{Does: "every trajectory of a folder as Chat Completions requests", Command: "for f in trajectories/*.traj; do ctx-convert --to openai -o \"${f%.traj}.json\" \"$f\"; done"},
	}
}

// OmitCommon: A new format is a new file (-i is refused), and ctx-convert keeps nothing in a store.
func (*Flags) OmitCommon() []string { return []string{"in-place", "store"} }

// Main runs ctx-convert and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.InPlace {
		return cli.Usagef("--in-place cannot change a file's format; use -o")
	}
	// A JSONL transcript is streamed (stream.go); anything else is read whole.
	return ctx.Run(cli.Filter{Plan: func(d *cli.Doc) (*cli.Plan, error) { return planDoc(d, f) }})
}

// planDoc converts one document: read whole, or a JSONL transcript in the run's two passes
// (readStreamed).
func planDoc(d *cli.Doc, f *Flags) (*cli.Plan, error) {
	t := d.T
	to, _ := transcript.ParseFormat(f.To)
	if to == "" {
		var ok bool
		if to, ok = DefaultTarget(t); !ok {
			return nil, cli.WithHint(cli.Usagef("%s is already an API request: name the target with --to", t.Format),
				"--to anthropic, --to openai or --to responses")
		}
	}
	// --stats counts the document before it is let go.
	var before *measure.Counts
	if d.Context().StatsOn() {
		n, err := d.Counts()
		if err != nil {
			return nil, err
		}
		before = &n
	}
	var c *conversation
	finish := func() error { return nil }
	release := d.Release
	if d.Streamed() {
		var ok bool
		if c, finish, ok = readStreamed(d); !ok {
			if err := d.Whole(); err != nil {
				return nil, err
			}
			t = d.T
		}
	}
	if c == nil {
		c = read(t)
	}
	// The output goes to a spool (a temp file past a megabyte) as it is written, and
	// comes back into memory once the document is let go (write): the two are not held
	// at once.
	sink := cli.NewSpool()
	defer sink.Close()
	c.sink = sink
	in := 0
	for _, m := range t.Messages {
		if !m.Header {
			in++
		}
	}
	t = nil // (the output needs the room, see write)
	res, err := write(c, to, release)
	if ferr := finish(); ferr != nil {
		return nil, ferr
	}
	if err != nil {
		return nil, cli.RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
	}
	for _, l := range res.Losses {
		d.Warnf("%d × %s: %s", l.Count, l.Kind, l.Detail)
	}
	if lost := contentLosses(res.Losses); f.Strict && lost > 0 {
		return nil, cli.CheckFailed(fmt.Errorf("%s: --strict: %d kinds of content cannot be expressed in %s; nothing written", d.Display(), lost, to))
	}
	if len(res.Repaired) > 0 {
		var parts []string
		counts := repair.Counts(res.Repaired)
		for _, r := range repair.Rules {
			if n := counts[r]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", r, n))
			}
		}
		d.Warnf("repaired for the API (ctx-repair's rules): %s", strings.Join(parts, ", "))
	}
	p := &cli.Plan{Output: res.Doc}
	if before != nil {
		p.TokensDelta = tokensDelta(d, *before, to, res)
	}
	losses := map[string]int{}
	for _, l := range res.Losses {
		losses[l.Kind] = l.Count
	}
	repaired := map[string]int{}
	for r, n := range repair.Counts(res.Repaired) {
		repaired[string(r)] = n
	}
	p.Stats = cli.Stats{Items: res.Messages,
		Extra: map[string]any{"to": string(to), "messages_in": in, "messages_out": res.Messages, "losses": losses, "repaired": repaired}}
	return p, nil
}

// tokensDelta is what converting changed in the document's tokens (n, counted before it
// was let go), each side counted with its format's counter. The output is counted as
// Convert parsed it to check it: a 100 MB document is not parsed again.
func tokensDelta(d *cli.Doc, n measure.Counts, to transcript.Format, res *Result) int {
	after := n.Total
	if c2, err := d.Context().Counter(to, res.out.Model); err == nil {
		after = measure.Total(res.out, c2)
	}
	return after - n.Total
}

// contentLosses counts the kinds of conversation content lost; the model name, which is
// request metadata that never crosses providers, is not content.
func contentLosses(ls []Loss) int {
	n := 0
	for _, l := range ls {
		if l.Kind != "model" {
			n++
		}
	}
	return n
}
