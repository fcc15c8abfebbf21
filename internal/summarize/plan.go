package summarize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/llm"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// settings is ctx-summarize's command line as its decision reads it (Flags.settings makes
// it, after checking it).
type settings struct {
	// o has the trigger, target, force, keep-first and repay; the kept part in tokens or
	// turns when --keep gave one; keepShare is --keep as a share of the window.
	o         Options
	keepShare float64
	// Who writes the summary, and how it is asked (--backend, --llm-model...).
	backend, model, baseURL, instructions, fallback string
	timeout                                         time.Duration
	retries                                         int
	reset, offload                                  bool
	userTokens, restoreFiles, fileTokens            int
}

// planDoc summarizes one document. The split needs no text; then only the messages the
// summary covers, and the lines placing it edits, are read (from a streamed document, by
// offset, between its two passes). Warnings about the document are the plan's.
func planDoc(ctx context.Context, t *transcript.Transcript, d document, s *settings, c *runEnv) (*pipeline.Plan, error) {
	var warnings []string
	warnf := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }
	p, err := planSummary(ctx, t, d, s, c, warnf)
	if p != nil {
		p.Warnings = warnings
	}
	return p, err
}

func planSummary(ctx context.Context, t *transcript.Transcript, d document, f *settings, c *runEnv, warnf func(string, ...any)) (*pipeline.Plan, error) {
	o := f.o
	m, err := d.Measure()
	if err != nil {
		return nil, err
	}
	o.Counter, o.Effective = m.Counter, m.Window.Effective
	o.Price = tokens.PriceOf(cmp.Or(m.Window.Model, t.Model), measure.ProviderOf(t.Format))
	o.Tokens, o.PerMessage, o.Removed = m.Counts.Total, m.Counts.PerMessage, m.Counts.Removed()
	if f.keepShare > 0 {
		o.KeepTokens = int(f.keepShare * float64(o.Effective))
	}
	sp := Choose(t, o)
	extra := map[string]any{"backend": f.backend, "summarized": 0}
	unchanged := &pipeline.Plan{Stats: pipeline.Stats{Trigger: sp.Trigger, Extra: extra}}
	limit := int(o.Trigger * float64(o.Effective))
	if !sp.Acts {
		if o.Force || o.Tokens > limit {
			warnf("nothing to summarize: the part to keep (--keep) holds the whole conversation")
			if o.Tokens > limit {
				extra["still_above_trigger"] = true
			}
		}
		return unchanged, nil
	}
	// The local summarizer reads the messages it summarizes one at a time. Everything else
	// that reads text (a model's prompt, earlier summaries, placing the summary) reads it
	// from excerpts of the document.
	spans := TextNeeded(t, sp)
	if f.backend == "local" {
		spans = PlaceText(t, sp)
	}
	if err := d.Excerpt(spans); err != nil {
		return nil, err
	}
	// The files to restore come from the transcript whoever writes the summary, so the
	// local extraction runs for every backend (it reads the messages one at a time).
	x := NewExtractor()
	x.Carry(PreviousFiles(t, sp))
	previous := PreviousSections(t, sp)
	x.CarryErrors(previous["Errors"])
	localSections, err := localOf(t, d, x, newOnly(t, sp))
	if err != nil {
		return nil, err
	}
	local := func() (Sections, error) { return localSections, nil }

	meta := Meta{Messages: len(sp.Summarized), Tokens: sp.Was - PinnedTokens(t, sp, o.Counter), Backend: f.backend, Pinned: PinnedCount(t, sp)}
	sections, err := summarizeWith(ctx, c, f, t, sp, previous, &meta, local)
	if err != nil { // the backend's (the document was read before)
		if f.fallback != "local" || errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("%s: summarizing failed: %w", d.Display(), err)
		}
		warnf("the %s backend failed (%v); summarized locally instead (--fallback local)", f.backend, err)
		meta.Backend, meta.Dropped = "local", 0
		sections = Fold(previous, localSections)
		extra["fallback"] = true
	}
	var kept []byte // with --offload: the pre-summary document, stored once the summary is written
	if f.offload {
		// The pre-summary document is stored whole, so it is read whole.
		err = d.Visit([]transcript.Span{{Start: 0, End: d.Size()}}, func(text string, _ int) error {
			kept = []byte(text)
			return nil
		})
		if err != nil {
			return nil, err
		}
		kept = c.redactor.Bytes(kept) // the store keeps no secret (DESIGN §4.11)
		// Where it will be, for the summary to say, and for what the summary counts to
		// hold that line: it is stored only when the summary is written, not when a
		// summary that would not be worth it is held back.
		shown, err := c.shownStore()
		if err != nil {
			return nil, err
		}
		meta.Offloaded = store.Path(shown, store.Hash(kept))
	}
	userBudget := min(f.userTokens, sp.Tokens/userShare)
	sections = KeepUserWords(sections, userBudget, o.KeepFirst)
	restored, err := chooseRestored(t, d, sp, x, f, o)
	if err != nil {
		return nil, err
	}
	if meta.Backend == "local" {
		// The summary and the files it restores take at most SummaryShare of what they
		// replace (a model's summary is its own), less what the message around the text
		// costs (summaryWrap), counted as the document holds it: escaped in a JSON string.
		budget := int(SummaryShare*float64(meta.Tokens)) - summaryWrap
		var fits bool
		sections, meta, restored, fits = Fit(sections, meta, restored, budget, func(s string) int { return o.Counter.Count(transcript.Quote(s)) }, o.KeepFirst)
		if !fits {
			// So little history that its smallest summary saves little, and breaks the
			// prompt cache all the same.
			smallest := o.Counter.Count(transcript.Quote(Render(sections, meta))) + summaryWrap
			why := fmt.Sprintf("the smallest summary of the %d messages (%d tokens) would be over %d%% of the %d tokens they replace", len(sp.Summarized), smallest, int(100*SummaryShare), meta.Tokens)
			warnf("not summarizing: %s; the document is left as it is", why)
			extra["over_share"] = true
			unchanged.Stats.Trigger += ": " + why
			return unchanged, nil
		}
	}
	if len(restored) > 0 {
		extra["restored"] = len(restored)
	}
	// A summary is text written for somewhere else (a later context, a reader of the
	// session): it holds no secret, whoever wrote it (DESIGN §4.11).
	edits, err := Place(t, sp, c.redactor.String(Render(sections, meta)+RenderRestored(restored)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Display(), err)
	}
	after, ok := tokensAfter(t, o, sp, edits)
	if !ok {
		return nil, fmt.Errorf("%s: internal error: the summary message does not read back", d.Display())
	}
	if after >= o.Tokens {
		// A summary no smaller than what it replaces: nothing to gain.
		warnf("the summary would not be smaller than the %d messages it replaces; the document is left as it is", len(sp.Summarized))
		extra["not_smaller"] = true
		return unchanged, nil
	}
	why, repay := Judge(o, sp, after)
	extra["repay"] = repay
	if why != "" {
		warnf("not summarizing: %s", why)
		if o.AboveTarget(after) {
			extra["above_target"] = true
		} else {
			extra["not_repaid"] = true
		}
		unchanged.Stats.Trigger += ": " + why
		return unchanged, nil
	}
	if after > limit {
		// The compaction loop: summarizing again next turn would not help either.
		warnf("still above the trigger after summarizing (%d tokens, trigger at %d): the kept part is too big; lower --keep or trim", after, limit)
		extra["still_above_trigger"] = true
	}
	if f.offload {
		path, err := offload(c, kept)
		if err != nil {
			return nil, err
		}
		if path != meta.Offloaded {
			return nil, fmt.Errorf("%s: internal error: the document was stored at %s, not at %s as the summary says", d.Display(), path, meta.Offloaded)
		}
		extra["offloaded"] = path
	}
	p := &pipeline.Plan{Edits: edits, TokensDelta: after - o.Tokens}
	if mayMerge(t, sp) {
		// The summary, a user message, may meet a kept user message: ctx-repair's rules
		// merge them.
		p.Check = func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error) {
			fixed, _, err := repair.KeepValid(in, out)
			return fixed, nil, err
		}
	}
	extra["summarized"] = len(sp.Summarized)
	extra["folded"] = len(sp.Previous)
	extra["backend"] = meta.Backend
	if meta.Dropped > 0 {
		extra["dropped_from_input"] = meta.Dropped
	}
	p.Stats = pipeline.Stats{Items: len(sp.Summarized), Trigger: sp.Trigger, Extra: extra}
	return p, nil
}

