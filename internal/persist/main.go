package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-persist's command line.
type Flags struct {
	cli.Common `embed:""`

	Threshold cli.Size `name:"threshold" default:"30KB" placeholder:"SIZE" help:"Offload tool results whose text is larger than SIZE (30KB = 30,000 bytes)." env:"CTX_PERSIST_THRESHOLD"`
	Preview   cli.Size `name:"preview" default:"2KB" placeholder:"SIZE" help:"Leave about SIZE of a stored result's first lines in place; 0 leaves none." env:"CTX_PERSIST_PREVIEW"`
	Restore   bool     `name:"restore" xor:"mode" help:"Put every stored result back, byte for byte; fails if a stored file is missing or altered."`
	List      bool     `name:"list" xor:"mode" help:"Print the store's index: a table on a terminal, JSON lines when piped."`
}

const help = `Writes every tool result larger than --threshold (30 KB) to a content-addressed store
(--store; by default the working directory's, in ~/.local/state/ctxkit/stores, outside
the work tree) and leaves in its place the first lines (about --preview, 2 KB) and a
reference that names the stored file, its size in bytes, lines and tokens, and tells the
model how to read it all. --restore puts every result back, byte for byte; --list prints
the store's index.

Each file is synced to disk before any reference to it is emitted. Below the threshold the
output is the input, byte for byte, and the store is not touched. Details in ctx-persist(1).`

// Tool returns ctx-persist's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-persist", "Offload big tool results to a store, and bring them back exactly.", help, run)
}

// Examples are ctx-persist's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "offload results above 10 KB, then get the original back", Command: "ctx-persist --threshold 10KB convo.json > persisted.json\n  ctx-persist --restore persisted.json | cmp - convo.json"},
		{Does: "the cheap tiers of the pipeline, the reversible one first", Command: "ctx-persist < convo.json | ctx-budget | ctx-snip > smaller.json"},
		{Does: "list the store's index as JSON lines", Command: "ctx-persist --list | jq -r .hash"},
	}
}

// Main runs ctx-persist and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

// New is ctx-persist as a tier of an in-process pipeline: its command line (args, and the
// CTX_ variables getenv gives) read as Main reads it. --restore and --list are not tiers.
func New(args []string, getenv func(string) string) (pipeline.Tier, error) {
	f, c, m, err := cli.ConfigureStage[Flags](Tool(), args, getenv)
	if err != nil {
		return nil, err
	}
	if f.Restore || f.List {
		return nil, cli.ErrNotATier
	}
	if f.Store != "" || c.Given("store") {
		if err := offload.CheckDir(f.Store); err != nil {
			return nil, cli.Usagef("--store: %v", err)
		}
	}
	dir, err := cli.ShownStore(f.Store, getenv)
	if err != nil {
		return nil, cli.RuntimeError(fmt.Errorf("store %q: %w", f.Store, err))
	}
	rd, err := c.Redactor()
	if err != nil {
		return nil, err
	}
	return &Tier{O: Options{Threshold: f.Threshold.Int(), Preview: f.Preview.Int(), Store: dir, Redact: rd}, Dir: f.Store, M: m, Getenv: getenv}, nil
}

func run(ctx *cli.Context, f *Flags) error {
	// No store at all (none named, no state directory for the default) fails only a run
	// that needs one (store.ErrNoDir, from the store when it is made or opened).
	if f.Store != "" || ctx.Given("store") {
		if err := offload.CheckDir(f.Store); err != nil {
			return cli.Usagef("--store: %v", err)
		}
	}
	if f.List {
		return list(ctx, f)
	}
	if f.Restore {
		// Restore every reference, wherever ctx-persist may have put it: also in subagent
		// lines, which a run with --sidechains offloads.
		ctx.AllThreads = true
		return ctx.Run(cli.Filter{Whole: true, Plan: func(d *cli.Doc) (*cli.Plan, error) { return planRestore(d, f) }})
	}
	return ctx.Run(cli.Filter{Plan: func(d *cli.Doc) (*cli.Plan, error) { return planPersist(d, f) }})
}

// planPersist offloads the large results of one document: only the results that may be
// above the threshold are read (in the second pass of a streamed document), stored, and
// replaced by their references. Every file is durable before the document that refers to
// it is emitted: the runner writes stdout (or renames the -o file) only after Run returns.
func planPersist(d *cli.Doc, f *Flags) (*cli.Plan, error) {
	counter, err := d.Counter()
	if err != nil {
		return nil, err
	}
	dir, err := cli.ShownStore(f.Store, d.Context().Getenv)
	if err != nil {
		return nil, cli.RuntimeError(fmt.Errorf("store %q: %w", f.Store, err))
	}
	rd, err := d.Context().Redactor()
	if err != nil {
		return nil, err
	}
	o := Options{Threshold: f.Threshold.Int(), Preview: f.Preview.Int(), Store: dir, Counter: counter, Redact: rd}
	r := newOffloading(d.T, o, f.Store, d.Name, d.Context().Now, d.Context().Warnf, d.Context().Getenv)
	plan := &cli.Plan{Regions: r.regions(), Close: r.sv.Close, EditConcurrently: r.concurrent()}
	plan.Edit = func(i int, text string, base int) ([]transcript.Edit, error) { return r.edit(i, text, base), nil }
	plan.Commit = func(i int) error {
		if err := r.commit(i); err != nil {
			return failed(err)
		}
		return nil
	}
	plan.Written = func(s *cli.Stats) error {
		st, delta, err := r.finish()
		if err != nil {
			return failed(err)
		}
		plan.TokensDelta, *s = delta, st
		return nil
	}
	return plan, nil
}

