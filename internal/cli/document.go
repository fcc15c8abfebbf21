package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Parse reads an input as a conversation document with the shared reading flags
// (--format, --path, --sidechains). A document that cannot be read is an input error
// (exit 3) naming the file.
func (c *Context) Parse(in Input) (*transcript.Transcript, error) {
	o, err := c.readOptions(in.Name)
	if err != nil {
		return nil, err
	}
	t, err := transcript.Parse(in.Data, o)
	if err != nil {
		return nil, inputError(in.Name, o.Format, err)
	}
	c.readWarnings(in.Name, t.Warnings)
	return t, nil
}

// readWarnings prints, once for each reading of an input, how the reader departed from
// the format's rules so as not to lose messages: the user learns that the conversation
// read is not the one the format's rules give.
func (c *Context) readWarnings(name string, warnings []string) {
	if name == "-" {
		name = "stdin"
	}
	for _, w := range warnings {
		c.Warnf("%s: %s", name, w)
	}
}

// Stream reads input name (a file, or "-" for stdin) as Parse would, but a Claude Code or
// Codex JSONL transcript is streamed (transcript.Stream): fn sees each record as it is
// read, and the result is the conversation's Outline, in memory that does not grow with
// the size of the messages. Any other document is read whole and parsed, and returned as
// a Transcript; fn is not called. Exactly one of the two results is set on success.
// Errors are worded as Parse and Inputs word them; fn's own are returned as they are.
func (c *Context) Stream(name string, fn func(seq int, rec *transcript.Transcript) error) (*transcript.Transcript, *transcript.Outline, error) {
	o, err := c.readOptions(name)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var fnErr error
	outline, data, err := transcript.Stream(r, o, func(seq int, rec *transcript.Transcript) error {
		fnErr = fn(seq, rec)
		return fnErr
	})
	var te *transcript.Error
	switch {
	case err == nil:
	case fnErr != nil:
		return nil, nil, fnErr
	case errors.As(err, &te):
		return nil, nil, inputError(name, o.Format, err)
	case name == "-":
		return nil, nil, RuntimeError(fmt.Errorf("read stdin: %w", err))
	default:
		return nil, nil, RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}
	if outline != nil {
		c.readWarnings(name, outline.Warnings)
		return nil, outline, nil
	}
	tuneGC(len(data))
	t, err := c.Parse(Input{Name: name, Data: data})
	return t, nil, err
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
		Name:       name,
	}, nil
}

// inputError words a document that cannot be read: an input error (exit 3) naming the file.
func inputError(name string, format transcript.Format, err error) error {
	if name == "-" {
		name = "stdin"
	}
	e := InputError(fmt.Errorf("%s: %w", name, err))
	var te *transcript.Error
	switch {
	case errors.As(err, &te) && te.Hint != "":
		e = WithHint(e, te.Hint)
	case format == "":
		e = WithHint(e, "if the format was misdetected, name it with --format")
	}
	return e
}

// Counter returns the token counter for a document of the given format: --tokenizer, or
// with "auto" the format's default.
func (c *Context) Counter(format transcript.Format) (tokens.Counter, error) {
	name := c.Common.Tokenizer
	if name == "" || name == "auto" {
		name = tokens.DefaultTokenizer(string(format))
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
	dir := c.Getenv("CTX_CACHE_DIR")
	switch {
	case dir == "off":
		dir = ""
	case dir != "":
	case c.Getenv("XDG_CACHE_HOME") != "":
		dir = filepath.Join(c.Getenv("XDG_CACHE_HOME"), "ctxkit")
	case c.Getenv("HOME") != "":
		dir = filepath.Join(c.Getenv("HOME"), ".cache", "ctxkit")
	}
	d := tokens.NewDiskCache(dir, name)
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

// flushCounts writes the run's count caches.
func (c *Context) flushCounts() {
	c.countsMu.Lock()
	defer c.countsMu.Unlock()
	for _, d := range c.counts {
		d.Flush()
	}
}

// Budget works out the window to measure a document against: --model, --window and
// --reserve; without --model, the model the document names when the table knows it, or
// the window the transcript recorded (Codex), or the default window.
func (c *Context) Budget(t *transcript.Transcript) (tokens.Budget, error) {
	if t == nil {
		return c.BudgetOf("", nil)
	}
	return c.BudgetOf(t.Model, t.Usage)
}

// BudgetOf is Budget for a conversation known by the model it names and its usage
// figures (a streamed transcript's Outline).
func (c *Context) BudgetOf(docModel string, usage []transcript.Usage) (tokens.Budget, error) {
	model, window := c.Common.Model, c.Common.Window.Int()
	// The window the agent itself recorded (Codex's model_context_window) beats the table:
	// it is the input window the agent ran with, already net of the room it keeps for the
	// reply (Codex records 95% of the model's input limit: 258,400 for gpt-5-codex, whose
	// table entry gives 400,000 - 128,000).
	recorded := false
	if model == "" {
		if _, ok := tokens.LookupModel(docModel); ok {
			model = docModel
		}
		if u, ok := transcript.LastUsage(usage); ok && window == 0 && u.Window > 0 {
			window, recorded = u.Window, true
		}
	}
	reserve := 0 // tokens.Window reads 0 as "the model's default"
	if c.Common.Reserve != nil {
		reserve = c.Common.Reserve.Int()
	}
	b, err := tokens.Window(model, window, reserve)
	if err != nil {
		return b, Usagef("%v", err)
	}
	if reserve == 0 && (c.Common.Reserve != nil || recorded) {
		// An explicit --reserve 0, or a recorded input window: the whole window is for input.
		b.Reserve, b.Effective = 0, b.Window
	}
	return b, nil
}

// ReadFile reads a file named by a flag (not a document argument), as Inputs does.
func (c *Context) ReadFile(name string) (Input, error) {
	if name == "-" {
		return Input{}, Usagef("stdin cannot be read twice; name a file")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return Input{}, RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}
	return Input{Name: name, Data: data}, nil
}
