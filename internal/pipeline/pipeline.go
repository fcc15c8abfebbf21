package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// MainFunc is a ctxkit command's entry point (cli.MainFunc), for a Command stage.
type MainFunc func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int

// Stage is one stage of a Pipeline: a Tier, or a command run on the bytes.
type Stage struct {
	Name string
	Tier Tier
	// Main and Args run the stage as its command when Tier is nil, or when the Tier's
	// flags read or count a document otherwise than the pipeline's Doc was (its own
	// --format, --path, --sidechains or --tokenizer).
	Main MainFunc
	Args []string
}

// Pipeline is stages run in order over one Doc.
type Pipeline struct {
	Stages []Stage
	// Env is what the documents the stages plan on are counted with (as the stages'
	// commands would count them).
	Env *Env
	// StatsFile is where a Command stage writes its --stats line (the run's
	// CTX_STATS_FILE): read and emptied after each such stage, to give its Result the
	// line. "" for none.
	StatsFile string
}

// Result is what one stage did.
type Result struct {
	Stage string
	// In and Out are the stage's input and output bytes (the same slice when it changed
	// nothing), InT and OutT their parse; none is to be changed.
	In, Out   []byte
	InT, OutT *transcript.Transcript
	// InTally is InT as the stages counted it (Doc.Tally: without --overhead), when the
	// stage counted it; nil when it did not. Only to be read.
	InTally *measure.Tally
	// Stats are a Tier's stats; Lines a Command stage's --stats lines, as it wrote them.
	Stats *Stats
	Lines []byte
	// Warnings are what the stage would have printed as warnings.
	Warnings []string
}

// StatsLine is the stage's --stats line (lines, for a command that wrote several), as
// the stage's command writes it: a Tier's stats marshalled, a command's as it wrote them.
func (r *Result) StatsLine() ([]byte, error) {
	if r.Stats == nil {
		return r.Lines, nil
	}
	return r.Stats.Marshal(r.Stage)
}

// StageError is a stage that failed: which, its exit status (a Command stage's; 4 for a
// Tier's error, 3 for a command's output that does not read) and what it said.
type StageError struct {
	Stage  string
	Code   int
	Stderr string
	Err    error // a Tier's error
}

func (e *StageError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Stage, e.Err)
	}
	return fmt.Sprintf("%s exited %d: %s", e.Stage, e.Code, strings.TrimSpace(e.Stderr))
}

func (e *StageError) Unwrap() error { return e.Err }

// InProcess reports whether every stage runs as its Tier on a document read with o, its
// format named: then no stage runs its command, and StatsFile is not read.
func (p *Pipeline) InProcess(o transcript.Options) bool {
	if o.Format == "" {
		return false
	}
	for _, s := range p.Stages {
		if s.Tier == nil || s.Main != nil && !s.Tier.Measuring().Reading.readsAs(o.Format, o, p.Env) {
			return false
		}
	}
	return true
}

// Run runs the stages over d in order and returns the last Doc and what each stage did.
// getenv is the environment Command stages see. ctx bounds the run between stages.
func (p *Pipeline) Run(ctx context.Context, d *Doc, getenv func(string) string) (*Doc, []Result, error) {
	results := make([]Result, 0, len(p.Stages))
	for _, s := range p.Stages {
		if err := ctx.Err(); err != nil {
			return nil, results, &StageError{Stage: s.Name, Code: -1, Err: err}
		}
		r := Result{Stage: s.Name, In: d.Raw, InT: d.T}
		var next *Doc
		var err error
		if s.Tier != nil && (s.Main == nil || s.Tier.Measuring().Reading.reads(d)) {
			next, err = runTier(s.Tier, d, &r)
		} else {
			next, err = p.runCommand(s, d, getenv, &r)
		}
		if err != nil {
			return nil, results, err
		}
		r.Out, r.OutT = next.Raw, next.T
		if d.base != nil {
			r.InTally, _ = d.Tally()
		}
		results = append(results, r)
		d = next
	}
	return d, results, nil
}

func runTier(t Tier, d *Doc, r *Result) (*Doc, error) {
	plan, err := t.Plan(d)
	if err != nil {
		return nil, &StageError{Stage: t.Name(), Code: 4, Err: err}
	}
	next, st, err := Apply(d, t, plan)
	if err != nil {
		return nil, &StageError{Stage: t.Name(), Code: 4, Err: err}
	}
	r.Stats, r.Warnings = &st, plan.Warnings
	return next, nil
}

// runCommand runs a stage's command on d's bytes: the next Doc is d when it wrote them
// back unchanged, else its output parsed.
func (p *Pipeline) runCommand(s Stage, d *Doc, getenv func(string) string, r *Result) (*Doc, error) {
	var out, errs bytes.Buffer
	out.Grow(len(d.Raw) + len(d.Raw)/16 + 4096)
	if code := s.Main(s.Args, bytes.NewReader(d.Raw), &out, &errs, getenv); code != 0 && code != 1 {
		// 1 is a check that fired (ctx-count --fail-over): the document still went on.
		return nil, &StageError{Stage: s.Name, Code: code, Stderr: errs.String()}
	}
	if p.StatsFile != "" {
		lines, err := os.ReadFile(p.StatsFile)
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if len(lines) > 0 {
			if err := os.Truncate(p.StatsFile, 0); err != nil {
				return nil, err
			}
		}
		r.Lines = lines
	}
	if bytes.Equal(out.Bytes(), d.Raw) {
		return d, nil
	}
	next, err := d.next(out.Bytes(), nil)
	if err != nil {
		return nil, &StageError{Stage: s.Name, Code: 3, Err: fmt.Errorf("its output does not parse: %w", err)}
	}
	return next, nil
}
