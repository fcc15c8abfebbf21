package replay

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/tiers"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// DefaultPipe is the pipeline replayed unless --pipe names another: every tier, in the
// registry's order.
var DefaultPipe = tiers.Pipe()

// ShownStore is the store the stages' placeholders name when the replay keeps what they
// offload in a temporary store of its own (no --store): a fixed path, so that a replay's
// requests and figures do not depend on where the temporary directory was made.
const ShownStore = "/ctx-replay/store"

// Tools returns the commands a pipeline runs in this process: the tiers, ctx-repair and
// ctx-count. A pipeline runs them once a request, so each keeps its command-line parser
// from run to run (cli.Reusing); a fresh map each call, so that nothing is kept at package
// level.
func Tools() map[string]cli.MainFunc {
	tools := map[string]cli.MainFunc{
		"ctx-repair": cli.Reusing(repair.Tool), "ctx-count": cli.Reusing(count.Tool),
	}
	for _, t := range tiers.All() {
		tools[t.Name] = cli.Reusing(t.Tool)
	}
	return tools
}

// Flags is ctx-replay's command line.
type Flags struct {
	cli.Common `embed:""`

	Pipe     string        `name:"pipe" default:"${defaultPipe}" placeholder:"PIPELINE" help:"The filters each request goes through, as a shell pipeline." env:"CTX_REPLAY_PIPE"`
	Price    string        `name:"price" placeholder:"input=D,write=D,read=D" help:"Prompt prices in dollars per million tokens; default the model's."`
	CacheTTL time.Duration `name:"cache-ttl" default:"5m" placeholder:"DURATION" help:"How long a cached prompt lives after its last use; 0: forever."`
	Timeout  time.Duration `name:"timeout" default:"2m" placeholder:"DURATION" help:"Most time the pipeline may take on one request; 0: no limit."`
	Turns    bool          `name:"turns" help:"Write one JSON line per request, then the totals line."`
	JSON     bool          `name:"json" help:"Write the JSON report even when stdout is a terminal."`
	Save     string        `name:"save" placeholder:"DIR" help:"Write every request as sent to DIR (0001.json, 0002.json...), to look at or count."`
}

const help = `Replays a saved session request by request, the way an agent running a ctxkit pipeline
before every request would have sent it: each request is the one sent before plus the
messages that came since, through --pipe (the five tiers by default). For every request it
measures the tokens sent, the part read from the prompt cache and the part written to it,
which tiers fired and what they saved, and whether it would overflow the window; in total,
the cost at the model's cache prices against the session as it was sent.

On a terminal it prints a table and a chart of utilization per request; piped, one JSON
report (--turns: one line per request, then the totals). Details in ctx-replay(1).`

// Tool returns ctx-replay's description for the runner.
func Tool() *cli.Tool { return tool(nil, false) }

// tool is Tool, handing sent (when not nil) every request as sent. commands runs each
// stage as its command on the bytes, as before the in-process pipeline (package
// pipeline), which the differential test holds that pipeline to.
func tool(sent func(turn int, request []byte) error, commands bool) *cli.Tool {
	t := cli.Command("ctx-replay", "Replay a session turn by turn through a pipeline: tokens, cache, cost.", help,
		func(c *cli.Context, f *Flags) error { return run(c, f, sent, commands) })
	t.Vars = map[string]string{"defaultPipe": DefaultPipe}
	return t
}

// Examples are ctx-replay's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "what the five tiers would have done to a session at a 100k window", Command: "ctx-replay --window 100k SESSION.jsonl"},
		{Does: "only the cheap tiers, as JSON", Command: "ctx-replay --json --window 100k --pipe 'ctx-budget | ctx-snip' SESSION.jsonl"},
		{Does: "which requests broke the prompt cache", Command: "ctx-replay --turns --window 100k SESSION.jsonl | jq -c 'select(.cache_break)'"},
	}
}

// OmitCommon: ctx-replay only reads sessions: -i is refused.
func (*Flags) OmitCommon() []string { return []string{"in-place"} }

