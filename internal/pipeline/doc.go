// Package pipeline runs the saving tiers in one process over one parsed document: the
// live loop's form of `ctx-persist | ctx-budget | ctx-snip | ctx-summarize | ctx-trim`
// (ctx-replay on every turn, ctx-proxy on every request, ctx-count --savings).
//
// A Doc is the document as the stages share it: its bytes, its parse, its counts (made
// once for a way of measuring and kept), the clock and the counter. A Tier is a value
// (each tier package's New reads its command line into one) whose Plan decides from a Doc
// and returns edits and stats as values; Apply splices a plan's edits and makes the next
// Doc, and a tier that changes nothing costs only its decision: the next stage gets the
// same Doc, parse and counts included. Nothing passes between stages through the
// environment, a stats file or markers in the bytes.
//
// A stage that is not a Tier (a command of ctxkit's that is not a tier, or a tier whose
// command line sets what the pipeline does not share, such as its own --tokenizer) runs
// its command's Main on the bytes, as a shell pipeline would (a Command stage).
package pipeline

import (
	"bytes"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Clock is the time a run happens at, as the stages see it: the replayed request's time,
// or the proxied request's.
type Clock struct {
	// Now is the current time; zero: the tier's own --now, else the wall clock.
	Now time.Time
	// CachedAt is when the prompt cache was last written (the conversation's previous
	// request was answered), CacheTTL the lifetime the request asked for it; zero: unknown.
	CachedAt time.Time
	CacheTTL time.Duration
}

// Env is what a run gives every document of it: how to make a counter.
type Env struct {
	// Tokenizer names the counter (a --tokenizer value, "auto" for the format's own).
	Tokenizer string
	// Counter returns the counter for a document of format f that names model ("" none):
	// the run's --tokenizer, as cli.Context.Counter makes it.
	Counter func(f transcript.Format, model string) (tokens.Counter, error)
	// Flush, when set, writes what the counters counted to the count cache on disk: the
	// run calls it when its stages are done (a command's stage did at its end).
	Flush func()
}

// Measuring is how a tier measures a document: the window its flags choose, and the
// tokens an agent sends that the document lacks (--overhead).
type Measuring struct {
	Choice   measure.Choice
	Overhead int
	// Reading is how the tier's flags read and count a document: a Doc read or counted
	// otherwise is given to its command instead (Stage).
	Reading Reading
}

// Reading is how a document is read (transcript.Options) and counted.
type Reading struct {
	Format     transcript.Format // "" detects it
	Path       string
	Sidechains bool
	Tokenizer  string
}

// reads reports whether a tier that reads and counts as r reads d as d was read.
func (r Reading) reads(d *Doc) bool {
	return r.readsAs(d.T.Format, d.Opts, d.env)
}

// readsAs reports whether a tier that reads and counts as r reads a document of format f
// read with o and counted under env as it was.
func (r Reading) readsAs(f transcript.Format, o transcript.Options, env *Env) bool {
	return (r.Format == "" || r.Format == f) && r.Path == o.Path && r.Sidechains == o.Sidechains &&
		env != nil && r.Tokenizer == env.Tokenizer
}

// Measures are what a tier that decides on the size of the conversation reads: the
// counter, the window, and the counts.
type Measures struct {
	Counter tokens.Counter
	Window  tokens.Budget
	Counts  measure.Counts
}

// Doc is one document as the stages of a pipeline share it. Raw is not to be changed:
// T refers to it.
type Doc struct {
	Raw   []byte
	T     *transcript.Transcript
	Opts  transcript.Options // how it was read, its format named
	Clock Clock

	read    transcript.Options // the options it was parsed with, as given (Opts names the format)
	env     *Env
	counter tokens.Counter
	base    *measure.Tally         // the counts without --overhead, never changed once made
	tallies map[int]*measure.Tally // by overhead: base with it added
	// from is the Doc this one was made from (the stage before it, the request before),
	// whose counts base reuses for the messages both hold; dropped once base is made.
	from *Doc
}

// New parses raw with o and makes it a pipeline's first Doc.
func New(raw []byte, o transcript.Options, env *Env, clock Clock) (*Doc, error) {
	return NewFrom(nil, raw, o, env, clock)
}

// NewFrom is New for raw, a later version of prev's document (the next request of a
// conversation, which extends the one the pipeline sent before): what raw holds of prev's
// messages is neither parsed nor counted again. prev may be nil. raw that is prev's own
// bytes (the same slice: a caller that read the document first) is prev's document again,
// its parse and counts shared.
func NewFrom(prev *Doc, raw []byte, o transcript.Options, env *Env, clock Clock) (*Doc, error) {
	var pt *transcript.Transcript
	if prev != nil && prev.read.Format == o.Format && prev.read.Path == o.Path && prev.read.Sidechains == o.Sidechains {
		pt = prev.T
	} else {
		prev = nil
	}
	if prev != nil && prev.env == env && sameSlice(raw, prev.Raw) {
		return &Doc{Raw: raw, T: prev.T, Opts: prev.Opts, Clock: clock, env: env, read: o,
			counter: prev.counter, base: prev.base, from: prev.from}, nil
	}
	t, err := reparse(pt, raw, o)
	if err != nil {
		return nil, err
	}
	read := o
	o.Format = t.Format
	d := &Doc{Raw: raw, T: t, Opts: o, Clock: clock, env: env, read: read}
	if prev != nil && prev.env == env {
		// prev's counts, made now if no stage asked for them after its last edit: from the
		// stage before, they count only what that edit changed.
		if _, err := prev.tally(0); err == nil {
			d.from = prev
		}
	}
	return d, nil
}

// sameSlice reports whether a and b are one slice of memory.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Counter is the document's token counter.
func (d *Doc) Counter() (tokens.Counter, error) {
	if d.counter == nil {
		if d.env == nil || d.env.Counter == nil {
			return nil, fmt.Errorf("internal: a pipeline document without a counter")
		}
		c, err := d.env.Counter(d.T.Format, d.T.Model)
		if err != nil {
			return nil, err
		}
		d.counter = c
	}
	return d.counter, nil
}

// tally is the document counted message by message, with overhead added for a document
// that records no usage; made once and kept for the Doc's life.
func (d *Doc) tally(overhead int) (*measure.Tally, error) {
	if tl, ok := d.tallies[overhead]; ok {
		return tl, nil
	}
	c, err := d.Counter()
	if err != nil {
		return nil, err
	}
	if d.base == nil {
		if f := d.from; f != nil && f.base != nil {
			d.base = measure.OfNext(f.T, f.base, d.T, c) // Of when the counter differs
		} else {
			d.base = measure.Of(d.T, c, false)
		}
		d.from = nil
	}
	tl := new(measure.Tally)
	*tl = *d.base // AddOverhead sets only figures of its own
	tl.AddOverhead(overhead)
	if d.tallies == nil {
		d.tallies = map[int]*measure.Tally{}
	}
	d.tallies[overhead] = tl
	return tl, nil
}

// Tally is the document counted message by message without --overhead (measure.Of), as
// the stages counted it: made once for the Doc's life, and only to be read.
func (d *Doc) Tally() (*measure.Tally, error) { return d.tally(0) }

// Window is the window the document is measured against under m (measure.Window).
func (d *Doc) Window(m Measuring) (tokens.Budget, error) {
	return measure.Window(m.Choice, d.T.Model, d.T.Usage)
}

// Measure gives the document's Measures under m. The counts are made anew from the kept
// tally for each call, so that the tier may keep or change them.
func (d *Doc) Measure(m Measuring) (Measures, error) {
	var ms Measures
	var err error
	if ms.Counter, err = d.Counter(); err != nil {
		return ms, err
	}
	if ms.Window, err = d.Window(m); err != nil {
		return ms, err
	}
	tl, err := d.tally(m.Overhead)
	if err != nil {
		return ms, err
	}
	ms.Counts = tl.Counts()
	return ms, nil
}

// Tokens is the document's total tokens under m.
func (d *Doc) Tokens(m Measuring) (int, error) {
	tl, err := d.tally(m.Overhead)
	if err != nil {
		return 0, err
	}
	return tl.Total(), nil
}

// Utilization is the document's tokens over its effective window under m, with both.
func (d *Doc) Utilization(m Measuring) (u float64, n int, w tokens.Budget, err error) {
	if n, err = d.Tokens(m); err != nil {
		return 0, 0, w, err
	}
	if w, err = d.Window(m); err != nil {
		return 0, n, w, err
	}
	return measure.Ratio(n, w.Effective), n, w, nil
}

// Plan is what a tier decided for a Doc. With no edits (and no Output) the document goes
// on as it came, byte for byte, its parse and counts with it.
type Plan struct {
	// Edits are the changes, spliced into the document's bytes (transcript.Apply).
	Edits []transcript.Edit
	// Check, when set, is a last pass over the edited bytes when they differ from the
	// input (as cli.Plan's Check: ctx-repair's rules where the edits broke one): it returns the
	// output, changed or not, and its parse when it made one.
	Check func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error)
	// TokensDelta is the change in the document's tokens the edits make; with
	// CountOutput the output is counted instead.
	TokensDelta int
	CountOutput bool
	// Stats are the stage's; the pipeline fills in the format and the tokens before and
	// after, as the command's --stats would.
	Stats Stats
	// Warnings are what the command would print as warnings about the document.
	Warnings []string
}

