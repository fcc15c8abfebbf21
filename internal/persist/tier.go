package persist

import (
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Tier is ctx-persist as a value of an in-process pipeline (New reads its command line
// into one): Plan offloads what ctx-persist's command would, into the same store.
type Tier struct {
	// O are the options but the counter, which is the document's. O.Store is the store
	// as the references name it; Dir the store written to.
	O   Options
	Dir string
	M   pipeline.Measuring
	// Getenv is the tier's environment, for the store's deferred sync (store.SyncEnv).
	Getenv func(string) string
}

// Name is the tier's command.
func (*Tier) Name() string { return "ctx-persist" }

// Measuring is how the tier measures a document.
func (t *Tier) Measuring() pipeline.Measuring { return t.M }

// Plan offloads d's large results: each stored before the plan returns.
func (t *Tier) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	counter, err := d.Counter()
	if err != nil {
		return nil, err
	}
	o := t.O
	o.Counter = counter
	var warnings []string
	r := newOffloading(d.T, o, t.Dir, "-", time.Now, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }, t.Getenv)
	defer r.sv.Close()
	var edits []transcript.Edit
	for i, span := range r.regions() {
		e := r.edit(i, d.T.Slice(span), span.Start)
		if err := r.commit(i); err != nil {
			return nil, err
		}
		edits = append(edits, e...)
	}
	st, delta, err := r.finish()
	if err != nil {
		return nil, err
	}
	return &pipeline.Plan{Edits: edits, TokensDelta: delta, Stats: st, Warnings: warnings}, nil
}

// offloading is one document's offloading, region by region (a candidate result each):
// edit decides a region's edits (on any goroutine), commit stores what it decided (in
// document order), finish ends the store's writes and gives the stats.
type offloading struct {
	t       *transcript.Transcript
	o       Options
	p       *planner
	sv      *offload.Saver
	st      Stats
	refs    []transcript.Ref
	decided []struct {
		blobs []Blob
		st    Stats
	}
}

// newOffloading readies the offloading of t into the store dir (the references name o.Store),
// its index naming the input name.
func newOffloading(t *transcript.Transcript, o Options, dir, name string, now func() time.Time, warnf func(string, ...any), getenv func(string) string) *offloading {
	r := &offloading{t: t, o: o, p: newPlanner(t, o)}
	r.sv = offload.NewSaver(dir, name, now, warnf)
	r.sv.Loose() // the reference says "cat PATH": a file, never a pack
	r.sv.DeferSyncIf(getenv)
	r.st = r.p.stats()
	r.refs = r.p.candidates()
	r.decided = make([]struct {
		blobs []Blob
		st    Stats
	}, len(r.refs))
	return r
}

// regions are the candidate results' spans, in document order.
func (r *offloading) regions() []transcript.Span {
	spans := make([]transcript.Span, len(r.refs))
	for i, ref := range r.refs {
		spans[i] = r.t.Block(ref).Span
	}
	return spans
}

// concurrent says regions are best decided on several cores: with an exact counter,
// counting and previews cost enough. (With an estimate, deciding costs little, and regions
// decided ahead raised the peak RSS by 3-4 MB on a 10 MB Claude Code session for no time
// saved.)
func (r *offloading) concurrent() bool { return tokens.IsExact(r.o.Counter) }

func (r *offloading) edit(i int, text string, base int) []transcript.Edit {
	edits, blobs := r.p.offload(&transcript.Transcript{Format: r.t.Format, Doc: text, Base: base}, r.refs[i], &r.decided[i].st)
	r.decided[i].blobs = blobs
	return edits
}

func (r *offloading) commit(i int) error {
	r.st.add(r.decided[i].st)
	blobs := r.decided[i].blobs
	r.decided[i].blobs = nil // (the store does not keep a blob's data once written)
	return r.sv.Put(blobs...)
}

// finish syncs the store and returns the run's stats and the change in tokens.
func (r *offloading) finish() (pipeline.Stats, int, error) {
	stored, err := r.sv.Finish()
	if err != nil {
		return pipeline.Stats{}, 0, err
	}
	st := &r.st
	r.p.finish(st)
	return pipeline.Stats{
		Items: st.Texts, Trigger: st.Trigger,
		Extra: map[string]any{
			"threshold":    r.o.Threshold,
			"results":      st.Results,
			"offloaded":    st.Offloaded,
			"already":      st.Already,
			"protected":    st.Protected,
			"bytes_stored": st.BytesStored,
			"bytes_left":   st.BytesLeft,
			"raw":          st.Raw,
			"new_files":    stored,
			"store":        r.o.Store,
		},
	}, st.TokensDelta, nil
}