// newOnly is the summarized messages that are not earlier summaries.
func newOnly(t *transcript.Transcript, sp Split) []int {
	var out []int
	for _, mi := range sp.Summarized {
		if !t.Messages[mi].Summary {
			out = append(out, mi)
		}
	}
	return out
}

func summarizeWith(ctx context.Context, c *runEnv, f *settings, t *transcript.Transcript, sp Split, previous Sections, meta *Meta, local func() (Sections, error)) (Sections, error) {
	if f.backend == "local" {
		s, err := local()
		return Fold(previous, s), err
	}
	keyVar := "ANTHROPIC_API_KEY"
	model := "claude-haiku-4-5"
	if f.backend == llm.OpenAI {
		keyVar, model = "OPENAI_API_KEY", "gpt-4o-mini"
	}
	if f.model != "" {
		model = f.model
	}
	key := c.getenv(keyVar)
	token := ""
	if f.backend == llm.Anthropic && key == "" {
		token = c.getenv("ANTHROPIC_AUTH_TOKEN")
	}
	client := &llm.Client{
		Backend: f.backend, BaseURL: f.baseURL, APIKey: key, AuthToken: token, Model: model, Getenv: c.getenv,
		Timeout: f.timeout, Retries: f.retries, Backoff: time.Second, MaxBackoff: 30 * time.Second,
		Redact: c.redactor, // the backend receives no secret (DESIGN §4.11)
	}
	// The server the run talks to: --base-url, else OPENAI_BASE_URL or ANTHROPIC_BASE_URL,
	// else the public API. A local OpenAI-compatible server needs no key; the public APIs do.
	base := client.Base()
	if key == "" && token == "" && (f.backend == llm.Anthropic || base == llm.DefaultBaseURL(f.backend)) {
		return nil, fmt.Errorf("%s is not set", keyVar)
	}
	// (one breaker per server: a local one that is down does not stop the public API)
	breakerKey := base
	if base == llm.DefaultBaseURL(f.backend) {
		breakerKey = ""
	}
	b := &llm.Breaker{Path: breakerPath(c, f.backend, breakerKey), Limit: breakerLimit, Cooldown: breakerCooldown, Now: c.now}
	if f.reset {
		if err := b.Reset(); err != nil {
			return nil, err
		}
	}
	if err := b.Allow(); err != nil {
		return nil, err
	}
	m := &Model{Instructions: f.instructions, Client: client}
	s, dropped, err := m.Summarize(ctx, t, newOnly(t, sp), previous)
	if errors.Is(err, context.Canceled) {
		return nil, err // the user stopped it: not the backend's failure
	}
	if rerr := b.Record(err); errors.Is(rerr, safefile.ErrUnsafe) {
		return nil, fmt.Errorf("circuit breaker state: %w", rerr) // planted since Allow
	} else if rerr != nil {
		c.warnf("circuit breaker state: %v", rerr)
	}
	if err != nil {
		return nil, err
	}
	meta.Dropped = dropped
	if dropped > 0 {
		c.warnf("the prompt was too long for %s: the oldest %d messages were left out of the summary", model, dropped)
	}
	return s, nil
}

