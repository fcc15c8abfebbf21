package summarize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/llm"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
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

// check refuses flags out of range.
func (f *Flags) check() error {
	if f.Retries < 0 {
		return cli.Usagef("--retries must not be negative, got %d", f.Retries)
	}
	for _, n := range []struct {
		flag  string
		value int
	}{{"--user-tokens", f.UserTokens}, {"--restore-files", f.RestoreFiles}, {"--restore-tokens", f.FileTokens}, {"--repay", f.Repay}} {
		if n.value < 0 {
			return cli.Usagef("%s must not be negative, got %d", n.flag, n.value)
		}
	}
	_, _, err := cli.TriggerTarget(f.Trigger, f.Target)
	return err
}

// New is ctx-summarize as a tier of an in-process pipeline: its command line (args, and
// the CTX_ variables getenv gives) read as Main reads it. Its warnings are the plan's,
// but the backend's circuit breaker's, which are dropped.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, c, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	rd, err := c.Redactor()
	if err != nil {
		return nil, err
	}
	env := envOf(c, rd)
	env.warnf = func(string, ...any) {}
	return &Tier{F: f, M: m, Env: env}, nil
}

func run(c *cli.Context, f *Flags) error {
	if err := f.check(); err != nil {
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
		p, err := planDoc(ctx, d.T, d, f, envOf(c, rd))
		if err != nil {
			return nil, err
		}
		return cli.PlanOf(d, p), nil
	}})
}

// envOf is the run's environment as summarizing reads it.
func envOf(c *cli.Context, rd *redact.Redactor) *runEnv {
	return &runEnv{getenv: c.Getenv, now: c.Now, warnf: c.Warnf, redactor: rd, store: c.Common.Store, storeGiven: c.Given("store"), stateDir: c.StateDir()}
}

// planDoc summarizes one document. The split needs no text; then only the messages the
// summary covers, and the lines placing it edits, are read (from a streamed document, by
// offset, between its two passes). Warnings about the document are the plan's.
func planDoc(ctx context.Context, t *transcript.Transcript, d document, f *Flags, c *runEnv) (*pipeline.Plan, error) {
	var warnings []string
	warnf := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }
	p, err := planSummary(ctx, t, d, f, c, warnf)
	if p != nil {
		p.Warnings = warnings
	}
	return p, err
}

