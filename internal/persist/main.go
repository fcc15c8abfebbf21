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
	return cli.Command("ctx-persist", "Offload big tool results to a store, and bring them back exactly.", help, run)
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
	if f.Restore {
		// Restore every reference, wherever ctx-persist may have put it: also in subagent
		// lines, which a run with --sidechains offloads.
		ctx.Common.Sidechains = true
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
	dir, err := filepath.Abs(f.Store)
	if err != nil {
		return nil, cli.RuntimeError(fmt.Errorf("store %q: %w", f.Store, err))
	}
	o := Options{Threshold: f.Threshold.Int(), Preview: f.Preview.Int(), Store: dir, Counter: counter}
	sv := &saver{ctx: d.Context(), dir: f.Store, src: source(d.Name)}
	t := d.T
	p := newPlanner(t, o)
	st := p.stats()
	refs := p.candidates()
	plan := &cli.Plan{Regions: make([]transcript.Span, len(refs)), Close: sv.close}
	for i, ref := range refs {
		plan.Regions[i] = t.Block(ref).Span
	}
	plan.Edit = func(i int, text string, base int) ([]transcript.Edit, error) {
		edits, blobs := p.offload(&transcript.Transcript{Format: t.Format, Doc: text, Base: base}, refs[i], &st)
		return edits, sv.put(blobs)
	}
	plan.Written = func(s *cli.Stats) error {
		stored, err := sv.finish()
		if err != nil {
			return sv.failed(err)
		}
		p.finish(&st)
		plan.TokensDelta = st.TokensDelta
		*s = cli.Stats{
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
				"store":        o.Store,
			},
		}
		return nil
	}
	return plan, nil
}

// source names the input in the index: the absolute path of a file, or "-" for stdin.
func source(name string) string {
	if name == "-" {
		return "-"
	}
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// saver writes the plan's files into the store as they come, a few at a time so that their
// syncs overlap, and at the end appends an index line for each result that brought a new
// file. The store is created when the first file comes.
type saver struct {
	ctx *cli.Context
	dir string // the store as --store names it
	src string // the input, for the index

	s       *store.Store
	wg      sync.WaitGroup
	sem     chan struct{}
	files   map[string]*storedFile // one write per distinct file
	order   []*storedFile
	entries []pendingEntry
}

type storedFile struct {
	hash    string
	created bool
	err     error
}

// pendingEntry is an index line waiting for its files to be written.
type pendingEntry struct {
	meta      store.Entry
	text, raw *storedFile
}

// failed words a store error.
func (sv *saver) failed(err error) error {
	return cli.WithHint(cli.RuntimeError(err), "the document was not changed; fix the store or name another with --store")
}

// put starts writing the files of blobs; a blob's data is not kept once written. The error
// is the store's (it cannot be created); a write's own comes from finish.
func (sv *saver) put(blobs []Blob) error {
	if len(blobs) == 0 {
		return nil
	}
	if sv.s == nil {
		s, err := store.Create(sv.dir)
		if err != nil {
			return sv.failed(err)
		}
		sv.s, sv.sem, sv.files = s, make(chan struct{}, 4), map[string]*storedFile{}
		if s.Perm()&0o077 != 0 {
			sv.ctx.Warnf("store %q has mode %#o: other users can read the stored results (chmod 700 %s)", sv.dir, s.Perm(), shellQuote(sv.dir))
		}
	}
	add := func(h, data string) *storedFile {
		if h == "" {
			return nil
		}
		if fl := sv.files[h]; fl != nil {
			return fl
		}
		fl := &storedFile{hash: h}
		sv.files[h] = fl
		sv.order = append(sv.order, fl)
		sv.wg.Add(1)
		sv.sem <- struct{}{}
		go func() {
			defer sv.wg.Done()
			defer func() { <-sv.sem }()
			got, created, err := sv.s.Put([]byte(data))
			if err == nil && got != fl.hash {
				err = fmt.Errorf("store %q: internal: %s stored as %s", sv.dir, fl.hash, got)
			}
			fl.created, fl.err = created, err // read only after wg.Wait
		}()
		return fl
	}
	for _, b := range blobs {
		sv.entries = append(sv.entries, pendingEntry{meta: b.Meta, text: add(b.Hash, b.Data), raw: add(b.RawHash, b.RawData)})
	}
	return nil
}

// finish waits for the files, then appends the index lines. It returns how many files were
// new.
func (sv *saver) finish() (int, error) {
	if sv.s == nil {
		return 0, nil
	}
	sv.wg.Wait()
	n := 0
	for _, fl := range sv.order {
		if fl.err != nil {
			return 0, fl.err
		}
		if fl.created {
			n++
		}
	}
	now := sv.ctx.Now().UTC().Truncate(time.Second)
	var entries []store.Entry
	for _, pe := range sv.entries {
		if pe.text.created || pe.raw != nil && pe.raw.created {
			pe.text.created = false // one line per new file, not per reference to it
			if pe.raw != nil {
				pe.raw.created = false
			}
			e := pe.meta
			e.Source, e.Time = sv.src, now
			entries = append(entries, e)
		}
	}
	if err := sv.s.Append(entries...); err != nil {
		return 0, err
	}
	return n, nil
}

// close waits for writes in flight and closes the store.
func (sv *saver) close() {
	if sv.s != nil {
		sv.wg.Wait()
		sv.s.Close()
	}
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
	edits, st, err := Restore(t, get)
	if s != nil {
		s.Close()
	}
	if err != nil {
		name := fmt.Sprintf("%q", d.Name)
		if d.Name == "-" {
			name = "stdin"
		}
		e := cli.RuntimeError(fmt.Errorf("restore %s: %w", name, err))
		if errors.Is(err, store.ErrNoStore) || errors.Is(err, store.ErrNotFound) {
			return nil, cli.WithHint(e, "name the store the document was persisted with: --store DIR or CTX_STORE")
		}
		return nil, e
	}
	trigger := "no references"
	if st.Restored > 0 {
		trigger = "restore"
	}
	return &cli.Plan{
		Edits: edits, CountOutput: len(edits) > 0,
		Stats: cli.Stats{Items: st.Restored, Trigger: trigger, Extra: map[string]any{"bytes_restored": st.Bytes}},
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
