// Package recall is ctx-recall, the retrieval half of offloading: it finds again what the
// tiers put in the offload store (ctx-persist's offloaded results, ctx-snip's cleared
// results and inputs, ctx-summarize --offload's pre-summary documents) and gives it back,
// for a person at a shell and for an agent that runs it as a tool: a ranked search over
// words and identifiers (the index of internal/recall/index), exact phrases and regular
// expressions, with excerpts, within a token budget (search.go); an item's metadata, an
// outline of it (outline.go) and the whole of it or one part (read.go).
package recall

import (
	"errors"
	"io"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Flags is ctx-recall's command line.
type Flags struct {
	cli.Common `embed:""`

	Phrase    bool      `name:"phrase" xor:"match" help:"Find the query as one exact phrase (case does not matter)."`
	Regexp    bool      `name:"regexp" xor:"match" help:"Find the query as a regular expression (RE2 syntax); reads every stored text."`
	MaxTokens cli.Count `name:"max-tokens" default:"2000" placeholder:"TOKENS" help:"Most tokens of output (search, --outline; --read only when given)." env:"CTX_RECALL_MAX_TOKENS"`
	Limit     int       `name:"limit" default:"10" placeholder:"N" help:"Show at most N items."`
	Excerpts  int       `name:"excerpts" default:"3" placeholder:"N" help:"Show at most N matching lines of each item."`
	JSON      bool      `name:"json" help:"Write JSON for programs instead of text."`
	Meta      string    `name:"meta" xor:"mode,match" placeholder:"REF" help:"Describe one stored item: size, time, tool, tool call id, tokens, where it came from."`
	Outline   string    `name:"outline" xor:"mode,match" placeholder:"REF" help:"Outline one stored item: definitions of code, failures and errors of output, keys of JSON, headings of Markdown."`
	Read      string    `name:"read" xor:"mode,match" placeholder:"REF" help:"Write one stored item, exactly as stored, or a part of it (--lines, --section)."`
	Lines     string    `name:"lines" xor:"part" placeholder:"A-B" help:"With --read, only lines A to B (1-based: 40-80, 40-, -80, 12)."`
	Section   string    `name:"section" xor:"part" placeholder:"NAME" help:"With --read, only the part the outline calls NAME (a heading, a definition, a key)."`
}

// FileArgs: ctx-recall's arguments are the query's words (Common's file arguments,
// renamed: kong takes one list of arguments).
func (*Flags) FileArgs() cli.Args {
	return cli.Args{Name: "query", Help: "Words, identifiers, paths or \"quoted phrases\" to find in the store."}
}

// OmitCommon: ctx-recall reads the store, not documents; what it gives back was redacted
// when it was stored (unless the tier that stored it was told not to).
func (*Flags) OmitCommon() []string {
	return []string{"in-place", "path", "sidechains", "format", "model", "window", "reserve", "overhead", "latest", "agent", "stats", "stats-file", "redact", "no-redact", "secrets"}
}

const help = `Finds what the tiers kept in the offload store (--store; by default the working
directory's, the one ctx-persist, ctx-snip and ctx-summarize --offload write to) and
gives it back. With a QUERY it lists the stored items that match, best first (BM25 over
words and identifiers: parseConfig, parse_config and "parse config" find one another, a
path finds its names), each with its reference, tool, tool call id, tokens, when it was
stored and its matching lines, numbered, within --max-tokens. "Quoted" parts of the query
must appear as they are; --phrase takes the whole query so, --regexp as a regular
expression. REF is what a placeholder names: the stored file's path, its SHA-256, or the
first digits of it (at least 6). --meta describes an item, --outline shows its shape,
--read writes it back exactly (--lines A-B, --section NAME for a part).

An index is kept beside the store (DIR/recall) and brought up to date as the tiers write;
ctx-recall rebuilds it when it is missing or behind. Exit status 1 when nothing matches.
Details in ctx-recall(1).`

// Tool returns ctx-recall's description for the runner.
func Tool() *cli.Tool {
	return cli.Command("ctx-recall", "Find and read back what was offloaded to the store.", help, run)
}

// Examples are ctx-recall's in --help.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "find what an earlier tool result said about a function", Command: "ctx-recall parseConfig error"},
		{Does: "an exact phrase and a regular expression", Command: "ctx-recall '\"connection refused\" postgres'\n  ctx-recall --regexp 'panic: .*nil map'"},
		{Does: "follow a placeholder back to the exact bytes", Command: "ctx-recall --outline 5ff2c962d9c6\n  ctx-recall --read 5ff2c962d9c6 --lines 120-180"},
	}
}

// Main runs ctx-recall and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Main(Tool(), args, stdin, stdout, stderr, getenv)
}

func run(ctx *cli.Context, f *Flags) error {
	if f.Store != "" || ctx.Given("store") {
		if err := offload.CheckDir(f.Store); err != nil {
			return cli.Usagef("--store: %v", err)
		}
	}
	query := strings.TrimSpace(strings.Join(f.Files, " "))
	ref := f.Meta + f.Outline + f.Read
	switch {
	case (f.Lines != "" || f.Section != "") && f.Read == "":
		return cli.Usagef("--lines and --section go with --read REF")
	case ref != "" && query != "":
		return cli.Usagef("give a QUERY or a REF (--meta, --outline, --read), not both")
	case ref == "" && query == "":
		return cli.WithHint(cli.Usagef("nothing to find: give a QUERY, or --meta, --outline or --read REF"), "ctx-recall 'words to find', or ctx-recall --help")
	case f.Limit < 1:
		return cli.Usagef("--limit: %d is not a number of items (1 or more)", f.Limit)
	case f.MaxTokens.Int() < 1:
		return cli.Usagef("--max-tokens: %d is too few (1 or more)", f.MaxTokens.Int())
	}
	counter, err := ctx.Counter(transcript.Anthropic, "")
	if err != nil {
		return err
	}
	r := &recaller{ctx: ctx, f: f, count: counter}
	switch {
	case f.Meta != "":
		return r.meta(f.Meta)
	case f.Outline != "":
		return r.outline(f.Outline)
	case f.Read != "":
		return r.read(f.Read)
	}
	return r.search(query)
}

// recaller is one run.
type recaller struct {
	ctx   *cli.Context
	f     *Flags
	count tokens.Counter
}

// open opens the store: the one REF's path names when it is a stored file's path in a
// store that exists, else --store (the default one). The placeholders name their store,
// so an agent that runs elsewhere, or a user whose --store differs, still finds the item.
func (r *recaller) open(ref string) (*store.Store, error) {
	if dir := storeOfPath(ref); dir != "" && dir != r.f.Store {
		if s, err := store.Open(dir); err == nil {
			return s, nil
		}
	}
	s, err := store.Open(r.f.Store)
	switch {
	case errors.Is(err, store.ErrNoDir):
		return nil, cli.Usagef("%v", store.ErrNoDir)
	case errors.Is(err, store.ErrNoStore):
		return nil, cli.WithHint(cli.RuntimeError(err), "nothing was offloaded from this directory yet; name the store with --store DIR or CTX_STORE")
	case err != nil:
		return nil, cli.RuntimeError(err)
	}
	return s, nil
}

// write writes the output: to -o when given, else stdout.
func (r *recaller) write(b []byte) error { return r.ctx.WriteReport(b) }

// notFound is exit 1 with nothing more on stderr: what was searched is said on stdout.
func notFound() error { return cli.CheckFailed(nil) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