func planSummary(ctx context.Context, t *transcript.Transcript, d document, f *Flags, c *runEnv, warnf func(string, ...any)) (*pipeline.Plan, error) {
	o := Defaults()
	o.Trigger, o.Target, _ = cli.TriggerTarget(f.Trigger, f.Target) // (checked in run)
	o.Force, o.KeepFirst = f.Force, f.KeepFirst
	m, err := d.Measure()
	if err != nil {
		return nil, err
	}
	o.Counter, o.Effective = m.Counter, m.Window.Effective
	o.Repay, o.Price = f.Repay, tokens.PriceOf(cmp.Or(m.Window.Model, t.Model), measure.ProviderOf(t.Format))
	o.Tokens, o.PerMessage, o.Removed = m.Counts.Total, m.Counts.PerMessage, m.Counts.Removed()
	switch {
	case f.Keep.Turns > 0:
		o.KeepTurns = f.Keep.Turns
	case f.Keep.Tokens > 0:
		o.KeepTokens = f.Keep.Tokens
	case f.Keep.set:
		o.KeepTokens = int(f.Keep.Share * float64(o.Effective))
	}
	sp := Choose(t, o)
	extra := map[string]any{"backend": f.Backend, "summarized": 0}
	unchanged := &pipeline.Plan{Stats: pipeline.Stats{Trigger: sp.Trigger, Extra: extra}}
	limit := int(o.Trigger * float64(o.Effective))
	if !sp.Acts {
		if o.Force || o.Tokens > limit {
			warnf("nothing to summarize: the part to keep (--keep) holds the whole conversation")
			if o.Tokens > limit {
				extra["still_above_trigger"] = true
			}
		}
		return unchanged, nil
	}
	// The local summarizer reads the messages it summarizes one at a time. Everything else
	// that reads text (a model's prompt, earlier summaries, placing the summary) reads it
	// from excerpts of the document.
	spans := TextNeeded(t, sp)
	if f.Backend == "local" {
		spans = PlaceText(t, sp)
	}
	if err := d.Excerpt(spans); err != nil {
		return nil, err
	}
	// The files to restore come from the transcript whoever writes the summary, so the
	// local extraction runs for every backend (it reads the messages one at a time).
	x := NewExtractor()
	x.Carry(PreviousFiles(t, sp))
	previous := PreviousSections(t, sp)
	x.CarryErrors(previous["Errors"])
	localSections, err := localOf(t, d, x, newOnly(t, sp))
	if err != nil {
		return nil, err
	}
	local := func() (Sections, error) { return localSections, nil }

	meta := Meta{Messages: len(sp.Summarized), Tokens: sp.Was - PinnedTokens(t, sp, o.Counter), Backend: f.Backend, Pinned: PinnedCount(t, sp)}
	sections, err := summarizeWith(ctx, c, f, t, sp, previous, &meta, local)
	var ce *cli.Error
	if err != nil && !errors.As(err, &ce) {
		if f.Fallback != "local" || errors.Is(err, context.Canceled) {
			return nil, cli.RuntimeError(fmt.Errorf("%s: summarizing failed: %w", d.Display(), err))
		}
		warnf("the %s backend failed (%v); summarized locally instead (--fallback local)", f.Backend, err)
		meta.Backend, meta.Dropped = "local", 0
		sections = Fold(previous, localSections)
		extra["fallback"] = true
	} else if err != nil {
		return nil, err // reading the document again failed
	}
	var kept []byte // with --offload: the pre-summary document, stored once the summary is written
	if f.Offload {
		// The pre-summary document is stored whole, so it is read whole.
		err = d.Visit([]transcript.Span{{Start: 0, End: d.Size()}}, func(text string, _ int) error {
			kept = []byte(text)
			return nil
		})
		if err != nil {
			return nil, err
		}
		kept = c.redactor.Bytes(kept) // the store keeps no secret (DESIGN §4.11)
		// Where it will be, for the summary to say, and for what the summary counts to
		// hold that line: it is stored only when the summary is written, not when a
		// summary that would not be worth it is held back.
		shown, err := cli.ShownStore(c.store, c.getenv)
		if err != nil {
			return nil, cli.RuntimeError(err)
		}
		meta.Offloaded = store.Path(shown, store.Hash(kept))
	}
	userBudget := min(f.UserTokens, sp.Tokens/userShare)
	sections = KeepUserWords(sections, userBudget, f.KeepFirst)
	restored, err := chooseRestored(t, d, sp, x, f, o)
	if err != nil {
		return nil, err
	}
	if meta.Backend == "local" {
		// The summary and the files it restores take at most SummaryShare of what they
		// replace (a model's summary is its own), less what the message around the text
		// costs (summaryWrap), counted as the document holds it: escaped in a JSON string.
		budget := int(SummaryShare*float64(meta.Tokens)) - summaryWrap
		var fits bool
		sections, meta, restored, fits = Fit(sections, meta, restored, budget, func(s string) int { return o.Counter.Count(transcript.Quote(s)) }, f.KeepFirst)
		if !fits {
			// So little history that its smallest summary saves little, and breaks the
			// prompt cache all the same.
			smallest := o.Counter.Count(transcript.Quote(Render(sections, meta))) + summaryWrap
			why := fmt.Sprintf("the smallest summary of the %d messages (%d tokens) would be over %d%% of the %d tokens they replace", len(sp.Summarized), smallest, int(100*SummaryShare), meta.Tokens)
			warnf("not summarizing: %s; the document is left as it is", why)
			extra["over_share"] = true
			unchanged.Stats.Trigger += ": " + why
			return unchanged, nil
		}
	}
	if len(restored) > 0 {
		extra["restored"] = len(restored)
	}
	// A summary is text written for somewhere else (a later context, a reader of the
	// session): it holds no secret, whoever wrote it (DESIGN §4.11).
	edits, err := Place(t, sp, c.redactor.String(Render(sections, meta)+RenderRestored(restored)))
	if err != nil {
		return nil, cli.RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
	}
	after, ok := tokensAfter(t, o, sp, edits)
	if !ok {
		return nil, cli.RuntimeError(fmt.Errorf("%s: internal error: the summary message does not read back", d.Display()))
	}
	if after >= o.Tokens {
		// A summary no smaller than what it replaces: nothing to gain.
		warnf("the summary would not be smaller than the %d messages it replaces; the document is left as it is", len(sp.Summarized))
		extra["not_smaller"] = true
		return unchanged, nil
	}
	why, repay := Judge(o, sp, after)
	extra["repay"] = repay
	if why != "" {
		warnf("not summarizing: %s", why)
		if o.AboveTarget(after) {
			extra["above_target"] = true
		} else {
			extra["not_repaid"] = true
		}
		unchanged.Stats.Trigger += ": " + why
		return unchanged, nil
	}
	if after > limit {
		// The compaction loop: summarizing again next turn would not help either.
		warnf("still above the trigger after summarizing (%d tokens, trigger at %d): the kept part is too big; lower --keep or trim", after, limit)
		extra["still_above_trigger"] = true
	}
	if f.Offload {
		path, err := offload(c, kept)
		if err != nil {
			return nil, err
		}
		if path != meta.Offloaded {
			return nil, cli.RuntimeError(fmt.Errorf("%s: internal error: the document was stored at %s, not at %s as the summary says", d.Display(), path, meta.Offloaded))
		}
		extra["offloaded"] = path
	}
	p := &pipeline.Plan{Edits: edits, TokensDelta: after - o.Tokens}
	if mayMerge(t, sp) {
		// The summary, a user message, may meet a kept user message: ctx-repair's rules
		// merge them.
		p.Check = func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error) {
			fixed, _, err := repair.KeepValid(in, out)
			return fixed, nil, err
		}
	}
	extra["summarized"] = len(sp.Summarized)
	extra["folded"] = len(sp.Previous)
	extra["backend"] = meta.Backend
	if meta.Dropped > 0 {
		extra["dropped_from_input"] = meta.Dropped
	}
	p.Stats = pipeline.Stats{Items: len(sp.Summarized), Trigger: sp.Trigger, Extra: extra}
	return p, nil
}