// Main runs ctx-replay and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// MainSent is Main that also hands sent every request as the pipeline sent it (turn is
// 1-based), what --save would write, without writing it: for a test that checks what
// each request holds. The request is not to be kept or changed.
func MainSent(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, sent func(turn int, request []byte) error) int {
	return cli.Main(tool(sent, false), args, stdin, stdout, stderr, getenv)
}

// Report is what a replay of one session prints.
type Report struct {
	File      string       `json:"file"`
	Format    string       `json:"format"`
	Model     string       `json:"model,omitempty"`
	Pipe      string       `json:"pipe"`
	Window    int          `json:"window"`
	Effective int          `json:"effective_window"`
	Price     tokens.Price `json:"price"`
	// Totals are the main log's alone.
	Totals
	Turns []Turn `json:"turns,omitempty"`
	// Subagents are the session's subagents' logs, each replayed on its own, and
	// WithSubagents the totals of the session with them (a Claude Code log read from a
	// file that has subagents).
	Subagents     []SubagentReport `json:"subagents,omitempty"`
	WithSubagents *Totals          `json:"with_subagents,omitempty"`
}

func run(ctx *cli.Context, f *Flags, sent func(turn int, request []byte) error, commands bool) error {
	if f.InPlace {
		return cli.Usagef("ctx-replay does not change documents; --in-place does not apply")
	}
	if f.Redact {
		return cli.Usagef("ctx-replay writes a report, not documents; --redact does not apply")
	}
	if f.CacheTTL < 0 || f.Timeout < 0 {
		return cli.Usagef("--cache-ttl and --timeout must not be negative")
	}
	pipe, err := ParsePipe(f.Pipe, Tools())
	if err != nil {
		return cli.Usagef("--pipe: %v", err)
	}
	reports := 0
	return ctx.Run(cli.Filter{
		Reports: true,
		Whole:   true,
		// The session, its own request at each point and the one before, and the stages'
		// documents: a limit at 1.7 times the session made the collector run without end
		// (a replay of 20 MB took twice the CPU).
		HoldsMore: true,
		Plan: func(d *cli.Doc) (*cli.Plan, error) {
			var out bytes.Buffer
			err := replayDoc(ctx, d, f, pipe, &out, reports, sent, commands)
			reports++
			return &cli.Plan{Report: out.Bytes()}, err
		},
	})
}

