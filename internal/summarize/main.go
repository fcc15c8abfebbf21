package summarize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
)

// Flags is ctx-summarize's command line.
type Flags struct {
	cli.Common `embed:""`

	Trigger      cli.Percent         `name:"trigger" default:"80%" placeholder:"PCT" help:"Act above this utilization of the effective window." env:"CTX_SUMMARIZE_TRIGGER"`
	Target       cli.OptionalPercent `name:"target" placeholder:"PCT" help:"Up to 95% of the window, act only when the summary leaves the request at or below this utilization (default 10 points below --trigger)." env:"CTX_SUMMARIZE_TARGET"`
	Force        bool                `name:"force" short:"f" help:"Summarize now, whatever the utilization."`
	Keep         Keep                `name:"keep" placeholder:"SIZE" help:"The newest part to keep whole: tokens (40k), a share of the window (20%), or turns (3 turns). Default: a fifth of what the system prompt and tools leave of the window." env:"CTX_SUMMARIZE_KEEP"`
	Backend      string              `name:"backend" enum:"local,anthropic,openai" default:"local" placeholder:"local|anthropic|openai" help:"Who writes the summary." env:"CTX_SUMMARIZE_BACKEND"`
	LLMModel     string              `name:"llm-model" placeholder:"NAME" help:"The model that summarizes (default claude-haiku-4-5, or gpt-4o-mini for openai)." env:"CTX_SUMMARIZE_MODEL"`
	BaseURL      string              `name:"base-url" placeholder:"URL" help:"The API's base URL (an OpenAI-compatible server: Ollama, llama.cpp, vLLM, LM Studio)." env:"CTX_SUMMARIZE_BASE_URL"`
	Instructions string              `name:"instructions" placeholder:"TEXT" help:"Added to ctx-summarize's own prompt (never replacing it)." env:"CTX_SUMMARIZE_INSTRUCTIONS"`
	Timeout      time.Duration       `name:"timeout" default:"120s" placeholder:"DURATION" help:"Give up on one request after this long." env:"CTX_SUMMARIZE_TIMEOUT"`
	Retries      int                 `name:"retries" default:"4" placeholder:"N" help:"Retry a rate-limited, overloaded or failed request this many times." env:"CTX_SUMMARIZE_RETRIES"`
	Fallback     string              `name:"fallback" enum:"none,local" default:"none" placeholder:"none|local" help:"When the model fails: none (exit 4, nothing written) or local." env:"CTX_SUMMARIZE_FALLBACK"`
	Reset        bool                `name:"reset" help:"Close the circuit breaker before running."`
	Offload      bool                `name:"offload" help:"Keep the whole pre-summary document in the --store directory and name it in the summary."`
	UserTokens   int                 `name:"user-tokens" default:"20000" placeholder:"N" help:"Quote the user's newest requests verbatim up to about N tokens (at most a twentieth of what is summarized); older ones are shortened." env:"CTX_SUMMARIZE_USER_TOKENS"`
	KeepFirst    bool                `name:"keep-first" help:"Keep the first user message (the opening task) verbatim: in place in a JSON document, else whole in the summary." env:"CTX_SUMMARIZE_KEEP_FIRST"`
	RestoreFiles int                 `name:"restore-files" default:"5" placeholder:"N" help:"After the summary, restore the newest content of up to N files read or edited in the summarized part (0: none)." env:"CTX_SUMMARIZE_RESTORE_FILES"`
	FileTokens   int                 `name:"restore-tokens" default:"5000" placeholder:"N" help:"Restore at most N tokens of each file (all of them at most a twentieth of what is summarized)." env:"CTX_SUMMARIZE_RESTORE_TOKENS"`
	Repay        int                 `name:"repay" default:"1" placeholder:"N" help:"Where the request would stay over the window after summarizing, summarize only when what it saves pays back the prompt cache it breaks within N requests; 0 turns the test off." env:"CTX_SUMMARIZE_REPAY"`
}

// The most of what is summarized (its tokens divided by these) that the user's words quoted
// verbatim (--user-tokens) and the files restored after the summary (all of them, each
// within --restore-tokens) may take. --help, the README and ctx-summarize(1) say
// "a twentieth"; TestHelpStatesShares holds --help to these.
const (
	userShare = 20
	// summaryWrap is what the summary message costs beyond its text: its role and
	// framing in the format, and the text's escapes.
	summaryWrap  = 12
	restoreShare = 20
)

// Keep is --keep: tokens, a share of the window, or turns.
type Keep struct {
	Tokens, Turns int
	Share         float64
	set           bool
}

var turnsSyntax = regexp.MustCompile(`^(\d+)\s*turns?$`)

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Keep) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(strings.ToLower(string(b)))
	*k = Keep{set: true}
	if m := turnsSyntax.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n < 1 {
			return fmt.Errorf("invalid --keep %q: at least 1 turn", b)
		}
		k.Turns = n
		return nil
	}
	if strings.HasSuffix(s, "%") {
		var p cli.Percent
		if err := p.UnmarshalText([]byte(s)); err != nil {
			return err
		}
		k.Share = p.Fraction()
		return nil
	}
	var c cli.Count
	if err := c.UnmarshalText([]byte(strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(s, "tokens")), "tok"))); err != nil {
		return fmt.Errorf("invalid --keep %q: want tokens (40k), a share of the window (20%%) or turns (3 turns)", b)
	}
	k.Tokens = c.Int()
	return nil
}