// newOnly is the summarized messages that are not earlier summaries.
func newOnly(t *transcript.Transcript, sp Split) []int {
	var out []int
	for _, mi := range sp.Summarized {
		if !t.Messages[mi].Summary {
			out = append(out, mi)
		}
	}
	return out
}

func summarizeWith(ctx context.Context, c *runEnv, f *Flags, t *transcript.Transcript, sp Split, previous Sections, meta *Meta, local func() (Sections, error)) (Sections, error) {
	if f.Backend == "local" {
		s, err := local()
		return Fold(previous, s), err
	}
	keyVar := "ANTHROPIC_API_KEY"
	model := "claude-haiku-4-5"
	if f.Backend == llm.OpenAI {
		keyVar, model = "OPENAI_API_KEY", "gpt-4o-mini"
	}
	if f.LLMModel != "" {
		model = f.LLMModel
	}
	key := c.getenv(keyVar)
	token := ""
	if f.Backend == llm.Anthropic && key == "" {
		token = c.getenv("ANTHROPIC_AUTH_TOKEN")
	}
	client := &llm.Client{
		Backend: f.Backend, BaseURL: f.BaseURL, APIKey: key, AuthToken: token, Model: model, Getenv: c.getenv,
		Timeout: f.Timeout, Retries: f.Retries, Backoff: time.Second, MaxBackoff: 30 * time.Second,
		Redact: c.redactor, // the backend receives no secret (DESIGN §4.11)
	}
	// The server the run talks to: --base-url, else OPENAI_BASE_URL or ANTHROPIC_BASE_URL,
	// else the public API. A local OpenAI-compatible server needs no key; the public APIs do.
	base := client.Base()
	if key == "" && token == "" && (f.Backend == llm.Anthropic || base == llm.DefaultBaseURL(f.Backend)) {
		return nil, fmt.Errorf("%s is not set", keyVar)
	}
	// (one breaker per server: a local one that is down does not stop the public API)
	breakerKey := base
	if base == llm.DefaultBaseURL(f.Backend) {
		breakerKey = ""
	}
	b := &llm.Breaker{Path: breakerPath(c, f.Backend, breakerKey), Limit: breakerLimit, Cooldown: breakerCooldown, Now: c.now}
	if f.Reset {
		if err := b.Reset(); err != nil {
			return nil, err
		}
	}
	if err := b.Allow(); err != nil {
		return nil, err
	}
	m := &Model{Instructions: f.Instructions, Client: client}
	s, dropped, err := m.Summarize(ctx, t, newOnly(t, sp), previous)
	if errors.Is(err, context.Canceled) {
		return nil, err // the user stopped it: not the backend's failure
	}
	if rerr := b.Record(err); errors.Is(rerr, safefile.ErrUnsafe) {
		return nil, fmt.Errorf("circuit breaker state: %w", rerr) // planted since Allow
	} else if rerr != nil {
		c.warnf("circuit breaker state: %v", rerr)
	}
	if err != nil {
		return nil, err
	}
	meta.Dropped = dropped
	if dropped > 0 {
		c.warnf("the prompt was too long for %s: the oldest %d messages were left out of the summary", model, dropped)
	}
	return s, nil
}

