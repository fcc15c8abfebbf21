package snip

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-snip's command line.
type Flags struct {
	cli.Common `embed:""`

	Trigger      cli.Percent         `name:"trigger" default:"60%" placeholder:"PCT" help:"Act above this utilization of the effective window." env:"CTX_SNIP_TRIGGER"`
	Target       cli.OptionalPercent `name:"target" placeholder:"PCT" help:"Clear old results, oldest first, down to this utilization (default 10 points below --trigger)." env:"CTX_SNIP_TARGET"`
	Keep         int                 `name:"keep" default:"3" placeholder:"N" help:"Clear the newest N tool results only when a later call supersedes them." env:"CTX_SNIP_KEEP"`
	MaxSearches  int                 `name:"max-searches" default:"5" placeholder:"K" help:"Keep only the newest K results of each search tool; 0 keeps them all." env:"CTX_SNIP_MAX_SEARCHES"`
	Idle         time.Duration       `name:"idle" default:"5m" placeholder:"DURATION" help:"Microcompact once the newest message is older than this; 0 turns it off." env:"CTX_SNIP_IDLE"`
	Now          Instant             `name:"now" placeholder:"TIME" help:"The current time, RFC 3339 (for tests and replays); default the clock." env:"CTX_NOW"`
	CachedAt     Instant             `name:"cached-at" placeholder:"TIME" help:"When the prompt cache was last written (the previous request of the conversation), RFC 3339; idleness counts from then, also for documents without timestamps (ctx-proxy sets it)." env:"CTX_SNIP_CACHED_AT"`
	CacheTTL     time.Duration       `name:"cache-ttl" placeholder:"DURATION" help:"The lifetime the request asked for its prompt cache (Anthropic's cache_control ttl, 1h): the cache is not cold before it, whatever --idle says." env:"CTX_SNIP_CACHE_TTL"`
	ClearInputs  bool                `name:"clear-inputs" help:"Also replace the arguments of cleared calls with a stub." env:"CTX_SNIP_CLEAR_INPUTS"`
	NoStore      bool                `name:"no-store" help:"Clear without keeping the cleared texts in the --store directory; placeholders only say to re-run the call." env:"CTX_SNIP_NO_STORE"`
	ReadTools    []string            `name:"read-tools" sep:"," placeholder:"TOOL" help:"More tools that read files (comma list, repeatable)." env:"CTX_SNIP_READ_TOOLS"`
	SearchTools  []string            `name:"search-tools" sep:"," placeholder:"TOOL" help:"More tools that search or list files (comma list, repeatable)." env:"CTX_SNIP_SEARCH_TOOLS"`
	ClearAtLeast cli.Amount          `name:"clear-at-least" default:"5%" placeholder:"TOKENS|PCT" help:"With a warm cache, act only when clearing saves at least this: tokens (20k) or a share of the effective window (5%)." env:"CTX_SNIP_CLEAR_AT_LEAST"`
	Repay        int                 `name:"repay" default:"10" placeholder:"N" help:"With a warm cache, act only when what clearing saves pays back the prompt cache it breaks within N requests, at the model's cache prices; 0 turns the test off." env:"CTX_SNIP_REPAY"`
	DryRun       bool                `name:"dry-run" short:"n" help:"List what would be cleared and why; do not change the document."`
}

// Instant is a point in time given as RFC 3339 ("2026-03-04T05:20:12Z").
type Instant struct{ time.Time }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Instant) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("invalid time %q: want RFC 3339, e.g. 2026-03-04T05:20:12Z", b)
	}
	t.Time = v
	return nil
}

const help = `Replaces stale tool results in a conversation document with a short placeholder that
names the call (tool and main argument: file, pattern, command) and says how to get the result
back: ctx-recall --read PATH, PATH naming where it was kept in the --store directory (by
default the working directory's in ~/.local/state/ctxkit/stores; synced before the document
is written; a file of its own, or a place in a pack when a run keeps more than 8), or re-run
the call. The tool calls are kept. ctx-persist --restore puts
every cleared result back, byte for byte; --no-store clears without keeping them.

Above --trigger (60%) of the effective window it clears, in this order: a file read that a
later read of the same file supersedes; a search that a later identical search supersedes;
results of a search tool beyond its newest --max-searches (5); then results older than the
newest --keep (3), oldest first, until utilization is down to --target (50%).

With a warm prompt cache a firing must be worth the cache it breaks (every token from the
first cleared result on is written again): it must save at least --clear-at-least (5% of
the window) and pay that back within --repay (10) requests at the model's cache prices. If
clearing down to the target is not worth it, every old result is cleared; if that is not
either, nothing is, and the later tiers are left to act.

Microcompact: when the newest message is older than --idle (5m) by the transcript's
timestamps and the clock (or --now), the prompt cache has gone cold, and every result but
the newest --keep is cleared whatever the utilization. --cached-at names when the cache was
last written instead (ctx-proxy passes the time the conversation's previous request was
answered); --cache-ttl (1h, when the request asked for it) lengthens --idle. Documents
without timestamps and without --cached-at are never idle.

Below the trigger, with a warm cache, the output is the input byte for byte. The system
prompt, the newest user message and the newest assistant message are never changed.
Details in ctx-snip(1).`