// Tier is a saving tier as a value: its options read, ready to plan any document.
type Tier interface {
	// Name is the tier's command, ctx-trim...
	Name() string
	// Measuring is how the tier measures a document (its --model, --window, --reserve,
	// --overhead), which its stats' tokens are counted under too.
	Measuring() Measuring
	// Plan decides what to do with d: pure, but for the side effects a tier is for (the
	// offload store). It must not change d.
	Plan(d *Doc) (*Plan, error)
}

// Apply makes p's edits to d and returns the next Doc, with what the stage's stats say of
// the tokens before and after (the format and tokens filled in as the command's --stats
// would). A plan with no edits returns d itself.
func Apply(d *Doc, tier Tier, p *Plan) (*Doc, Stats, error) {
	st := p.Stats
	st.Format = string(d.T.Format)
	m := tier.Measuring()
	before, err := d.Tokens(m)
	if err != nil {
		return nil, st, err
	}
	st.TokensBefore, st.TokensAfter = before, before+p.TokensDelta
	next := d
	var parsed *transcript.Transcript
	recount := false
	if len(p.Edits) > 0 {
		out, err := d.T.Apply(p.Edits)
		if err != nil {
			return nil, st, err
		}
		if p.Check != nil && !bytes.Equal(out, d.Raw) {
			checked, t, err := p.Check(d.T, out)
			if err != nil {
				return nil, st, err
			}
			recount = !bytes.Equal(checked, out)
			out, parsed = checked, t
		}
		if !bytes.Equal(out, d.Raw) {
			if next, err = d.next(out, parsed); err != nil {
				return nil, st, fmt.Errorf("%s: internal error: the output does not parse: %w", tier.Name(), err)
			}
		}
	}
	if (p.CountOutput || recount) && next != d {
		// As the command counts its output for --stats: the total of what it wrote,
		// parsed, without --overhead.
		c, err := d.Counter()
		if err != nil {
			return nil, st, err
		}
		st.TokensAfter = measure.Total(next.T, c)
	} else if p.CountOutput {
		st.TokensAfter = before
	}
	return next, st, nil
}