// breakerPath is where the circuit breaker of a backend keeps its state: in the store
// only when the user named one (--store, CTX_STORE); else in the user's state directory,
// one file per backend and base URL, beside the default stores rather than in one (a
// breaker is the user's, not a project's). "" (no state kept) when there is no home
// directory.
func breakerPath(c *runEnv, backend, baseURL string) string {
	if c.storeGiven {
		return filepath.Join(c.store, llm.BreakerFile)
	}
	if dir := c.stateDir; dir != "" {
		return llm.BreakerPath(dir, backend, baseURL)
	}
	return ""
}

// offload keeps the whole pre-summary document in the store and returns its path.
func offload(c *runEnv, data []byte) (string, error) {
	st, err := store.Create(c.store)
	if errors.Is(err, store.ErrNoDir) {
		return "", cli.Usagef("--offload: %v", err)
	}
	if err != nil {
		return "", cli.RuntimeError(err)
	}
	defer st.Close()
	st.DeferSyncIf(c.getenv)
	h, _, err := st.Put(data)
	if err != nil {
		return "", cli.RuntimeError(err)
	}
	if err := st.Append(store.Entry{Hash: h, Tool: "ctx-summarize", Source: "pre-summary document", Bytes: len(data), Lines: strings.Count(string(data), "\n"), Time: c.now()}); err != nil {
		return "", cli.RuntimeError(err)
	}
	// ctx-recall's index, derived (rebuilt when missing); under ctx-proxy, whose stages defer
	// their syncs, ctx-recall indexes it when it searches, and a temporary store is not
	// indexed (offload.Saver's rules)
	if !st.Deferred() && c.getenv(cli.StoreShownEnv) == "" {
		if err := index.Update(st); err != nil {
			c.warnf("store %q: ctx-recall's index not updated (ctx-recall will rebuild it): %v", c.store, err)
		}
	}
	shown, err := cli.ShownStore(c.store, c.getenv)
	if err != nil {
		return "", cli.RuntimeError(err)
	}
	return store.Path(shown, h), nil
}

