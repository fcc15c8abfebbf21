package snip

import (
	"cmp"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Tier is ctx-snip as a value of an in-process pipeline (New reads its command line into
// one): Plan clears what ctx-snip's command would, keeping the texts in the same store.
type Tier struct {
	// O are the options but the document's measures; O.Now is the tier's --now (zero: the
	// clock), which a Doc's Clock overrides, as it does --cached-at and --cache-ttl.
	O Options
	M pipeline.Measuring
	// Dir is the store written to (--store), unless NoStore; Getenv the tier's
	// environment, for the store's deferred sync (store.SyncEnv).
	Dir     string
	NoStore bool
	Getenv  func(string) string
}

// Name is the tier's command.
func (*Tier) Name() string { return "ctx-snip" }

// Measuring is how the tier measures a document.
func (t *Tier) Measuring() pipeline.Measuring { return t.M }

// Plan clears d's stale results, each text kept in the store before the plan returns.
func (t *Tier) Plan(d *pipeline.Doc) (*pipeline.Plan, error) {
	o := t.O
	switch {
	case !d.Clock.Now.IsZero():
		o.Now = d.Clock.Now
	case o.Now.IsZero():
		o.Now = time.Now()
	}
	if !d.Clock.CachedAt.IsZero() {
		o.CachedAt = d.Clock.CachedAt
	}
	if d.Clock.CacheTTL > 0 {
		o.CacheTTL = d.Clock.CacheTTL
	}
	counter, err := d.Counter()
	if err != nil {
		return nil, err
	}
	changes, st, err := decide(d.T, o, d.Under(t.M), func(b *transcript.Block) facts { return factsOf(d.T, b, o, counter) })
	if err != nil {
		return nil, err
	}
	if len(changes) > 0 && !t.NoStore && t.Dir == "" {
		return nil, store.ErrNoDir
	}
	p := &pipeline.Plan{TokensDelta: st.TokensDelta, Stats: statsOf(&st, o, false)}
	if st.Stored == 0 {
		for i := range changes {
			p.Edits = append(p.Edits, changes[i].edit)
		}
		return p, nil
	}
	k := newKeeper(changes, t.Dir, "-", time.Now, func(format string, a ...any) { p.Warnings = append(p.Warnings, fmt.Sprintf(format, a...)) }, t.Getenv)
	defer k.sv.Close()
	for i, span := range k.regions() {
		e, err := k.edit(i, d.T.Slice(span))
		if err != nil {
			return nil, err
		}
		p.Edits = append(p.Edits, e...)
	}
	n, err := k.sv.Finish()
	if err != nil {
		return nil, err
	}
	p.Stats.Extra["new_files"] = n
	return p, nil
}

// decide measures the document and plans what to clear (facts gives each call's and
// result's facts).
func decide(t *transcript.Transcript, o Options, m pipeline.Measured, facts func(*transcript.Block) facts) ([]change, Stats, error) {
	ms, err := m.Measure()
	if err != nil {
		return nil, Stats{}, err
	}
	o.Counter, o.Tokens, o.Effective, o.Blocks, o.PerMessage, o.Was = ms.Counter, ms.Counts.Total, ms.Window.Effective, ms.Counts.Blocks, ms.Counts.PerMessage, ms.Counts.Was
	o.Price = tokens.PriceOf(cmp.Or(ms.Window.Model, t.Model), measure.ProviderOf(t.Format))
	changes, st := plan(t, o, facts)
	return changes, st, nil
}

// statsOf is the stats line of a run (a dry run's: dryRun), but for the store's new files.
func statsOf(st *Stats, o Options, dryRun bool) pipeline.Stats {
	reasons := map[string]int{}
	for r, n := range st.Reasons() {
		reasons[string(r)] = n
	}
	extra := map[string]any{
		"utilization":       st.Utilization,
		"utilization_after": st.UtilizationAfter,
		"results":           st.Results,
		"already_cleared":   st.Already,
		"inputs_cleared":    st.Inputs,
		"reasons":           reasons,
	}
	if dryRun {
		extra["dry_run"] = true
	}
	if st.Repay != nil {
		extra["repay"] = *st.Repay
	}
	if o.Store != "" && !dryRun {
		extra["stored"] = st.Stored
		extra["store"] = o.Store
	}
	return pipeline.Stats{Items: len(st.Items), Trigger: st.Trigger, Extra: extra}
}

// keeper keeps the texts a plan's changes replace in the store: each is read, checked to
// be what the plan read, and written (in document order).
type keeper struct {
	changes []change
	sv      *offload.Saver
}

// storeError is the store failing (not the text being unfit to keep).
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func newKeeper(changes []change, dir, name string, now func() time.Time, warnf func(string, ...any), getenv func(string) string) *keeper {
	sv := offload.NewSaver(dir, name, now, warnf)
	sv.DeferSyncIf(getenv)
	return &keeper{changes: changes, sv: sv}
}

// regions are the spans the changes replace.
func (k *keeper) regions() []transcript.Span {
	spans := make([]transcript.Span, len(k.changes))
	for i := range k.changes {
		spans[i] = k.changes[i].edit.Span
	}
	return spans
}

// edit keeps change i's text (the text of its region) and returns its edit.
func (k *keeper) edit(i int, text string) ([]transcript.Edit, error) {
	ch := &k.changes[i]
	if ch.kept.hash == "" {
		return []transcript.Edit{ch.edit}, nil
	}
	// The same bytes as the plan read, whose files are stored already: referenced,
	// neither decoded, redacted and hashed again nor written.
	kp, src := ch.kept, srcSum(text)
	if kp.src == src {
		stored, err := k.sv.Stored(kp.hash, kp.size, kp.raw, kp.rawSize)
		if err != nil {
			return nil, &storeError{err}
		}
		if stored {
			return []transcript.Edit{ch.edit}, nil
		}
	}
	// The text is decoded into a buffer the Saver gives back once it has written it
	// (Blob.Release): decoding every kept text into a new string allocated as much as
	// the texts stored, most of the input, while the heap is near its limit.
	buf := decoded.Get().(*[]byte)
	b, err := ch.blobInto(buf, text, src)
	if err != nil {
		decoded.Put(buf)
		return nil, err
	}
	b.Release = func() { decoded.Put(buf) }
	if err := k.sv.Put(b); err != nil {
		return nil, &storeError{err}
	}
	return []transcript.Edit{ch.edit}, nil
}