// Tool returns ctx-snip's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-snip", "Clear stale tool results: re-read files, repeated searches, old results.", help, run)
}

// Examples are ctx-snip's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "clear stale results in front of a request", Command: "ctx-budget < request.json | ctx-snip > out.json"},
		{Does: "list what would be cleared from a session and why", Command: "ctx-snip -n --idle 0 SESSION.jsonl"},
		{Does: "clear a session in place as the cache-cold microcompact does", Command: "ctx-snip -i --stats SESSION.jsonl"},
	}
}

// Main runs ctx-snip and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// options turns the flags into the tier's options (without the document's measures);
// storeNamed: the user named the store (an empty name is refused); getenv reads the
// store path to write into placeholders (cli.ShownStore).
func (f *Flags) options(now time.Time, storeNamed bool, getenv func(string) string) (Options, error) {
	o := Defaults()
	var err error
	if o.Trigger, o.Target, err = cli.TriggerTarget(f.Trigger, f.Target); err != nil {
		return o, err
	}
	if f.Keep < 0 {
		return o, cli.Usagef("--keep must not be negative, got %d", f.Keep)
	}
	if f.MaxSearches < 0 {
		return o, cli.Usagef("--max-searches must not be negative, got %d", f.MaxSearches)
	}
	if f.Idle < 0 {
		return o, cli.Usagef("--idle must not be negative, got %s", f.Idle)
	}
	if f.Repay < 0 {
		return o, cli.Usagef("--repay must not be negative, got %d", f.Repay)
	}
	if f.CacheTTL < 0 {
		return o, cli.Usagef("--cache-ttl must not be negative, got %s", f.CacheTTL)
	}
	o.CachedAt, o.CacheTTL = f.CachedAt.Time, f.CacheTTL
	o.Keep, o.MaxSearches, o.Idle, o.ClearInputs, o.Repay = f.Keep, f.MaxSearches, f.Idle, f.ClearInputs, f.Repay
	o.MinSaving, o.MinShare = f.ClearAtLeast.Tokens, f.ClearAtLeast.Share
	// With no store at all (none named, no state directory for the default), a run that
	// clears nothing needs none; planDoc refuses one that would clear.
	if !f.NoStore && (f.Store != "" || storeNamed) {
		if err := offload.CheckDir(f.Store); err != nil {
			return o, cli.Usagef("--store: %v", err)
		}
		dir, err := cli.ShownStore(f.Store, getenv)
		if err != nil {
			return o, cli.RuntimeError(fmt.Errorf("store %q: %w", f.Store, err))
		}
		o.Store = dir
	}
	o.Now = now
	if !f.Now.IsZero() {
		o.Now = f.Now.Time
	}
	o.Tools = Tools{Read: nonEmpty(f.ReadTools), Search: nonEmpty(f.SearchTools)}
	return o, nil
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// New is ctx-snip as a tier of an in-process pipeline: its command line (args, and the
// CTX_ variables getenv gives) read as Main reads it. A dry run is not a tier.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, c, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	if f.DryRun {
		return nil, cli.ErrNotATier
	}
	o, err := f.options(time.Time{}, c.Given("store"), getenv)
	if err != nil {
		return nil, err
	}
	if o.Redact, err = c.Redactor(); err != nil {
		return nil, err
	}
	o.Kept = &KeptMemo{} // the tier plans request after request: what it kept, it knows
	return &Tier{O: o, M: m, Dir: f.Store, NoStore: f.NoStore, Getenv: getenv}, nil
}

func run(ctx *cli.Context, f *Flags) error {
	o, err := f.options(ctx.Now(), ctx.Given("store"), ctx.Getenv)
	if err != nil {
		return err
	}
	if o.Redact, err = ctx.Redactor(); err != nil {
		return err
	}
	// The facts of each call and result, by the block's document offset: a streamed
	// document gives them record by record in its first pass, so the whole plan is made
	// before the second pass, which only splices the placeholders in.
	var known map[int]facts
	return ctx.Run(cli.Filter{
		Reports: f.DryRun, // a list, not documents: several files too
		Counted: true,
		// The facts are looked up by the conversation's blocks only.
		LiveRecords: true,
		Record: func(_ int, rec *transcript.Transcript, c tokens.Counter) error {
			if known == nil {
				known = map[int]facts{}
			}
			for k := range rec.Messages {
				for _, b := range rec.Messages[k].Blocks {
					if b.Kind == transcript.ToolCall || b.Kind == transcript.ToolResult {
						known[b.Span.Start] = factsOf(rec, &b, o, c).detach()
					}
				}
			}
			return nil
		},
		Plan: func(d *cli.Doc) (*cli.Plan, error) {
			defer func() { known = nil }()
			return planDoc(d, f, o, known)
		},
	})
}