func replayDoc(ctx *cli.Context, d *cli.Doc, f *Flags, pipe *Pipeline, w *bytes.Buffer, nth int, sent func(turn int, request []byte) error, commands bool) error {
	counter, err := d.Counter()
	if err != nil {
		return err
	}
	window, err := d.Window()
	if err != nil {
		return err
	}
	price, err := priceOf(window, d.T, f.Price)
	if err != nil {
		return err
	}
	parseOpts := d.ReadOptions()
	parse := func(b []byte) (*transcript.Transcript, error) { return transcript.Parse(b, parseOpts) }
	points, err := SessionPoints(d.T, parse)
	if err != nil {
		return cli.InputError(fmt.Errorf("%s: reading the session before a compaction: %w", d.Display(), err))
	}
	if len(points) == 0 {
		err := cli.InputError(fmt.Errorf("%s: no request to replay: no reply follows a message of the conversation", d.Display()))
		if len(d.T.Messages) > 0 && d.T.Format == transcript.ClaudeCode {
			return cli.WithHint(err, "a subagent's log starts with its first reply: the request is in the parent session's log")
		}
		return err
	}

	// The stages keep what they offload in a store of their own unless --store names one,
	// and report to a stats file the replay reads after each request.
	work, err := os.MkdirTemp("", "ctx-replay-")
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("make a work directory: %w", err))
	}
	defer os.RemoveAll(work)
	env := ctx.CommonEnv()
	env["CTX_STATS_FILE"] = work + "/stats.jsonl"
	env["CTX_FORMAT"] = string(d.T.Format)
	if !ctx.Given("store") {
		// The placeholders name a fixed path, not the random one of the work directory:
		// the same session and flags give the same requests wherever the store is.
		env["CTX_STORE"] = work + "/store"
		env[cli.StoreShownEnv] = ShownStore
	}

	r := Report{File: d.Display(), Format: string(d.T.Format), Model: cmp.Or(window.Model, d.T.Model), Pipe: pipe.Text,
		Window: window.Window, Effective: window.Effective, Price: price}
	o := Options{
		Pipe:      pipe,
		Points:    points,
		Parse:     parse,
		Counter:   counter,
		Effective: window.Effective,
		Overhead:  int(f.Overhead),
		Price:     price,
		TTL:       f.CacheTTL,
		Timeout:   f.Timeout,
		Getenv:    ctx.Getenv,
		Env:       env,
		StatsFile: env["CTX_STATS_FILE"],
		Check:     true,
	}
	o.Reading, o.Reparse = parseOpts, true
	if !commands {
		if o.Stages, err = pipe.Stages(StageEnv(ctx.Getenv, env), o.StatsFile); err != nil {
			return cli.Usagef("--pipe: %v", err)
		}
		if o.Stages != nil && o.Stages.Env.Flush != nil {
			defer o.Stages.Env.Flush()
		}
	}
	if f.Format == "auto" {
		// The format was detected: every request should read as the same one.
		o.Detect = func(b []byte) (transcript.Format, error) {
			opts := parseOpts
			opts.Format = ""
			t, err := transcript.Parse(b, opts)
			if err != nil {
				return "", err
			}
			return t.Format, nil
		}
	}
	if f.Save != "" {
		if err := safefile.MkdirAll(f.Save); err != nil {
			return cli.RuntimeError(fmt.Errorf("--save: %w", err))
		}
		ext := ".json"
		if d.T.Array.IsZero() {
			ext = ".jsonl"
		}
		o.Save = func(turn int, doc []byte) error {
			name := filepath.Join(f.Save, fmt.Sprintf("%04d%s", turn, ext))
			if err := safefile.WriteFile(name, doc); err != nil {
				return fmt.Errorf("--save: %w", err)
			}
			return nil
		}
	}
	if save := o.Save; sent != nil {
		o.Save = func(turn int, doc []byte) error {
			if save != nil {
				if err := save(turn, doc); err != nil {
					return err
				}
			}
			return sent(turn, doc)
		}
	}
	human := ctx.StdoutTTY && !f.JSON && !f.Turns && f.Output == ""
	tot, err := Replay(context.Background(), d.T, o, func(t Turn) error {
		if f.Turns {
			return cli.JSONLines(w, t)
		}
		r.Turns = append(r.Turns, t)
		return nil
	})
	if err != nil {
		var te *TurnError
		if errors.As(err, &te) {
			return cli.RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
		}
		return err
	}
	r.Totals = tot
	if left := tot.Recorded - tot.Requests; left > 0 {
		// Requests made on branches the session left (a rewind, a fork), or whose history
		// the log does not hold, are not replayed: say so, the figures leave them out.
		ctx.Warnf("%s: %d of the %d requests the session records are not replayed (on branches a rewind or fork left, or with no history in the log): the figures leave them out", d.Display(), left, tot.Recorded)
	}
	if d.T.Format == transcript.ClaudeCode {
		if r.Subagents, err = replaySubagents(ctx, d.Name, f, o); err != nil {
			return err
		}
		if len(r.Subagents) > 0 {
			with := tot
			with.Firings, with.Saved, with.Unrepaid = maps.Clone(tot.Firings), maps.Clone(tot.Saved), maps.Clone(tot.Unrepaid)
			for _, s := range r.Subagents {
				with.merge(s.Totals)
			}
			r.WithSubagents = &with
		}
	}
	switch {
	case f.Turns:
		r.Turns = nil
		return cli.JSONLines(w, r)
	case human:
		if nth > 0 {
			fmt.Fprintln(w)
		}
		Render(w, &r, width(ctx.Getenv), ctx.Color)
		return nil
	default:
		return cli.JSONLines(w, r)
	}
}

// StageEnv is the environment a pipeline's stages see: env on top of getenv.
func StageEnv(getenv func(string) string, env map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return getenv(name)
	}
}

// width is the terminal's width: COLUMNS, else 80.
func width(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 80
}