// Write puts the summary of sections in place of the summarized messages and returns the
// new document and its tokens, as ctx-summarize writes a document read whole. Where that
// breaks one of the API's rules in a valid input (an Anthropic summary, a user message,
// next to a kept user message), ctx-repair's rules fix it.
func Write(t *transcript.Transcript, o Options, sp Split, sections Sections, meta Meta) ([]byte, int, error) {
	meta.Pinned = PinnedCount(t, sp)
	meta.Tokens -= PinnedTokens(t, sp, o.Counter)
	edits, err := Place(t, sp, Render(sections, meta))
	if err != nil {
		return nil, 0, err
	}
	out, err := t.Apply(edits)
	if err != nil {
		return nil, 0, err
	}
	fixed, merged := out, []repair.Problem(nil)
	if mayMerge(t, sp) { // as ctx-summarize decides it
		if fixed, merged, err = repair.KeepValid(t, out); err != nil {
			return nil, 0, err
		}
	}
	if after, ok := tokensAfter(t, o, sp, edits); ok && len(merged) == 0 {
		return out, after, nil
	}
	re, err := transcript.Parse(fixed, transcript.Options{Format: t.Format})
	if err != nil {
		return nil, 0, fmt.Errorf("internal error: the summarized document does not parse: %w", err)
	}
	return fixed, measure.Total(re, o.Counter), nil
}

// tokensAfter is the document's size after the edits that place the summary: the old size
// less what went, plus what came. ok is false when it cannot be worked out that way.
func tokensAfter(t *transcript.Transcript, o Options, sp Split, edits []transcript.Edit) (int, bool) {
	if len(o.PerMessage) != len(t.Messages) {
		return 0, false
	}
	added, ok := addedTokens(t, o, edits)
	return o.Tokens - sp.Tokens - moved(t, o, sp) + added, ok
}

// TextNeeded lists the spans of a document whose text summarizing sp reads: the
// summarized messages and what PlaceText names.
func TextNeeded(t *transcript.Transcript, sp Split) []transcript.Span {
	spans := PlaceText(t, sp)
	for _, mi := range sp.Summarized {
		spans = append(spans, messageText(t, mi))
	}
	return spans
}

// PlaceText lists the spans of a document whose text summarizing sp reads besides the new
// messages it summarizes: the earlier summaries it folds in, and the lines Place reads or
// edits (the first and last summarized messages, the Claude Code messages it re-chains,
// the Codex messages it moves, the messages whose pinned texts it carries over).
func PlaceText(t *transcript.Transcript, sp Split) []transcript.Span {
	if len(sp.Summarized) == 0 {
		return nil
	}
	spans := []transcript.Span{messageText(t, sp.Summarized[0]), messageText(t, sp.Summarized[len(sp.Summarized)-1])}
	for _, mi := range sp.Previous {
		spans = append(spans, messageText(t, mi))
	}
	drop := make([]bool, len(t.Messages))
	for _, mi := range sp.Summarized {
		drop[mi] = true
	}
	switch t.Format {
	case transcript.ClaudeCode:
		for _, rc := range t.RechainTargets(drop, "") {
			spans = append(spans, messageText(t, rc.Message))
		}
	case transcript.Codex:
		// The kept messages before and among the summarized ones move, and the first kept
		// after them gives the compacted record its timestamp.
		if at := afterLast(t, sp.Summarized); at >= 0 {
			for mi := 0; mi <= at; mi++ {
				if !drop[mi] && !t.Messages[mi].Header {
					spans = append(spans, messageText(t, mi))
				}
			}
		}
	}
	// The pinned texts the summary carries over.
	for _, mi := range sp.Summarized {
		if t.Messages[mi].HoldsPinned() {
			spans = append(spans, messageText(t, mi))
		}
	}
	return spans
}

// messageText is the span of a message's text: in a JSONL document its lines, from the
// first to the last (a Claude Code turn's lines may have others between them).
func messageText(t *transcript.Transcript, mi int) transcript.Span {
	m := &t.Messages[mi]
	if len(m.Lines) == 0 {
		return m.Span
	}
	s := m.Lines[0]
	for _, l := range m.Lines {
		s.Start, s.End = min(s.Start, l.Start), max(s.End, l.End)
	}
	return s
}

