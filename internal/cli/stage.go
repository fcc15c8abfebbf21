package cli

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// ErrNotATier is a tier's command line that does not make a tier of an in-process
// pipeline (a dry run, a report, --restore...): the pipeline runs its command instead.
var ErrNotATier = errors.New("not a pipeline tier: run as a command")

// stageMeasuring is how a tier whose command line Configure read measures a document in
// an in-process pipeline, and reads it: the window and overhead its Common flags choose,
// and the reading flags a pipeline's document must have been read with for the tier to
// plan it (else its command runs: pipeline.Stage). A command line that writes somewhere
// of its own (-o, -i, files, --latest, --redact) or counts through the API is not a tier
// (ErrNotATier).
func stageMeasuring(c *Context) (pipeline.Measuring, error) {
	f := c.Common
	var m pipeline.Measuring
	if f.Tokenizer == "api" || f.Output != "" || f.InPlace || f.Redact || f.Latest || len(f.Files) > 0 {
		return m, ErrNotATier
	}
	format, err := transcript.ParseFormat(f.Format)
	if err != nil {
		return m, Usagef("%v", err)
	}
	m.Choice.Model, m.Choice.Window = f.Model, f.Window.Int()
	if f.Reserve != nil {
		r := f.Reserve.Int()
		m.Choice.Reserve = &r
	}
	m.Overhead = f.Overhead.Int()
	m.Reading = pipeline.Reading{Format: format, Path: f.Path, Sidechains: f.Sidechains, Tokenizer: tokenizerName(f.Tokenizer)}
	return m, nil
}

// ConfigureStage reads a tier's command line for an in-process pipeline: Configure, then
// the tier's flags (tool's Grammar, an *F) and how it measures (stageMeasuring).
func ConfigureStage[F any](tool *Tool, args []string, getenv func(string) string) (*F, *Context, pipeline.Measuring, error) {
	c, err := Configure(tool, args, getenv)
	if err != nil {
		return nil, nil, pipeline.Measuring{}, err
	}
	m, err := stageMeasuring(c)
	if err != nil {
		return nil, nil, m, err
	}
	f, ok := tool.Grammar.(*F)
	if !ok {
		return nil, nil, m, fmt.Errorf("internal: %s's grammar is a %T", tool.Name, tool.Grammar)
	}
	return f, c, m, nil
}

// tokenizerName is a --tokenizer value as a pipeline compares them: "" is "auto".
func tokenizerName(name string) string {
	if name == "" {
		return "auto"
	}
	return name
}

// Tokenizer is the run's --tokenizer as an in-process pipeline compares them
// (pipeline.Env.Tokenizer).
func (c *Context) Tokenizer() string { return tokenizerName(c.Common.Tokenizer) }

// pipeEnv is what an in-process pipeline's documents are counted with in this run: its
// --tokenizer's counter (Counter) for each format and model, made once; Flush writes what
// they counted to the count cache on disk.
func (c *Context) pipeEnv() *pipeline.Env {
	type key struct {
		f     transcript.Format
		model string
	}
	counters := map[key]tokens.Counter{}
	var mu sync.Mutex
	return &pipeline.Env{Tokenizer: c.Tokenizer(), Flush: c.flushCounts, Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
		mu.Lock()
		defer mu.Unlock()
		if counter, ok := counters[key{f, model}]; ok {
			return counter, nil
		}
		counter, err := c.Counter(f, model)
		if err == nil {
			counters[key{f, model}] = counter
		}
		return counter, err
	}}
}

// stageFlags are the common flags alone: how any stage reads and counts a document.
type stageFlags struct {
	Common `embed:""`
}

// StageEnv is pipeEnv for the stages of a pipeline that see the environment getenv: the
// counter each of them makes from its common flags (--tokenizer, the count cache).
func StageEnv(getenv func(string) string) (*pipeline.Env, error) {
	c, err := Configure(Command("ctx-pipeline", "", "", func(*Context, *stageFlags) error { return nil }), nil, getenv)
	if err != nil {
		return nil, err
	}
	return c.pipeEnv(), nil
}

// PlanOf is a tier's pipeline plan as the run loop's: the same edits, check and stats, its
// warnings printed about d.
func PlanOf(d *Doc, p *pipeline.Plan) *Plan {
	for _, w := range p.Warnings {
		d.Warnf("%s", w)
	}
	return &Plan{Edits: p.Edits, Check: p.Check, TokensDelta: p.TokensDelta, CountOutput: p.CountOutput, Stats: p.Stats}
}

// (A Doc is measured as a tier of a pipeline measures one.)
var _ pipeline.Measured = (*Doc)(nil)