// failed words a store error.
func failed(err error) error {
	if errors.Is(err, store.ErrNoDir) {
		return cli.Usagef("%v", store.ErrNoDir)
	}
	return cli.WithHint(cli.RuntimeError(err), "the document was not changed; fix the store or name another with --store")
}

// planRestore puts back every stored result of one document, read whole.
func planRestore(d *cli.Doc, f *Flags) (*cli.Plan, error) {
	t := d.T
	var s *store.Store
	get := func(h string) ([]byte, error) {
		if s == nil {
			var err error
			if s, err = store.Open(f.Store); err != nil {
				return nil, err
			}
		}
		return s.Get(h)
	}
	o := transcript.Options{Format: t.Format, Path: f.Path, AllThreads: true, Name: d.Name}
	out, st, err := RestoreAll(t, o, get)
	if s != nil {
		s.Close()
	}
	if err != nil {
		name := fmt.Sprintf("%q", d.Name)
		if d.Name == "-" {
			name = "stdin"
		}
		if errors.Is(err, store.ErrNoDir) {
			return nil, cli.Usagef("restore %s: %v", name, store.ErrNoDir)
		}
		e := cli.RuntimeError(fmt.Errorf("restore %s: %w", name, err))
		if errors.Is(err, store.ErrNoStore) || errors.Is(err, store.ErrNotFound) {
			return nil, cli.WithHint(e, "name the store the document was persisted with (or snipped with): --store DIR or CTX_STORE")
		}
		return nil, e
	}
	trigger := "no references"
	if out != nil {
		trigger = "restore"
	}
	return &cli.Plan{
		Output: out, CountOutput: out != nil,
		Stats: cli.Stats{Items: st.Restored + st.Cleared, Trigger: trigger, Extra: map[string]any{"bytes_restored": st.Bytes, "cleared_restored": st.Cleared}},
	}, nil
}

// list prints the index: a table for people, the index lines as they are for programs.
func list(ctx *cli.Context, f *Flags) error {
	switch {
	case len(f.Files) > 0:
		return cli.Usagef("--list reads the store, not documents; drop the file arguments")
	case f.InPlace:
		return cli.Usagef("--list does not change documents; --in-place does not apply")
	}
	s, err := store.Open(f.Store)
	if errors.Is(err, store.ErrNoDir) {
		return cli.Usagef("list: %v", store.ErrNoDir)
	}
	if err != nil {
		e := cli.RuntimeError(fmt.Errorf("list: %w", err))
		if errors.Is(err, store.ErrNoStore) {
			return cli.WithHint(e, "name the store with --store DIR or CTX_STORE")
		}
		return e
	}
	defer s.Close()
	entries, bad, err := s.Index()
	if err != nil {
		return cli.RuntimeError(err)
	}
	if bad > 0 {
		ctx.Warnf("%d index lines are not valid JSON; skipped", bad)
	}
	var out bytes.Buffer
	if ctx.StdoutTTY && f.Output == "" {
		table(&out, entries, s.Dir())
	} else {
		for _, e := range entries {
			out.Write(e.Line)
			out.WriteByte('\n')
		}
	}
	return ctx.WriteReport(out.Bytes())
}

func table(w io.Writer, entries []store.Entry, dir string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTOOL\tCALL\tBYTES\tLINES\tTOKENS\tSOURCE\tFILE")
	for _, e := range entries {
		file := e.Hash
		if store.ValidHash(e.Hash) {
			file = e.Hash[:2] + "/" + e.Hash
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04"),
			cell(e.Tool, 24), cell(e.ToolCallID, 24), e.Bytes, e.Lines, e.Tokens, cell(e.Source, 40), cell(file, 70))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d %s stored in %s; read one with: ctx-recall --read %s\n", len(entries), plural(len(entries), "result"),
		human.Safe(offload.ShellQuote(dir)), human.Safe(offload.ShellQuote(dir+string(filepath.Separator)))+"FILE")
}

// cell keeps a table cell on one line and readable: what the index holds came from a
// transcript, its control characters shown escaped.
func cell(s string, width int) string {
	if s == "" {
		return "-"
	}
	s = human.Safe(s)
	if len(s) > width {
		// Keep the end of long names: paths and ids differ there.
		i := len(s) - width
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return "…" + s[i:]
	}
	return s
}