// planDoc clears the stale results of one document.
func planDoc(d *cli.Doc, f *Flags, o Options, known map[int]facts) (*cli.Plan, error) {
	changes, st, err := decide(d.T, o, d, func(b *transcript.Block) facts { return known[b.Span.Start] })
	if err != nil {
		return nil, err
	}
	if len(changes) > 0 && !f.DryRun && !f.NoStore && f.Store == "" {
		return nil, cli.WithHint(cli.Usagef("%v", store.ErrNoDir), "or clear without keeping the results: --no-store")
	}
	p := &cli.Plan{TokensDelta: st.TokensDelta}
	if f.DryRun || st.Stored == 0 {
		for i := range changes {
			p.Edits = append(p.Edits, changes[i].edit)
		}
	} else {
		keepIn(p, d, f, changes)
	}
	if f.DryRun {
		var list bytes.Buffer
		if err := writeList(&list, d.Name, &st, d.Context().StdoutTTY && f.Output == ""); err != nil {
			return nil, err
		}
		p.Report = list.Bytes()
	}
	p.Stats = statsOf(&st, o, f.DryRun)
	return p, nil
}

// keepIn makes p keep the texts its changes replace in the store (keeper): read in the
// second pass of a streamed document; the document is emitted only once every file is
// durable (Written, before the runner lets go of stdout or renames the -o file). A store
// that cannot be written fails the run (exit 4) and nothing is emitted.
func keepIn(p *cli.Plan, d *cli.Doc, f *Flags, changes []change) {
	ctx := d.Context()
	k := newKeeper(changes, f.Store, d.Name, ctx.Now, ctx.Warnf, ctx.Getenv)
	p.Regions = k.regions()
	p.Edit = func(i int, text string, _ int) ([]transcript.Edit, error) {
		edits, err := k.edit(i, text)
		var se *storeError
		switch {
		case errors.As(err, &se):
			return nil, failed(se.err)
		case err != nil:
			return nil, cli.RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
		}
		return edits, nil
	}
	p.Written = func(s *cli.Stats) error {
		// The document is written and the plan read: let go of it before Finish indexes
		// the stored texts, which on a large document otherwise ran with the input still
		// held, above cli's soft memory limit, where the collector runs without a pause.
		d.Release()
		n, err := k.sv.Finish()
		if err != nil {
			return failed(err)
		}
		s.Extra["new_files"] = n
		return nil
	}
	p.Close = k.sv.Close
}

// failed words a store error.
func failed(err error) error {
	return cli.WithHint(cli.RuntimeError(err), "the document was not changed; fix the store, name another with --store, or clear without keeping: --no-store")
}

// listed is one line of the --dry-run list.
type listed struct {
	File string `json:"file"`
	Item
}

// writeList writes what a run would clear: JSON lines, or a table for a person.
func writeList(w *bytes.Buffer, file string, st *Stats, forPerson bool) error {
	if !forPerson {
		lines := make([]listed, len(st.Items))
		for i, it := range st.Items {
			lines[i] = listed{File: file, Item: it}
		}
		return cli.JSONLines(w, lines...)
	}
	saved := 0
	for _, it := range st.Items {
		saved += it.Saved
	}
	if len(st.Items) == 0 {
		fmt.Fprintf(w, "%s: nothing to clear (%s)\n", human.Safe(file), st.Trigger)
		return nil
	}
	fmt.Fprintf(w, "%s: would clear %d of %d tool results, %s tokens: utilization %.0f%% -> %.0f%% (trigger: %s)\n",
		human.Safe(file), len(st.Items), st.Results, human.Thousands(saved), math.Floor(st.Utilization*100), math.Floor(st.UtilizationAfter*100), st.Trigger)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE\tLINE\tTOKENS\tREASON\tTOOL\tARGUMENT")
	for _, it := range st.Items {
		line := "-"
		if it.Line > 0 {
			line = fmt.Sprint(it.Line)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", it.Message, line, human.Thousands(it.Tokens), it.Reason, human.SafeLabel(it.Tool, 40), human.SafeLabel(it.Arg, 60))
	}
	return tw.Flush()
}
