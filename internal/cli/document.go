package cli

import (
	"fmt"
	"os"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Parse reads an input as a conversation document with the shared reading flags
// (--format, --path, --sidechains). A document that cannot be read is an input error
// (exit 3) naming the file.
func (c *Context) Parse(in Input) (*transcript.Transcript, error) {
	format, err := transcript.ParseFormat(c.Common.Format)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	t, err := transcript.Parse(in.Data, transcript.Options{
		Format:     format,
		Path:       c.Common.Path,
		Sidechains: c.Common.Sidechains,
		Name:       in.Name,
	})
	if err != nil {
		name := in.Name
		if in.IsStdin() {
			name = "stdin"
		}
		e := InputError(fmt.Errorf("%s: %w", name, err))
		if format == "" {
			e = WithHint(e, "if the format was misdetected, name it with --format")
		}
		return nil, e
	}
	return t, nil
}

// Counter returns the token counter for a document of the given format: --tokenizer, or
// with "auto" the format's default.
func (c *Context) Counter(format transcript.Format) (tokens.Counter, error) {
	name := c.Common.Tokenizer
	if name == "" || name == "auto" {
		name = tokens.DefaultTokenizer(string(format))
	}
	counter, err := tokens.New(name)
	if err != nil {
		return nil, Usagef("--tokenizer: %v", err)
	}
	return counter, nil
}

// Budget works out the window to measure a document against: --model, --window and
// --reserve; without --model, the model the document names when the table knows it, or
// the window the transcript recorded (Codex), or the default window.
func (c *Context) Budget(t *transcript.Transcript) (tokens.Budget, error) {
	model, window := c.Common.Model, c.Common.Window.Int()
	if model == "" && t != nil {
		if _, ok := tokens.LookupModel(t.Model); ok {
			model = t.Model
		} else if u, ok := t.LastUsage(); ok && window == 0 && u.Window > 0 {
			window = u.Window
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
	if c.Common.Reserve != nil && reserve == 0 {
		// An explicit --reserve 0: the whole window is for input.
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
