package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// parse reads an input as a conversation document with the shared reading flags
// (--format, --path, --sidechains). A document that cannot be read is an input error
// (exit 3) naming the file.
func (c *Context) parse(in input) (*transcript.Transcript, error) {
	o, err := c.readOptions(in.Name)
	if err != nil {
		return nil, err
	}
	t, err := transcript.Parse(in.Data, o)
	if err != nil {
		return nil, inputError(in.Name, o.Format, err, c.textHint)
	}
	c.readWarnings(in.Name, t.Warnings)
	return t, nil
}

// readWarnings prints, once for each reading of an input, how the reader departed from
// the format's rules so as not to lose messages: the user learns that the conversation
// read is not the one the format's rules give.
func (c *Context) readWarnings(name string, warnings []string) {
	name = DisplayName(name)
	for _, w := range warnings {
		c.Warnf("%s: %s", name, w)
	}
}

func (c *Context) readOptions(name string) (transcript.Options, error) {
	format, err := transcript.ParseFormat(c.Common.Format)
	if err != nil {
		return transcript.Options{}, Usagef("%v", err)
	}
	return transcript.Options{
		Format:     format,
		Path:       c.Common.Path,
		Sidechains: c.Common.Sidechains,
		AllThreads: c.AllThreads,
		Name:       name,
	}, nil
}

// inputError words a document that cannot be read: an input error (exit 3) naming the file.
func inputError(name string, format transcript.Format, err error, textHint string) error {
	name = DisplayName(name)
	e := InputError(fmt.Errorf("%s: %w", name, err))
	var te *transcript.Error
	switch {
	case errors.As(err, &te) && te.Hint != "":
		e = WithHint(e, te.Hint)
	case textHint != "" && notJSON(te):
		e = WithHint(e, textHint)
	case format == "":
		e = WithHint(e, "if the format was misdetected, name it with --format")
	}
	return e
}

// notJSON reports whether a reading error says the input does not even open as JSON
// (plain text), as transcript.Parse words it: then no --format would read it either.
func notJSON(te *transcript.Error) bool {
	return te != nil && te.Line == 0 && strings.HasPrefix(te.Msg, "expected a JSON object or array, found ")
}

// Counter returns the token counter for a document of the given format, sent to model
// ("" when it names none): --tokenizer, or with "auto" the format's default. The estimate
// of a document Claude reads (an Anthropic format) is the Claude estimate of the model's
// family (tokens.Claude).
func (c *Context) Counter(format transcript.Format, model string) (tokens.Counter, error) {
	name := c.Common.Tokenizer
	if name == "" || name == "auto" {
		name = tokens.DefaultTokenizer(string(format))
	}
	if name == "api" {
		// The endpoint counts whole documents (Doc.countByAPI); blocks are counted with
		// the format's estimate, calibrated on that count.
		name = tokens.DefaultTokenizer(string(format))
	}
	if name == "estimate" && measure.ProviderOf(format) == "anthropic" {
		return tokens.Claude(model), nil
	}
	counter, err := tokens.NewCached(name, c.countCache(name))
	if err != nil {
		return nil, Usagef("--tokenizer: %v", err)
	}
	return counter, nil
}

// countCache is the run's shared cache of exact counts for the counter called name (see
// tokens.DiskCache): in $CTX_CACHE_DIR, by default $XDG_CACHE_HOME/ctxkit or
// ~/.cache/ctxkit; none when CTX_CACHE_DIR is "off" or no directory is known. The runner
// writes it when the run has succeeded, before the output goes out, so the next tool of a
// pipeline finds it.
func (c *Context) countCache(name string) *tokens.DiskCache {
	c.countsMu.Lock() // documents may be counted in parallel (ctx-count)
	defer c.countsMu.Unlock()
	if d, ok := c.counts[name]; ok {
		return d
	}
	d := tokens.NewDiskCache(c.cacheDir(), name)
	if d != nil {
		// A cache that fails its checks (a link, another user's, open to others) only
		// costs time, so the run goes on; the user hears of it once.
		d.Warn = func(msg string) { c.Warnf("%s", msg) }
	}
	if c.counts == nil {
		c.counts = map[string]*tokens.DiskCache{}
	}
	c.counts[name] = d
	return d
}

// CacheDir is ctxkit's cache directory (cacheDir), for a tool that keeps a cache of its
// own there (ctx-count --sessions).
func (c *Context) CacheDir() string { return c.cacheDir() }

// cacheDir is ctxkit's cache directory: $CTX_CACHE_DIR, by default
// $XDG_CACHE_HOME/ctxkit or ~/.cache/ctxkit; "" when CTX_CACHE_DIR is "off" or no
// directory is known.
func (c *Context) cacheDir() string {
	dir := c.Getenv("CTX_CACHE_DIR")
	switch {
	case dir == "off":
		return ""
	case dir != "":
		return dir
	case c.Getenv("XDG_CACHE_HOME") != "":
		return filepath.Join(c.Getenv("XDG_CACHE_HOME"), "ctxkit")
	case c.Getenv("HOME") != "":
		return filepath.Join(c.Getenv("HOME"), ".cache", "ctxkit")
	}
	return ""
}

// flushCounts writes the run's count caches.
func (c *Context) flushCounts() {
	c.countsMu.Lock()
	defer c.countsMu.Unlock()
	for _, d := range c.counts {
		d.Flush()
	}
}

// Window works out the window to measure a conversation against (measure.Window):
// --model, --window and --reserve; without --model, the model the conversation names
// (docModel) when the table knows it, or the window it recorded in its usage figures
// (Codex), or the default window.
func (c *Context) Window(docModel string, usage []transcript.Usage) (tokens.Budget, error) {
	ch := measure.Choice{Model: c.Common.Model, Window: c.Common.Window.Int()}
	if c.Common.Reserve != nil {
		r := c.Common.Reserve.Int()
		ch.Reserve = &r
	}
	w, err := measure.Window(ch, docModel, usage)
	if err != nil {
		return w, Usagef("%v", err)
	}
	return w, nil
}

// ReadConversation reads and parses a conversation named by a flag (not a document
// argument: ctx-count --vs OTHER), read whole, with the reading flags.
func (c *Context) ReadConversation(name string) (*transcript.Transcript, error) {
	if name == "-" {
		return nil, Usagef("stdin cannot be read twice; name a file")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}
	return c.parse(input{Name: name, Data: data})
}

// ReadOptions are the options the document was read with (--format as detected, --path,
// --sidechains): another version of it (a tier's output) reads the same way with them.
func (d *Doc) ReadOptions() transcript.Options {
	o, _ := d.c.readOptions(d.Name)
	if d.T != nil {
		o.Format = d.T.Format
	}
	return o
}