// breakerPath is where the circuit breaker of a backend keeps its state: in the store
// only when the user named one (--store, CTX_STORE); else in the user's state directory,
// one file per backend and base URL, beside the default stores rather than in one (a
// breaker is the user's, not a project's). "" (no state kept) when there is no home
// directory.
func breakerPath(c *runEnv, backend, baseURL string) string {
	if c.storeGiven {
		return filepath.Join(c.store, llm.BreakerFile)
	}
	if dir := c.stateDir; dir != "" {
		return llm.BreakerPath(dir, backend, baseURL)
	}
	return ""
}

// offload keeps the whole pre-summary document in the store and returns its path.
func offload(c *runEnv, data []byte) (string, error) {
	st, err := store.Create(c.store)
	if errors.Is(err, store.ErrNoDir) {
		return "", fmt.Errorf("--offload: %w", err) // the command's usage error
	}
	if err != nil {
		return "", err
	}
	defer st.Close()
	st.DeferSyncIf(c.getenv)
	h, _, err := st.Put(data)
	if err != nil {
		return "", err
	}
	if err := st.Append(store.Entry{Hash: h, Tool: "ctx-summarize", Source: "pre-summary document", Bytes: len(data), Lines: strings.Count(string(data), "\n"), Time: c.now()}); err != nil {
		return "", err
	}
	// ctx-recall's index, derived (rebuilt when missing); under ctx-proxy, whose stages defer
	// their syncs, ctx-recall indexes it when it searches, and a temporary store is not
	// indexed (offload.Saver's rules)
	if !st.Deferred() && !c.temporary {
		if err := index.Update(st); err != nil {
			c.warnf("store %q: ctx-recall's index not updated (ctx-recall will rebuild it): %v", c.store, err)
		}
	}
	shown, err := c.shownStore()
	if err != nil {
		return "", err
	}
	return store.Path(shown, h), nil
}

