package convert

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/count"
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
	f := &Flags{}
	return &cli.Tool{
		Name:    "ctx-convert",
		Summary: "Convert a conversation between API formats; saved transcripts to API requests.",
		Help:    help,
		Grammar: f,
		Common:  func() *cli.Common { return &f.Common },
		Run:     func(ctx *cli.Context) error { return run(ctx, f) },
	}
}

// Main runs ctx-convert and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.InPlace {
		return cli.Usagef("--in-place cannot change a file's format; use -o")
	}
	in, err := ctx.One()
	if err != nil {
		return err
	}
	t, err := ctx.Parse(in)
	if err != nil {
		return err
	}
	to, _ := transcript.ParseFormat(f.To)
	if to == "" {
		var ok bool
		if to, ok = DefaultTarget(t); !ok {
			return cli.WithHint(cli.Usagef("%s is already an API request: name the target with --to", t.Format),
				"--to anthropic, --to openai or --to responses")
		}
	}
	res, err := Convert(t, to)
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("%s: %w", name(in), err))
	}
	for _, l := range res.Losses {
		ctx.Warnf("%s: %d × %s: %s", name(in), l.Count, l.Kind, l.Detail)
	}
	if lost := contentLosses(res.Losses); f.Strict && lost > 0 {
		return cli.CheckFailed(fmt.Errorf("%s: --strict: %d kinds of content cannot be expressed in %s; nothing written", name(in), lost, to))
	}
	if len(res.Repaired) > 0 {
		var parts []string
		counts := repair.Counts(res.Repaired)
		for _, r := range repair.Rules {
			if n := counts[r]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", r, n))
			}
		}
		ctx.Warnf("%s: repaired for the API (ctx-repair's rules): %s", name(in), strings.Join(parts, ", "))
	}
	if err := ctx.WriteDocument(in, res.Doc); err != nil {
		return err
	}
	return writeStats(ctx, f, in, t, to, res)
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

func name(in cli.Input) string {
	if in.IsStdin() {
		return "stdin"
	}
	return in.Name
}

func writeStats(ctx *cli.Context, f *Flags, in cli.Input, t *transcript.Transcript, to transcript.Format, res *Result) error {
	if !f.Stats && f.StatsFile == "" {
		return nil
	}
	counter, err := ctx.Counter(t.Format)
	if err != nil {
		return err
	}
	before := count.Total(t, counter)
	after := before
	// The output as Convert parsed it to check it: a 100 MB document is not parsed again.
	if c2, err := ctx.Counter(to); err == nil {
		after = count.Total(res.out, c2)
	}
	losses := map[string]int{}
	for _, l := range res.Losses {
		losses[l.Kind] = l.Count
	}
	repaired := map[string]int{}
	for r, n := range repair.Counts(res.Repaired) {
		repaired[string(r)] = n
	}
	in0 := 0
	for _, m := range t.Messages {
		if !m.Header {
			in0++
		}
	}
	return ctx.WriteStats(cli.Stats{
		File: in.Name, Format: string(t.Format),
		TokensBefore: before, TokensAfter: after, Saved: before - after,
		Items: res.Messages,
		Extra: map[string]any{"to": string(to), "messages_in": in0, "messages_out": res.Messages, "losses": losses, "repaired": repaired},
	})
}