// chooseRestored picks the files restored after the summary: the newest content the
// summarized part shows of the files it read or changed last, but those the kept part
// shows again (read in a streamed document from the kept messages' own text), within
// --restore-files, --restore-tokens and 1/restoreShare of what is summarized, so that restoring
// never costs more than a small part of the saving.
func chooseRestored(t *transcript.Transcript, d document, sp Split, x *Extractor, f *Flags, o Options) ([]Restored, error) {
	if f.RestoreFiles == 0 || f.FileTokens == 0 {
		return nil, nil
	}
	rs := x.Restored()
	if len(rs) == 0 {
		return nil, nil
	}
	gone := map[int]bool{}
	for _, mi := range sp.Summarized {
		gone[mi] = true
	}
	newer := map[string]bool{}
	for mi := sp.Summarized[0] + 1; mi < len(t.Messages); mi++ {
		if gone[mi] || t.Messages[mi].Header {
			continue
		}
		err := d.Visit([]transcript.Span{messageText(t, mi)}, func(text string, base int) error {
			keptReads(&transcript.Transcript{Format: t.Format, Doc: text, Base: base, Messages: t.Messages}, mi, newer)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ChooseRestored(rs, newer, RestoreOptions{Files: f.RestoreFiles, FileTokens: f.FileTokens,
		Tokens: min(f.RestoreFiles*f.FileTokens, sp.Tokens/restoreShare), Counter: o.Counter}), nil
}

// localOf is Local over a document that may be streamed: each message is read on its
// own, given to the Extractor, and let go.
func localOf(t *transcript.Transcript, d document, x *Extractor, msgs []int) (Sections, error) {
	for _, mi := range msgs {
		err := d.Visit([]transcript.Span{messageText(t, mi)}, func(text string, base int) error {
			x.Add(&transcript.Transcript{Format: t.Format, Doc: text, Base: base, Messages: t.Messages}, mi)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return x.Sections(), nil
}

// addedTokens counts what placing the summary added: the summary message (and, in a
// Codex rollout, the items moved into its replacement history), measured as ctx-count
// measures them, by reading the inserted text on its own.
func addedTokens(t *transcript.Transcript, o Options, edits []transcript.Edit) (int, bool) {
	summary := ""
	for _, e := range edits {
		if e.With != "" {
			summary = e.With // the first text an edit adds is the summary
			break
		}
	}
	doc := summary
	if !t.Format.JSONL() {
		doc = `{"` + t.Format.Wire().Body() + `":[` + summary + `]}`
	}
	if summary == "" {
		return 0, false
	}
	mini, err := transcript.Parse([]byte(doc), transcript.Options{Format: t.Format, Name: "summary.jsonl"})
	if err != nil {
		return 0, false
	}
	n := 0
	for _, tokens := range measure.Of(mini, o.Counter, false).Counts().PerMessage {
		n += tokens
	}
	return n, true
}

// moved is what the messages that a Codex compacted record carries in its replacement
// history, or moves to just after it, counted where they were (they are counted again
// with the record).
func moved(t *transcript.Transcript, o Options, sp Split) int {
	if t.Format != transcript.Codex || len(sp.Summarized) == 0 {
		return 0
	}
	in := map[int]bool{}
	for _, mi := range sp.Summarized {
		in[mi] = true
	}
	n := 0
	for mi := 0; mi < afterLast(t, sp.Summarized); mi++ {
		if !in[mi] && !t.Messages[mi].Header {
			n += o.PerMessage[mi]
		}
	}
	return n
}

// mayMerge reports whether the summary message, a user message where the first
// summarized message was, can meet another user message: only the Messages API refuses
// that, and only then is the result read again for ctx-repair's rules.
func mayMerge(t *transcript.Transcript, sp Split) bool {
	if !t.Format.MessagesAPI() || len(sp.Summarized) == 0 {
		return false
	}
	gone := map[int]bool{}
	for _, mi := range sp.Summarized {
		gone[mi] = true
	}
	at := sp.Summarized[0]
	for mi := at - 1; mi >= 0; mi-- { // the kept message before it
		if m := &t.Messages[mi]; !m.Header && !gone[mi] {
			if m.Role == "user" {
				return true
			}
			break
		}
	}
	for mi := at + 1; mi < len(t.Messages); mi++ { // and after it
		if !gone[mi] {
			return t.Messages[mi].Role != "assistant"
		}
	}
	return false
}