// Write puts the summary of sections in place of the summarized messages and returns the
// new document and its tokens, as ctx-summarize writes a document read whole. Where that
// breaks one of the API's rules in a valid input (an Anthropic summary, a user message,
// next to a kept user message), ctx-repair's rules fix it.
func Write(t *transcript.Transcript, o Options, sp Split, sections Sections, meta Meta) ([]byte, int, error) {
	meta.Pinned = PinnedCount(t, sp)
	meta.Tokens -= PinnedTokens(t, sp, o.Counter)
	edits, err := Place(t, sp, Render(sections, meta))
	if err != nil {
		return nil, 0, err
	}
	out, err := t.Apply(edits)
	if err != nil {
		return nil, 0, err
	}
	fixed, merged := out, []repair.Problem(nil)
	if mayMerge(t, sp) { // as ctx-summarize decides it
		if fixed, merged, err = repair.KeepValid(t, out); err != nil {
			return nil, 0, err
		}
	}
	if after, ok := tokensAfter(t, o, sp, edits); ok && len(merged) == 0 {
		return out, after, nil
	}
	re, err := transcript.Parse(fixed, transcript.Options{Format: t.Format})
	if err != nil {
		return nil, 0, fmt.Errorf("internal error: the summarized document does not parse: %w", err)
	}
	return fixed, measure.Total(re, o.Counter), nil
}

// tokensAfter is the document's size after the edits that place the summary: the old size
// less what went, plus what came. ok is false when it cannot be worked out that way.
func tokensAfter(t *transcript.Transcript, o Options, sp Split, edits []transcript.Edit) (int, bool) {
	if len(o.PerMessage) != len(t.Messages) {
		return 0, false
	}
	added, ok := addedTokens(t, o, edits)
	return o.Tokens - sp.Tokens - moved(t, o, sp) + added, ok
}

// TextNeeded lists the spans of a document whose text summarizing sp reads: the
// summarized messages and what PlaceText names.
func TextNeeded(t *transcript.Transcript, sp Split) []transcript.Span {
	spans := PlaceText(t, sp)
	for _, mi := range sp.Summarized {
		spans = append(spans, messageText(t, mi))
	}
	return spans
}

// PlaceText lists the spans of a document whose text summarizing sp reads besides the new
// messages it summarizes: the earlier summaries it folds in, and the lines Place reads or
// edits (the first and last summarized messages, the Claude Code messages it re-chains,
// the Codex messages it moves, the messages whose pinned texts it carries over).
func PlaceText(t *transcript.Transcript, sp Split) []transcript.Span {
	if len(sp.Summarized) == 0 {
		return nil
	}
	spans := []transcript.Span{messageText(t, sp.Summarized[0]), messageText(t, sp.Summarized[len(sp.Summarized)-1])}
	for _, mi := range sp.Previous {
		spans = append(spans, messageText(t, mi))
	}
	drop := make([]bool, len(t.Messages))
	for _, mi := range sp.Summarized {
		drop[mi] = true
	}
	switch t.Format {
	case transcript.ClaudeCode:
		for _, rc := range t.RechainTargets(drop, "") {
			spans = append(spans, messageText(t, rc.Message))
		}
	case transcript.Codex:
		// The kept messages before and among the summarized ones move, and the first kept
		// after them gives the compacted record its timestamp.
		if at := afterLast(t, sp.Summarized); at >= 0 {
			for mi := 0; mi <= at; mi++ {
				if !drop[mi] && !t.Messages[mi].Header {
					spans = append(spans, messageText(t, mi))
				}
			}
		}
	}
	// The pinned texts the summary carries over.
	for _, mi := range sp.Summarized {
		if t.Messages[mi].HoldsPinned() {
			spans = append(spans, messageText(t, mi))
		}
	}
	return spans
}

// messageText is the span of a message's text: in a JSONL document its lines, from the
// first to the last (a Claude Code turn's lines may have others between them).
func messageText(t *transcript.Transcript, mi int) transcript.Span {
	m := &t.Messages[mi]
	if len(m.Lines) == 0 {
		return m.Span
	}
	s := m.Lines[0]
	for _, l := range m.Lines {
		s.Start, s.End = min(s.Start, l.Start), max(s.End, l.End)
	}
	return s
}