// next is the Doc of out, the bytes d's stage made: parsed (t when the stage parsed it
// already), its counts made when a tier asks.
func (d *Doc) next(out []byte, t *transcript.Transcript) (*Doc, error) {
	if t == nil {
		var err error
		if t, err = reparse(d.T, out, d.read); err != nil {
			return nil, err
		}
	}
	n := &Doc{Raw: out, T: t, Opts: d.Opts, Clock: d.Clock, env: d.env, read: d.read}
	if t.Model == d.T.Model && t.Format == d.T.Format {
		n.counter = d.counter
		n.from = d
	}
	return n, nil
}

// reparse parses raw, the bytes a stage made of prev's or the next request after prev's
// (prev nil: a first parse). The one place a pipeline parses: transcript.Reparse reuses
// the messages of prev that raw holds unchanged, and returns what Parse would.
func reparse(prev *transcript.Transcript, raw []byte, o transcript.Options) (*transcript.Transcript, error) {
	return transcript.Reparse(prev, raw, o)
}

// Measured is a document as a tier measures it: a Doc under the tier's Measuring
// (Doc.Under), or the run loop's document of a single command (cli.Doc), so that a tier
// decides through one code path in both.
type Measured interface {
	Counter() (tokens.Counter, error)
	Window() (tokens.Budget, error)
	Counts() (measure.Counts, error)
	Utilization() (u float64, tokens int, w tokens.Budget, err error)
	Measure() (Measures, error)
}

// Under is d measured under m.
func (d *Doc) Under(m Measuring) Measured { return under{d, m} }

type under struct {
	d *Doc
	m Measuring
}

func (u under) Counter() (tokens.Counter, error) { return u.d.Counter() }
func (u under) Window() (tokens.Budget, error)   { return u.d.Window(u.m) }
func (u under) Measure() (Measures, error)       { return u.d.Measure(u.m) }
func (u under) Utilization() (float64, int, tokens.Budget, error) {
	return u.d.Utilization(u.m)
}
func (u under) Counts() (measure.Counts, error) {
	tl, err := u.d.tally(u.m.Overhead)
	if err != nil {
		return measure.Counts{}, err
	}
	return tl.Counts(), nil
}

// Visit calls fn with the text and offset of each of the spans, merged where they overlap
// or touch, in document order (as cli.Doc.Visit does for a document read whole).
func (d *Doc) Visit(spans []transcript.Span, fn func(text string, base int) error) error {
	for _, p := range transcript.MergeSpans(spans) {
		if err := fn(d.T.Slice(p), p.Start); err != nil {
			return err
		}
	}
	return nil
}