const help = `The lossy tier: above --trigger (80%) of the effective window, or with --force,
replaces the older part of the conversation with one summary message, keeping the newest
part whole (--keep, default a fifth of the room the messages have in the window) and the
system prompt in place. A tool call is never separated from its result.

The summary is a working-state snapshot in fixed sections: the goal and every user
request in the user's own words (what the agent put in user messages left out; the newest
verbatim up to --user-tokens), decisions (refused tool calls among them), files read and
changed, commands and tests with their outcome, errors and whether they are still open,
pending tasks, what was being done at the cut, the next step. Right after it, the newest
content of the files last changed or read (--restore-files, --restore-tokens), as the
transcript shows them, each marked <ctxkit-restored path="...">. A later run folds an
earlier summary into the new one.

Backends: local (the default: offline, deterministic, extracted from the messages
themselves), anthropic (ANTHROPIC_API_KEY) and openai (OPENAI_API_KEY; --base-url for any
OpenAI-compatible server). Rate limits and overloads are retried; after 3 failures in a
row a circuit breaker stops calling the model (--reset closes it); its state is kept in
$XDG_STATE_HOME/ctxkit (~/.local/state/ctxkit), or in the --store directory when one is
named. Keys a server echoes in an error are redacted. When the model fails nothing is
written and the exit status is 4, unless --fallback local. Details in ctx-summarize(1).`

// Tool returns ctx-summarize's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-summarize", "Replace older history with one structured summary.", help, run)
}

// Main runs ctx-summarize and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// breakerLimit is how many failures in a row open the breaker; breakerCooldown how long
// it then stays open before one call may try again.
const (
	breakerLimit    = 3
	breakerCooldown = 10 * time.Minute
)

// settings checks the command line and reads it as the decision does; flags out of range
// are usage errors.
func (f *Flags) settings() (*settings, error) {
	if f.Retries < 0 {
		return nil, cli.Usagef("--retries must not be negative, got %d", f.Retries)
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{"--user-tokens", f.UserTokens}, {"--restore-files", f.RestoreFiles}, {"--restore-tokens", f.FileTokens}, {"--repay", f.Repay}} {
		if n.value < 0 {
			return nil, cli.Usagef("%s must not be negative, got %d", n.flag, n.value)
		}
	}
	o := Defaults()
	var err error
	if o.Trigger, o.Target, err = cli.TriggerTarget(f.Trigger, f.Target); err != nil {
		return nil, err
	}
	o.Force, o.KeepFirst, o.Repay = f.Force, f.KeepFirst, f.Repay
	o.KeepTurns, o.KeepTokens = f.Keep.Turns, f.Keep.Tokens
	return &settings{o: o, keepShare: f.Keep.Share,
		backend: f.Backend, model: f.LLMModel, baseURL: f.BaseURL, instructions: f.Instructions, fallback: f.Fallback,
		timeout: f.Timeout, retries: f.Retries, reset: f.Reset, offload: f.Offload,
		userTokens: f.UserTokens, restoreFiles: f.RestoreFiles, fileTokens: f.FileTokens}, nil
}

// New is ctx-summarize as a tier of an in-process pipeline: its command line (args, and
// the CTX_ variables getenv gives) read as Main reads it. Its warnings are the plan's,
// but the ones a model backend's call writes itself (its circuit breaker's state, a prompt
// too long for the model), which are dropped.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, c, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	s, err := f.settings()
	if err != nil {
		return nil, err
	}
	rd, err := c.Redactor()
	if err != nil {
		return nil, err
	}
	env := envOf(c, rd)
	env.warnf = func(string, ...any) {}
	return &Tier{s: *s, M: m, env: env}, nil
}

func run(c *cli.Context, f *Flags) error {
	s, err := f.settings()
	if err != nil {
		return err
	}
	// With --in-place every file is summarized; the runner renames none of them over its
	// original unless all succeed.
	return c.Run(cli.Filter{Counted: true, Plan: func(d *cli.Doc) (*cli.Plan, error) {
		rd, err := c.Redactor()
		if err != nil {
			return nil, err
		}
		// Ctrl-C cancels a model call cleanly: nothing is written.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		p, err := planDoc(ctx, d.T, d, s, envOf(c, rd))
		if errors.Is(err, store.ErrNoDir) { // --offload with no store
			return nil, cli.Usagef("%w", err)
		}
		if err != nil {
			return nil, err
		}
		return cli.PlanOf(d, p), nil
	}})
}

// envOf is the run's environment as summarizing reads it.
func envOf(c *cli.Context, rd *redact.Redactor) *runEnv {
	return &runEnv{getenv: c.Getenv, now: c.Now, warnf: c.Warnf, redactor: rd, store: c.Common.Store, storeGiven: c.Given("store"), stateDir: c.StateDir(),
		shownStore: func() (string, error) { return cli.ShownStore(c.Common.Store, c.Getenv) },
		temporary:  c.Getenv(cli.StoreShownEnv) != ""}
}

// Examples are ctx-summarize's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "the pipeline in front of a request; a summary only when the window is 80% full", Command: "ctx-budget < request.json | ctx-snip | ctx-summarize | ctx-trim > out.json"},
		{Does: "compact a session now, keeping the last three turns and the full history in the store", Command: "ctx-summarize -f --keep '3 turns' --offload -i SESSION.jsonl"},
		{Does: "use Claude, falling back to the local summarizer when the API is down", Command: "ctx-summarize --backend anthropic --fallback local chat.json > out.json"},
	}
}