// chooseRestored picks the files restored after the summary: the newest content the
// summarized part shows of the files it read or changed last, but those the kept part
// shows again (read in a streamed document from the kept messages' own text), within
// --restore-files, --restore-tokens and 1/restoreShare of what is summarized, so that restoring
// never costs more than a small part of the saving.
func chooseRestored(t *transcript.Transcript, d document, sp Split, x *Extractor, f *settings, o Options) ([]Restored, error) {
	if f.restoreFiles == 0 || f.fileTokens == 0 {
		return nil, nil
	}
	rs := x.Restored()
	if len(rs) == 0 {
		return nil, nil
	}
	gone := map[int]bool{}
	for _, mi := range sp.Summarized {
		gone[mi] = true
	}
	newer := map[string]bool{}
	for mi := sp.Summarized[0] + 1; mi < len(t.Messages); mi++ {
		if gone[mi] || t.Messages[mi].Header {
			continue
		}
		err := d.Visit([]transcript.Span{messageText(t, mi)}, func(text string, base int) error {
			keptReads(&transcript.Transcript{Format: t.Format, Doc: text, Base: base, Messages: t.Messages}, mi, newer)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ChooseRestored(rs, newer, RestoreOptions{Files: f.restoreFiles, FileTokens: f.fileTokens,
		Tokens: min(f.restoreFiles*f.fileTokens, sp.Tokens/restoreShare), Counter: o.Counter}), nil
}

// localOf is Local over a document that may be streamed: each message is read on its
// own, given to the Extractor, and let go.
func localOf(t *transcript.Transcript, d document, x *Extractor, msgs []int) (Sections, error) {
	for _, mi := range msgs {
		err := d.Visit([]transcript.Span{messageText(t, mi)}, func(text string, base int) error {
			x.Add(&transcript.Transcript{Format: t.Format, Doc: text, Base: base, Messages: t.Messages}, mi)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return x.Sections(), nil
}

// addedTokens counts what placing the summary added: the summary message (and, in a
// Codex rollout, the items moved into its replacement history), measured as ctx-count
// measures them, by reading the inserted text on its own.
func addedTokens(t *transcript.Transcript, o Options, edits []transcript.Edit) (int, bool) {
	summary := ""
	for _, e := range edits {
		if e.With != "" {
			summary = e.With // the first text an edit adds is the summary
			break
		}
	}
	doc := summary
	if !t.Format.JSONL() {
		doc = `{"` + t.Format.Wire().Body() + `":[` + summary + `]}`
	}
	if summary == "" {
		return 0, false
	}
	mini, err := transcript.Parse([]byte(doc), transcript.Options{Format: t.Format, Name: "summary.jsonl"})
	if err != nil {
		return 0, false
	}
	n := 0
	for _, tokens := range measure.Of(mini, o.Counter, false).Counts().PerMessage {
		n += tokens
	}
	return n, true
}

// moved is what the messages that a Codex compacted record carries in its replacement
// history, or moves to just after it, counted where they were (they are counted again
// with the record).
func moved(t *transcript.Transcript, o Options, sp Split) int {
	if t.Format != transcript.Codex || len(sp.Summarized) == 0 {
		return 0
	}
	in := map[int]bool{}
	for _, mi := range sp.Summarized {
		in[mi] = true
	}
	n := 0
	for mi := 0; mi < afterLast(t, sp.Summarized); mi++ {
		if !in[mi] && !t.Messages[mi].Header {
			n += o.PerMessage[mi]
		}
	}
	return n
}

// mayMerge reports whether the summary message, a user message where the first
// summarized message was, can meet another user message: only the Messages API refuses
// that, and only then is the result read again for ctx-repair's rules.
func mayMerge(t *transcript.Transcript, sp Split) bool {
	if !t.Format.MessagesAPI() || len(sp.Summarized) == 0 {
		return false
	}
	gone := map[int]bool{}
	for _, mi := range sp.Summarized {
		gone[mi] = true
	}
	at := sp.Summarized[0]
	for mi := at - 1; mi >= 0; mi-- { // the kept message before it
		if m := &t.Messages[mi]; !m.Header && !gone[mi] {
			if m.Role == "user" {
				return true
			}
			break
		}
	}
	for mi := at + 1; mi < len(t.Messages); mi++ { // and after it
		if !gone[mi] {
			return t.Messages[mi].Role != "assistant"
		}
	}
	return false
}
