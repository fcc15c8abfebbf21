package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/count"
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
(--store, .ctx-store) and leaves in its place the first lines (about --preview, 2 KB) and a
reference that names the stored file, its size in bytes, lines and tokens, and tells the
model how to read it all. --restore puts every result back, byte for byte; --list prints
the store's index.

Each file is synced to disk before any reference to it is emitted. Below the threshold the
output is the input, byte for byte, and the store is not touched. Details in ctx-persist(1).`

// Tool returns ctx-persist's description for the runner.
func Tool() *cli.Tool {
	f := &Flags{}
	return &cli.Tool{
		Name:    "ctx-persist",
		Summary: "Offload big tool results to a store, and bring them back exactly.",
		Help:    help,
		Grammar: f,
		Common:  func() *cli.Common { return &f.Common },
		Run:     func(ctx *cli.Context) error { return run(ctx, f) },
	}
}

// Main runs ctx-persist and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if strings.TrimSpace(f.Store) == "" {
		return cli.Usagef("--store: empty directory name")
	}
	if strings.ContainsAny(f.Store, "\n\r") {
		return cli.Usagef("--store: a directory name with a line break cannot be written in a reference")
	}
	if f.List {
		return list(ctx, f)
	}
	ins, err := ctx.Documents(false)
	if err != nil {
		return err
	}
	for _, in := range ins {
		if f.Restore {
			err = restoreOne(ctx, f, in)
		} else {
			err = persistOne(ctx, f, in)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func persistOne(ctx *cli.Context, f *Flags, in cli.Input) error {
	t, err := ctx.Parse(in)
	if err != nil {
		return err
	}
	counter, err := ctx.Counter(t.Format)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(f.Store)
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("store %q: %w", f.Store, err))
	}
	o := Options{Threshold: f.Threshold.Int(), Preview: f.Preview.Int(), Store: dir, Counter: counter}
	edits, blobs, st := Plan(t, o)
	stored := 0
	if len(blobs) > 0 {
		// Every file is durable before the document that refers to it is emitted: the
		// runner writes stdout (or renames the -o file) only after Run returns.
		if stored, err = save(ctx, f.Store, blobs, source(in)); err != nil {
			return cli.WithHint(cli.RuntimeError(err), "the document was not changed; fix the store or name another with --store")
		}
	}
	out, err := t.Apply(edits)
	if err != nil {
		return cli.RuntimeError(err)
	}
	if err := ctx.WriteDocument(in, out); err != nil {
		return err
	}
	if !ctx.Common.Stats {
		return nil
	}
	before := count.Total(t, counter)
	return ctx.WriteStats(cli.Stats{
		File: in.Name, Format: string(t.Format),
		TokensBefore: before, TokensAfter: before + st.TokensDelta,
		Items: st.Texts, Trigger: st.Trigger,
		Extra: map[string]any{
			"threshold":    o.Threshold,
			"results":      st.Results,
			"offloaded":    st.Offloaded,
			"already":      st.Already,
			"protected":    st.Protected,
			"bytes_stored": st.BytesStored,
			"bytes_left":   st.BytesLeft,
			"raw":          st.Raw,
			"new_files":    stored,
			"store":        dir,
		},
	})
}

// source names the input in the index: the absolute path of a file, or "-" for stdin.
func source(in cli.Input) string {
	if in.IsStdin() {
		return "-"
	}
	if abs, err := filepath.Abs(in.Name); err == nil {
		return abs
	}
	return in.Name
}

// save writes the plan's files into the store, a few at a time so that their syncs
// overlap, and appends an index line for each result that brought a new file. It returns
// how many files were new.
func save(ctx *cli.Context, dir string, blobs []Blob, src string) (int, error) {
	s, err := store.Create(dir)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if s.Perm()&0o077 != 0 {
		ctx.Warnf("store %q has mode %#o: other users can read the stored results (chmod 700 %s)", dir, s.Perm(), shellQuote(dir))
	}
	type file struct {
		hash, data string
		created    bool
		err        error
	}
	files := map[string]*file{} // one write per distinct file
	var order []*file
	add := func(h, data string) {
		if h != "" && files[h] == nil {
			files[h] = &file{hash: h, data: data}
			order = append(order, files[h])
		}
	}
	for _, b := range blobs {
		add(b.Hash, b.Data)
		add(b.RawHash, b.RawData)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, fl := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var h string
			h, fl.created, fl.err = s.Put([]byte(fl.data))
			if fl.err == nil && h != fl.hash {
				fl.err = fmt.Errorf("store %q: internal: %s stored as %s", dir, fl.hash, h)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, fl := range order {
		if fl.err != nil {
			return 0, fl.err
		}
		if fl.created {
			n++
		}
	}
	now := ctx.Now().UTC().Truncate(time.Second)
	var entries []store.Entry
	for _, b := range blobs {
		text, raw := files[b.Hash], files[b.RawHash]
		if text.created || raw != nil && raw.created {
			text.created = false // one line per new file, not per reference to it
			if raw != nil {
				raw.created = false
			}
			e := b.Meta
			e.Source, e.Time = src, now
			entries = append(entries, e)
		}
	}
	if err := s.Append(entries...); err != nil {
		return 0, err
	}
	return n, nil
}

func restoreOne(ctx *cli.Context, f *Flags, in cli.Input) error {
	// Restore every reference, wherever ctx-persist may have put it: also in subagent
	// lines, which a run with --sidechains offloads.
	ctx.Common.Sidechains = true
	t, err := ctx.Parse(in)
	if err != nil {
		return err
	}
	if !bytes.Contains(in.Data, []byte(MarkerPrefix)) {
		return ctx.WriteDocument(in, in.Data)
	}
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
	edits, st, err := Restore(t, get)
	if s != nil {
		s.Close()
	}
	if err != nil {
		e := cli.RuntimeError(fmt.Errorf("restore %s: %w", displayName(in), err))
		if errors.Is(err, store.ErrNoStore) || errors.Is(err, store.ErrNotFound) {
			return cli.WithHint(e, "name the store the document was persisted with: --store DIR or CTX_STORE")
		}
		return e
	}
	out, err := t.Apply(edits)
	if err != nil {
		return cli.RuntimeError(err)
	}
	if err := ctx.WriteDocument(in, out); err != nil {
		return err
	}
	if !ctx.Common.Stats {
		return nil
	}
	counter, err := ctx.Counter(t.Format)
	if err != nil {
		return err
	}
	before := count.Total(t, counter)
	after := before
	if len(edits) > 0 {
		rt, err := transcript.Parse(out, transcript.Options{Format: t.Format, Path: ctx.Common.Path, Sidechains: true, Name: in.Name})
		if err != nil {
			return cli.RuntimeError(fmt.Errorf("internal: restored document does not parse: %w", err))
		}
		after = count.Total(rt, counter)
	}
	trigger := "no references"
	if st.Restored > 0 {
		trigger = "restore"
	}
	return ctx.WriteStats(cli.Stats{
		File: in.Name, Format: string(t.Format),
		TokensBefore: before, TokensAfter: after, Saved: before - after,
		Items: st.Restored, Trigger: trigger,
		Extra: map[string]any{"bytes_restored": st.Bytes},
	})
}

func displayName(in cli.Input) string {
	if in.IsStdin() {
		return "stdin"
	}
	return fmt.Sprintf("%q", in.Name)
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
		_, err := ctx.Stdout.Write(out.Bytes())
		return err
	}
	for _, e := range entries {
		out.Write(e.Line)
		out.WriteByte('\n')
	}
	if f.Output != "" {
		return ctx.WriteDocument(cli.Input{Name: "-"}, out.Bytes())
	}
	_, err = ctx.Stdout.Write(out.Bytes())
	return err
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
	fmt.Fprintf(w, "%d %s stored in %s; read one with: cat %s\n", len(entries), plural(len(entries), "result"),
		shellQuote(dir), shellQuote(dir+string(filepath.Separator))+"FILE")
}

// cell keeps a table cell on one line and readable.
func cell(s string, width int) string {
	if s == "" {
		return "-"
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
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
