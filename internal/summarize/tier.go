package summarize

import (
	"context"
	"time"

	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Tier is ctx-summarize as a value of an in-process pipeline (New reads its command line
// into one): Plan summarizes as ctx-summarize's command would, with the same backend.
type Tier struct {
	s   settings
	M   pipeline.Measuring
	env *runEnv
}

// Name is the tier's command.
func (*Tier) Name() string { return "ctx-summarize" }

// Measuring is how the tier measures a document.
func (t *Tier) Measuring() pipeline.Measuring { return t.M }

// Plan summarizes d when it is over the trigger.
func (t *Tier) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	return planDoc(context.Background(), d.T, wholeDoc{d.Under(t.M), d}, &t.s, t.env)
}

// document is a document as summarizing reads it: measured, its text read by spans
// (cli.Doc, or a pipeline's Doc, whose text is all there).
type document interface {
	pipeline.Measured
	Excerpt(spans []transcript.Span) error
	Visit(spans []transcript.Span, fn func(text string, base int) error) error
	Size() int
	Display() string
}

// wholeDoc is a pipeline's Doc as a document: read whole, with no name.
type wholeDoc struct {
	pipeline.Measured
	d *pipeline.Doc
}

func (wholeDoc) Excerpt([]transcript.Span) error { return nil }
func (w wholeDoc) Visit(spans []transcript.Span, fn func(string, int) error) error {
	return w.d.Visit(spans, fn)
}
func (w wholeDoc) Size() int     { return len(w.d.Raw) }
func (wholeDoc) Display() string { return "stdin" }

// runEnv is what summarizing reads of the run besides the document: its environment (the
// backends' keys), clock, warnings, redactor, and store (--store, and whether the user
// named it) and state directory (the circuit breaker's). shownStore is the store as the
// summary names it (a temporary store's stand-in name when temporary: not indexed).
type runEnv struct {
	getenv     func(string) string
	now        func() time.Time
	warnf      func(format string, a ...any)
	redactor   *redact.Redactor
	store      string
	storeGiven bool
	stateDir   string
	shownStore func() (string, error)
	temporary  bool
}
