// Package budget is ctx-budget, tiers 0-1 of the ctxkit pipeline: it normalizes every tool
// result (terminal escapes, redraws, trailing white space, repeated lines: normalize.go)
// and caps its size. Over a cap, a result keeps the lines that say something (errors,
// diagnostics, failing tests, stack frames: select.go), or else its head and tail (cut.go),
// with markers that say what was cut and how to get it back. A hard cap is always on, on
// the newest result too; above a utilization of the effective window the cap tightens for
// all but the newest results.
//
// Plan is the tier: a pure function from a parsed transcript and Options to the edits that
// cut the results and the run's Stats. Main is the command-line adapter around it.
package budget

import (
	"fmt"
	"math"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Options configure the tier. The zero value cuts nothing; Defaults gives the documented
// defaults.
type Options struct {
	// Cap holds every tool result at any utilization.
	Cap Limit
	// From MidAt utilization (inclusive) results are held to MidCap as well, and above
	// HighAt to HighCap. Utilization is a fraction of the effective window.
	MidAt, HighAt   float64
	MidCap, HighCap Limit
	// ErrorFactor scales the limits for results that report an error (errors are worth
	// more to the model than their size suggests). Values below 1 count as 1.
	ErrorFactor float64
	// KeepRecent results, the newest ones, are held to the hard cap only.
	KeepRecent int
	// ExcludeTools names tools whose results are never changed.
	ExcludeTools []string
	// Normalize removes terminal escapes, redraws, trailing white space, extra blank lines
	// and repeated lines from every result but file reads (normalize.go).
	Normalize bool
	// HeadTail cuts every result at head and tail, whatever its lines say: the first
	// release's cut, kept as the baseline the cut by lines is measured against.
	HeadTail bool
	// Counter measures token limits and the marker's original size. Nil means the estimate.
	Counter tokens.Counter
	// Utilization is the document's tokens over the effective window, measured before any
	// edit (see Utilization).
	Utilization float64
	// Repay and Price judge the utilization's caps on old results, those the request
	// before already held (all but the results after the last assistant message): cutting
	// them breaks the prompt cache from the first one cut on, so they are cut only when the
	// saving pays that back within Repay requests at Price, as ctx-snip's clearing must
	// (0 turns the test off). The results that arrived with this request are capped
	// whatever it costs: changing them breaks no cache. PerMessage is each message's
	// tokens (measure.Counts), what a cut takes out of the cache; nil: counted here.
	Repay      int
	Price      tokens.Price
	PerMessage []int
}

// Defaults returns the documented defaults: 50,000 characters always, 30,000 from 50%
// utilization, 15,000 above 70%, twice that for errors, the newest result kept whole.
func Defaults() Options {
	return Options{
		Cap:         Chars(50_000),
		MidAt:       0.50,
		MidCap:      Chars(30_000),
		HighAt:      0.70,
		HighCap:     Chars(15_000),
		ErrorFactor: 2,
		KeepRecent:  1,
		Normalize:   true,
		Repay:       10,
	}
}

// Stats describe one run.
type Stats struct {
	// Trigger is why the limits in force apply: "hard cap", or "utilization 63%" when the
	// utilization tightened them.
	Trigger string
	// Limits lists the limits in force, for people ("30,000 characters").
	Limits []string
	// Results is the number of tool results seen; Changed how many were changed (cut,
	// normalized or both), Cut how many were cut, Recut how many of those had been cut
	// before.
	Results, Changed, Cut, Recut int
	// Skipped counts results spared the utilization's caps: the newest, those of an
	// excluded tool (never changed at all), those in a message no lossy tier may alter.
	Skipped int
	// Normalized counts the results normalizing changed, NormalizedTokens what that saved
	// (included in TokensDelta).
	Normalized, NormalizedTokens int
	// Errors counts results over the limits that were recognised as errors and given the
	// larger share.
	Errors int
	// CharsRemoved is the characters removed by this run.
	CharsRemoved int
	// Repay is the judgement of the utilization's caps on old results against the prompt
	// cache they break (nil when no old result is over them); Held counts the old results
	// those caps spared because the cut would not repay.
	Repay *tokens.Repayment
	Held  int
	// TokensDelta is the change in the document's token count (count.Total with the same
	// counter): zero or negative.
	TokensDelta int
}

// Utilization measures a transcript against a budget: its total tokens (count.Total) and
// that total over the effective window (0 when there is no window).
func Utilization(t *transcript.Transcript, c tokens.Counter, b tokens.Budget) (total int, u float64) {
	total = measure.Total(t, c)
	return total, utilization(total, b)
}

func utilization(total int, b tokens.Budget) float64 {
	if b.Effective <= 0 {
		return 0
	}
	return float64(total) / float64(b.Effective)
}

// limits returns the limits in force at the options' utilization and the trigger.
func (o *Options) limits() ([]Limit, string) {
	ls := []Limit{}
	trigger := "hard cap"
	if o.Cap.N > 0 {
		ls = append(ls, o.Cap)
	}
	var tier Limit
	switch {
	case o.Utilization > o.HighAt:
		tier = o.HighCap
	case o.Utilization >= o.MidAt:
		tier = o.MidCap
	}
	if tier.N > 0 {
		trigger = fmt.Sprintf("utilization %.0f%%", math.Floor(o.Utilization*100))
		ls = appendLimit(ls, tier)
	}
	return ls, trigger
}

// appendLimit adds l, keeping one limit per unit: the tighter.
func appendLimit(ls []Limit, l Limit) []Limit {
	for i := range ls {
		if ls[i].Tokens == l.Tokens {
			ls[i].N = min(ls[i].N, l.N)
			return ls
		}
	}
	return append(ls, l)
}

// unit is one text of a tool result the model reads: the result's content string or one
// text part of its list content.
type unit struct {
	body transcript.Span // the JSON string literal to replace
	text string          // the decoded literal
	// inner locates, in text, the JSON string literal of the command output when the text
	// is Codex's {"output": ..., "metadata": ...} wrapper; the cut applies to that output.
	inner    transcript.Span
	hasInner bool
	// head is the length of a label the text starts with (Block.Head: Cline's
	// "[tool for 'x'] Result:" line), which the cut keeps: the model still sees what the
	// result was.
	head     int
	cutText  string // what the cut measures: the wrapped output, the text after its label, or text
	cutRunes int
	newText  string
	newRunes int
	// size is newText measured in the unit of the limit being applied.
	size int
}

// Plan decides the cuts for one transcript: the edits to apply with t.Apply, and the
// run's statistics. It does no I/O.
func Plan(t *transcript.Transcript, o Options) ([]transcript.Edit, Stats) {
	p, st := newPlanner(t, o)
	pre, _ := p.judgeOld(&st, func(i int, s *Stats) ([]transcript.Edit, error) { return p.cut(t, i, s), nil })
	var edits []transcript.Edit
	for i := range p.results {
		if c, ok := pre[i]; ok {
			edits = append(edits, c.edits...)
			st.addCut(c.st)
			continue
		}
		edits = append(edits, p.cut(t, i, &st)...)
	}
	return edits, st
}

// precut is an old result's cut, decided while judging it (judgeOld).
type precut struct {
	edits []transcript.Edit
	st    Stats
}

// judgeOld decides which old results the utilization's caps apply to: cut reads and cuts
// result i into its own figures. It cuts the old results over those caps; cutting them
// from one of them on breaks the cache from there, so the cuts stand from the oldest one
// whose saving, with the newer ones', repays that within o.Repay requests, and the older
// ones are held to the hard cap alone, as the newest result is (all of them when no start
// repays), with the reason in st. It returns the cuts that stand, to be used as they are.
func (p *planner) judgeOld(st *Stats, cut func(i int, s *Stats) ([]transcript.Edit, error)) (map[int]precut, error) {
	if p.o.Repay <= 0 || len(p.limits) == 0 || p.trigger == "hard cap" {
		return nil, nil
	}
	p.judging = true
	pre, err := p.judge(st, cut)
	p.judging = false
	for i, c := range pre {
		for k := range c.edits {
			c.edits[k].With = transcript.Quote(c.edits[k].With)
		}
		pre[i] = c
	}
	return pre, err
}

// judge is judgeOld, its edits not quoted yet.
func (p *planner) judge(st *Stats, cut func(i int, s *Stats) ([]transcript.Edit, error)) (map[int]precut, error) {
	var cands []int // the old results the utilization's caps may cut, oldest first
	for i, ref := range p.results {
		if ref.Message >= p.arrival || p.skip[i] || p.hardOnly[i] || !mayExceed(textUnits(p.t.Block(ref)), p.limits) {
			continue
		}
		cands = append(cands, i)
	}
	per := p.o.PerMessage
	if len(cands) > 0 && len(per) != len(p.t.Messages) {
		per = measure.Of(p.t, p.c, false).Counts().PerMessage
	}
	if p.bounds != nil {
		return p.judgeBounded(cands, per, cut)
	}
	pre := map[int]precut{}
	var order []int // the old results a cut changes, oldest first
	for _, i := range cands {
		var s Stats
		edits, err := cut(i, &s)
		if err != nil {
			return nil, err
		}
		pre[i] = precut{edits, s}
		if len(edits) > 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return pre, nil
	}
	// from[k]: the saving of the cuts from order[k] on, and the tokens from its message on.
	judge := func(k int) tokens.Repayment {
		saved, uncached := 0, 0
		for _, i := range order[k:] {
			saved -= pre[i].st.TokensDelta
		}
		for mi := p.results[order[k]].Message; mi < len(per); mi++ {
			uncached += per[mi]
		}
		return p.o.Price.Judge(saved, uncached, p.o.Repay)
	}
	start, r := len(order), judge(0)
	for k := range order {
		if jk := judge(k); jk.Repays {
			start, r = k, jk
			break
		}
	}
	st.Repay = &r
	why := judge(0).Why() // (before the held results' cuts go)
	for _, i := range order[:start] {
		p.hardOnly[i] = true
		delete(pre, i)
		st.Held++
	}
	if start > 0 {
		st.Trigger += fmt.Sprintf(": %d old results held to the hard cap: %s", start, why)
	}
	return pre, nil
}

// unbounded stands for a saving not known to be bounded: more than any start needs, and
// far from overflowing when a few million of them are summed.
const unbounded = 1 << 40

// judgeBounded is judgeOld when only its decision is wanted, not its figures (a run
// without statistics): the same cuts stand and the same results are held, but a result
// is cut only when that decides something. A cut saves at most the tokens of the result
// it cuts (p.bounds, counted already), and a start repays only if the savings from it on
// do (Repays grows with the saving), so a start whose savings, taken at those bounds for
// the results not cut yet, would not repay is passed over without cutting anything; at a
// start that could repay, a result from it on not cut yet is cut, until every result from
// the start on is (the cuts that then stand) or its bound no longer repays. Any order
// decides the same: a start is taken only once every result from it on is cut, and passed
// over only when the savings from it on, exact or at bounds, would not repay. The order
// is chosen for the work: a cut costs about the size of its result and takes off its bound
// about what it keeps, much the same for every result over the caps, and that for every
// start from x to it; so the result cut next is the one with the most of those starts for
// its size. Bytes of old results cut on generated 10 MB requests, newest first (before)
// and so: Anthropic 1.7 MB and 0.9 MB (of 5.7 MB judgeOld cuts), Responses 5.6 and 5.2
// (of 6.0), Codex 2.0 and 1.9 (of 2.5); all of them on OpenAI and Claude Code, whose
// cuts stand from the first. Old results held without being cut are held to the hard cap
// as those cut and held are: one whose cut would not change it is not changed by the hard
// cap either, which is looser. st gets no Repay, Held or reason: nothing reads them.
func (p *planner) judgeBounded(cands []int, per []int, cut func(i int, s *Stats) ([]transcript.Edit, error)) (map[int]precut, error) {
	n := len(cands)
	if n == 0 {
		return map[int]precut{}, nil
	}
	// uncached[mi]: the tokens from message mi on, which a cut there takes out of the cache.
	uncached := make([]int, len(per)+1)
	for mi := len(per) - 1; mi >= 0; mi-- {
		uncached[mi] = uncached[mi+1] + per[mi]
	}
	// saving[x]: what cutting cands[x] saves, were it a cut that changes the result: its
	// bound until it is cut. suffix[x]: the sum of saving from x on.
	saving := make([]int, n)
	suffix := make([]int, n+1)
	for x := n - 1; x >= 0; x-- {
		ref := p.results[cands[x]]
		saving[x] = unbounded // (a block the counts do not hold: cut to know)
		if ref.Message < len(p.bounds) && ref.Block < len(p.bounds[ref.Message]) {
			saving[x] = max(0, p.bounds[ref.Message][ref.Block])
		}
		suffix[x] = suffix[x+1] + saving[x]
	}
	pre := map[int]precut{}
	done := make([]bool, n) // cands[x] is cut
	start := n
	for x := 0; x < n; {
		ref := p.results[cands[x]]
		if !p.o.Price.Judge(suffix[x], uncached[min(ref.Message, len(per))], p.o.Repay).Repays {
			x++ // not a start, whatever the cuts from it on save
			continue
		}
		// The result to cut next, of those from x on not cut yet: the one that tightens
		// the bounds of the most starts (its own and every older one from x) for its
		// size, the newest of those that do as much.
		next, nextSize := -1, 0
		for y := x; y < n; y++ {
			if done[y] {
				continue
			}
			size := p.t.Block(p.results[cands[y]]).Span.Len()
			if next < 0 || (y-x+1)*nextSize >= (next-x+1)*size {
				next, nextSize = y, size
			}
		}
		if next >= 0 {
			i := cands[next]
			var s Stats
			edits, err := cut(i, &s)
			if err != nil {
				return nil, err
			}
			pre[i] = precut{edits, s}
			done[next] = true
			was := saving[next]
			saving[next] = 0
			if len(edits) > 0 {
				saving[next] = -s.TokensDelta
			}
			for y := 0; y <= next; y++ {
				suffix[y] += saving[next] - was
			}
			continue
		}
		if len(pre[cands[x]].edits) > 0 {
			start = x // every cut from here on known: the savings are exact, and repay
			break
		}
		x++
	}
	for x := range start {
		i := cands[x]
		if c, ok := pre[i]; ok && len(c.edits) == 0 {
			continue // cut, and the cut changes nothing: kept as judgeOld keeps it
		}
		p.hardOnly[i] = true
		delete(pre, i)
	}
	return pre, nil
}

// planner is what Plan knows before it reads any text: the limits in force and, for every
// tool result, whether it may be cut. A streamed transcript is planned with the
// conversation of its first pass and cut, result by result, in its second (stream.go).
type planner struct {
	o       Options
	c       tokens.Counter
	limits  []Limit
	factor  float64
	t       *transcript.Transcript // the conversation: blocks and spans, text not needed
	results []transcript.Ref
	// tools names the tool of each result; skip marks the results that are never
	// changed, hardOnly those held to the hard cap alone.
	tools          []string
	skip, hardOnly []bool
	hard           []Limit // the hard cap, or nothing
	// trigger is why the limits apply ("hard cap" when the utilization's do not); arrival
	// the first message after the last assistant message: the results from there on came
	// with this request.
	trigger string
	arrival int
	// bounds, when set, is each block's tokens (measure.Counts.Blocks): what a cut of a
	// result can save at most, by which judgeBounded decides without cutting every old
	// result. Nil: judgeOld cuts them all, for the figures of its judgement.
	bounds [][]int
	// judging: cut is judging old results (judgeOld), most of whose cuts are dropped:
	// its edits hold the new text, quoted only for the cuts that stand. noDelta: the
	// change in tokens is not wanted (no figures, and the judgement is made), so cut does
	// not count it.
	judging, noDelta bool
}

// newPlanner looks at the conversation's structure: its tool results, the calls they
// answer, which are protected. It reads no text.
func newPlanner(t *transcript.Transcript, o Options) (*planner, Stats) {
	c := o.Counter
	if c == nil {
		c, _ = tokens.New("estimate")
	}
	ls, trigger := o.limits()
	st := Stats{Trigger: trigger}
	for _, l := range ls {
		st.Limits = append(st.Limits, l.describe())
	}
	p := &planner{o: o, c: c, limits: ls, factor: max(o.ErrorFactor, 1), t: t, trigger: trigger}
	for mi := range t.Messages {
		if t.Messages[mi].Role == "assistant" {
			p.arrival = mi + 1
		}
	}

	// The tool each result answers: a result seldom names it itself.
	names := map[transcript.Ref]string{}
	for _, pr := range t.Pairs() {
		if pr.Call != transcript.None && pr.Result != transcript.None {
			if n := t.Block(pr.Call).ToolName; n != "" {
				names[pr.Result] = n
			}
		}
	}
	excluded := map[string]bool{}
	for _, n := range o.ExcludeTools {
		excluded[strings.TrimSpace(n)] = true
	}
	protected := t.Protected()

	for mi := range t.Messages {
		if t.Messages[mi].Header {
			continue
		}
		for bi := range t.Messages[mi].Blocks {
			if t.Messages[mi].Blocks[bi].Kind == transcript.ToolResult {
				p.results = append(p.results, transcript.Ref{Message: mi, Block: bi})
			}
		}
	}
	st.Results = len(p.results)
	if len(ls) == 0 && !o.Normalize {
		p.results = nil // nothing is over no limit
		return p, st
	}
	if o.Cap.N > 0 {
		p.hard = []Limit{o.Cap}
	}
	recent := len(p.results) - max(o.KeepRecent, 0)
	p.tools = make([]string, len(p.results))
	p.skip = make([]bool, len(p.results))
	p.hardOnly = make([]bool, len(p.results))
	for i, ref := range p.results {
		tool := names[ref]
		if tool == "" {
			tool = t.Block(ref).ToolName
		}
		p.tools[i] = tool
		switch {
		case excluded[tool]:
			p.skip[i] = true
			st.Skipped++
		case i >= recent || protected[ref.Message]:
			p.hardOnly[i] = true
			st.Skipped++
		}
	}
	return p, st
}

// limitsOf are the limits result i is held to.
func (p *planner) limitsOf(i int) []Limit {
	if p.hardOnly[i] {
		return p.hard
	}
	return p.limits
}

// mayCut reports whether result i may be changed: it is not excluded, and it is normalized
// or a cheap bound on its size, read off its spans, is over a limit.
func (p *planner) mayCut(i int) bool {
	if p.skip[i] {
		return false
	}
	units := textUnits(p.t.Block(p.results[i]))
	return len(units) > 0 && (p.o.Normalize && normalizes(p.tools[i]) || mayExceed(units, p.limitsOf(i)))
}

// addCut adds to s what a cut added to its own Stats (cut's counts and sums).
func (s *Stats) addCut(c Stats) {
	s.Errors += c.Errors
	s.CharsRemoved += c.CharsRemoved
	s.TokensDelta += c.TokensDelta
	s.Normalized += c.Normalized
	s.NormalizedTokens += c.NormalizedTokens
	s.Changed += c.Changed
	s.Cut += c.Cut
	s.Recut += c.Recut
}

// cut decides the cut of result i, reading its text through doc: the whole document, or,
// for a streamed one, a piece of it that holds the result. It is safe for concurrent use:
// it changes nothing but *st (the figures addCut sums).
func (p *planner) cut(doc *transcript.Transcript, i int, st *Stats) []transcript.Edit {
	if !p.mayCut(i) {
		return nil
	}
	b := p.t.Block(p.results[i])
	tool := p.tools[i]
	c := forCuts(p.c)
	units := textUnits(b)
	limits := p.limitsOf(i)
	// Most results are under every limit and have nothing to normalize, which their JSON
	// literals tell without decoding them.
	over := len(limits) > 0 && mayExceed(units, limits)
	normalizing := make([]bool, len(units))
	anyNormalizing := false
	if p.o.Normalize && normalizes(tool) {
		for ui := range units {
			normalizing[ui] = mayNeedNormalizing(doc.Slice(units[ui].body))
			anyNormalizing = anyNormalizing || normalizing[ui]
		}
	}
	if !over && !anyNormalizing {
		return nil
	}
	for ui := range units {
		units[ui].text = doc.BodyText(&transcript.Block{Body: units[ui].body})
	}
	if over && isError(doc, b, units) {
		st.Errors++
		if p.factor != 1 {
			scaled := make([]Limit, len(limits))
			for j, l := range limits {
				scaled[j] = l.scale(p.factor)
			}
			limits = scaled
		}
	}
	normalized, cutApplied := false, false
	normalizedTokens := 0
	changed, cutBefore := false, false
	for ui := range units {
		u := &units[ui]
		u.cutText = u.text
		if label, rest := transcript.SplitLabel(u.text, u.head); label != "" {
			u.cutText = rest
		} else {
			u.head = 0
			u.unwrap()
		}
		u.cutRunes = charCount(u.cutText)
		u.newText, u.newRunes = u.cutText, u.cutRunes
		if _, ok := parseCut(u.cutText); ok || hasSelection(u.cutText) {
			cutBefore = true
		}
		if normalizing[ui] && needsNormalizing(u.newText) {
			// kept only when it does not raise the count: what it saved is known then
			n := normalize(u.newText)
			if was, is := c.Count(u.newText), c.Count(n); is <= was {
				u.newText, u.newRunes, normalized = n, charCount(n), true
				normalizedTokens += was - is
			}
		}
	}
	// Apply every limit in force until none is exceeded; a cut only shrinks the text,
	// so two passes settle it (the second catches a marker that pushed the other unit
	// back over).
	for range 3 {
		again := false
		for _, l := range limits {
			measure := measurer(l, c)
			for ui, share := range shares(units, l, c) {
				u := &units[ui]
				if u.size <= share {
					continue
				}
				if cut := fitText(u.newText, u.newRunes, share, measure, l.Tokens, tool, c, p.o.HeadTail, u.cutText, u.cutRunes); cut != u.newText {
					u.newText, u.newRunes, again, cutApplied = cut, charCount(cut), true, true
				}
			}
		}
		if !again {
			break
		}
	}
	var edits []transcript.Edit
	for ui := range units {
		u := &units[ui]
		if u.newText == u.cutText {
			continue
		}
		out := u.newText
		switch {
		case u.hasInner:
			out = u.text[:u.inner.Start] + transcript.Quote(out) + u.text[u.inner.End:]
		case u.head > 0:
			out = u.text[:u.head] + out
		}
		with := out
		if !p.judging {
			with = transcript.Quote(out)
		}
		edits = append(edits, transcript.Edit{Span: u.body, With: with})
		st.CharsRemoved += u.cutRunes - u.newRunes
		if !p.noDelta {
			st.TokensDelta += p.c.Count(out) - p.c.Count(u.text) // (what later tiers count: kept between runs)
		}
		changed = true
	}
	if changed {
		st.Changed++
	}
	if normalized {
		st.Normalized++
		st.NormalizedTokens += normalizedTokens
	}
	if changed && cutApplied {
		st.Cut++
		if cutBefore {
			st.Recut++
		}
	}
	return edits
}

// fitText cuts a text of n characters to limit: by what its lines say when they say
// something (and it is not a file), else at head and tail. raw is the result as it came
// (before normalizing) of rawN characters: a cut by lines in characters keeps no more
// tokens than its head and tail would.
func fitText(text string, n, limit int, measure func(string) int, inTokens bool, tool string, c tokens.Counter, headTail bool, raw string, rawN int) string {
	// The text's own count is asked for by the selection's figures, by the head-and-tail
	// bound (raw is most often text itself) and by a head-and-tail cut: counted once.
	textTokens := -1
	count := func(s string) int {
		if len(s) != len(text) || s != text {
			return c.Count(s)
		}
		if textTokens < 0 {
			textTokens = c.Count(text)
		}
		return textTokens
	}
	if normalizes(tool) && !headTail {
		if _, headTail := parseCut(text); !headTail {
			sc := scratchPool.Get().(*scratch)
			defer scratchPool.Put(sc)
			chars := limit
			if inTokens {
				chars = 4 * limit
			}
			if s := newSelection(text, n, chars, count, tool, sc); s != nil {
				out, ok := s.fit(limit, measure, inTokens, 0)
				if ok && !inTokens {
					// Lines kept for what they say are often denser in tokens than the
					// text (short lines, numbers, quoted values): a cut in characters
					// keeps no more tokens than a cut of the raw result at head and
					// tail would (what ctx-budget kept before it read lines).
					most := c.Count(split(raw, rawN, count).fit(limit, measure, inTokens, tool))
					if c.Count(out) > most {
						charsFitted := s.fitted
						out, ok = s.fit(limit, measure, inTokens, most)
						if ok && s.described {
							// Tokens are what is short: a gap told by its count alone
							// leaves the room of its description to lines kept for
							// what they say, when that keeps more of them (not more
							// of the others: those a description stands for well).
							bounded := s.saying(s.fitted)
							s.countGapsOnly()
							s.fitted = charsFitted
							if plain, fits := s.fit(limit, measure, inTokens, most); fits && s.saying(s.fitted) > bounded {
								out = plain
							}
						}
					}
				}
				if ok {
					return out
				}
			}
		}
	}
	return split(text, n, count).fit(limit, measure, inTokens, tool)
}

// MayCut reports whether any tool result could be over a limit at some utilization, by a
// bound that needs no decoding and no counting: when it says no, Plan at any utilization
// makes no edits, so a caller can pass the document through without measuring it.
func MayCut(t *transcript.Transcript, o Options) bool {
	least := 0
	for _, l := range []Limit{o.Cap, o.MidCap, o.HighCap} {
		if l.N > 0 && (least == 0 || l.N < least) {
			least = l.N
		}
	}
	if least == 0 {
		return false
	}
	bound := []Limit{Chars(least)}
	for mi := range t.Messages {
		if t.Messages[mi].Header {
			continue
		}
		for bi := range t.Messages[mi].Blocks {
			if b := &t.Messages[mi].Blocks[bi]; b.Kind == transcript.ToolResult && mayExceed(textUnits(b), bound) {
				return true
			}
		}
	}
	return false
}

// forCuts is c counting as Recount does when it can: the texts a cut is fitted with (the
// result, the cuts tried) share most of their lines, which Recount counts once.
func forCuts(c tokens.Counter) tokens.Counter {
	if r, ok := c.(tokens.Recounter); ok {
		return recounting{r}
	}
	return c
}

type recounting struct{ tokens.Recounter }

func (r recounting) Count(s string) int { return r.Recount(s) }

// measurer returns how a limit measures a text.
func measurer(l Limit, c tokens.Counter) func(string) int {
	if l.Tokens {
		return c.Count
	}
	return charCount
}

// textUnits lists the texts of a result the tier may cut: its content string, or the text
// parts of its list content. Images and structured (non-string) content are left alone.
// (A body that is not JSON is a string literal.)
func textUnits(b *transcript.Block) []unit {
	if b.User {
		return nil // the user's words: no call gives them back
	}
	var us []unit
	if len(b.Parts) > 0 {
		for pi := range b.Parts {
			p := &b.Parts[pi]
			if p.Kind == transcript.Text && !p.BodyJSON && !p.Body.IsZero() {
				us = append(us, unit{body: p.Body})
			}
		}
		return us
	}
	if !b.BodyJSON && !b.Body.IsZero() {
		us = append(us, unit{body: b.Body, head: b.Head})
	}
	return us
}

// mayExceed is a cheap bound that spares decoding results that cannot be over: a JSON
// string literal is never shorter than the text it decodes to, and a text never has more
// characters, or tokens, than bytes.
func mayExceed(us []unit, ls []Limit) bool {
	n := 0
	for _, u := range us {
		n += u.body.Len() - 2
	}
	for _, l := range ls {
		if n > l.N {
			return true
		}
	}
	return false
}

// unwrap points the cut at the command output inside Codex's JSON wrapper
// {"output":"...","metadata":{"exit_code":0,...}} (any key order), so the wrapper stays
// valid JSON.
func (u *unit) unwrap() {
	if len(u.text) < 12 || u.text[0] != '{' {
		return
	}
	out, meta, valid := transcript.ValidShellWrapper(u.text)
	if !valid || out.Type != gjson.String || !meta.IsObject() {
		return
	}
	u.inner = transcript.Span{Start: out.Index, End: out.Index + len(out.Raw)}
	u.hasInner = true
	u.cutText = out.String()
}

// shares divides a limit among a result's text units: each unit keeps what it has when
// that is less than an equal share, and the rest is split evenly among the larger ones
// (water-filling). It also records each unit's size in the limit's unit.
func shares(us []unit, l Limit, c tokens.Counter) []int {
	total := 0
	for i := range us {
		if l.Tokens {
			us[i].size = c.Count(us[i].newText)
		} else {
			us[i].size = us[i].newRunes
		}
		total += us[i].size
	}
	out := make([]int, len(us))
	if total <= l.N {
		for i := range us {
			out[i] = us[i].size
		}
		return out
	}
	left, open := l.N, len(us)
	done := make([]bool, len(us))
	for {
		settled := false
		for i := range us {
			if !done[i] && us[i].size*open <= left {
				out[i], done[i] = us[i].size, true
				left -= us[i].size
				open--
				settled = true
			}
		}
		if !settled || open == 0 {
			break
		}
	}
	for i := range us {
		if !done[i] {
			out[i] = left / open
		}
	}
	return out
}

// isError reports whether a result says it failed: the format's error flag (Anthropic
// is_error), a Codex exit code other than 0 (metadata.exit_code in the JSON wrapper, or
// a first line "Exit code: N"), or text that starts with "Error:" (any case) or
// <tool_use_error>. The units' texts are decoded (unit.text).
func isError(t *transcript.Transcript, b *transcript.Block, us []unit) bool {
	if b.IsError {
		return true
	}
	if len(us) == 0 {
		return false
	}
	// Only the start of the first text is needed, which spares decoding it all.
	head := decodePrefix(t.Slice(us[0].body), 512)
	trimmed := strings.TrimLeft(head, " \t\r\n")
	switch {
	case len(trimmed) >= 6 && strings.EqualFold(trimmed[:6], "error:"):
		return true
	case strings.HasPrefix(trimmed, "<tool_use_error>"):
		return true
	case strings.HasPrefix(trimmed, "Exit code: "):
		code := trimmed[len("Exit code: "):]
		if i := strings.IndexAny(code, "\r\n"); i >= 0 {
			code = code[:i]
		}
		return strings.TrimSpace(code) != "0"
	case strings.HasPrefix(trimmed, "{"):
		if ec := gjson.Get(us[0].text, "metadata.exit_code"); ec.Exists() {
			return ec.Int() != 0
		}
	}
	return false
}

// decodePrefix decodes about the first n bytes of a JSON string literal, ending the
// prefix between escapes.
func decodePrefix(raw string, n int) string {
	if len(raw) <= n+2 {
		return gjson.Parse(raw).String()
	}
	i := 1
	for i < n {
		switch {
		case raw[i] != '\\':
			i++
		case i+1 < len(raw) && raw[i+1] == 'u':
			i += 6
		default:
			i += 2
		}
	}
	if i >= len(raw)-1 {
		return gjson.Parse(raw).String()
	}
	return gjson.Parse(raw[:i] + `"`).String()
}
