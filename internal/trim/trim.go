// Package trim owns ctx-trim, the emergency tier: when a conversation is still above its
// trigger after the cheaper tiers, it drops the oldest messages until the document fits,
// keeping the system prompt, pinned context, summary messages and the newest exchange, and
// never separating a tool call from its result.
//
// Plan is a pure function from a parsed document and its measures to the edits that drop
// messages. Where dropping would leave an Anthropic conversation opening with an assistant
// message, Plan puts ctx-repair's opening user message first, whatever else the input
// breaks. Apply then splices the edits and, for an input the API accepts, lets ctx-repair's
// rules restore the rest of what dropping can break (two user messages may meet), so the
// output is a request the API accepts.
package trim

import (
	"github.com/tidwall/gjson"
	"strconv"

	"fmt"
	"math"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Strategies: which end of the conversation survives.
const (
	// KeepLast drops the oldest messages first: the newest survive (the default).
	KeepLast = "last"
	// KeepFirst keeps the opening exchange (the task as the user first put it) and drops
	// from the messages after it: the middle goes first.
	KeepFirst = "first"
)

// Options steer the tier.
type Options struct {
	Counter tokens.Counter
	// Trigger is the utilization above which the tier acts; Target what it trims down to.
	Trigger, Target float64
	// MaxTokens, when above 0, replaces both: act above it, trim to it.
	MaxTokens int
	Strategy  string
	// Tokens is the document's size, Effective the window it is measured against, and
	// PerMessage each message's share (index-aligned with the transcript's messages).
	Tokens, Effective int
	PerMessage        []int
	// Removed is what earlier edits took out of each message (measure.Counts.Removed), so
	// the note states what the dropped messages first held; nil when nothing was.
	Removed []int
	// Repay and Price judge a drop that leaves the request over the window: it makes
	// nothing fit, so it must pay back the prompt cache it breaks within Repay requests
	// at Price, as ctx-summarize's summary and ctx-snip's clearing must (0: no test).
	Repay int
	Price tokens.Price
}

// Defaults are ctx-trim's defaults (the counter and measures aside).
func Defaults() Options {
	return Options{Trigger: 0.95, Target: 0.85, Strategy: KeepLast, Repay: 1}
}

// Dropped is one message the tier removes.
type Dropped struct {
	Message int    `json:"message"`
	Line    int    `json:"line,omitempty"`
	Role    string `json:"role"`
	Tokens  int    `json:"tokens"`
}

// Stats says what the tier did.
type Stats struct {
	Acts    bool
	Trigger string // why it acted or not
	Goal    int    // the size it trims to, in tokens
	Dropped []Dropped
	// TokensDropped is the sum of the dropped messages' shares; Fits whether the rest is
	// at or under Goal.
	TokensDropped int
	// Was is what the dropped messages held before any ctxkit edit: the size the note
	// states.
	Was  int
	Fits bool
	// HeldBack says the tier dropped nothing although over its trigger: dropping all it
	// may would not reach the goal, and the document fits the window as it is, so a
	// partial drop would lose messages and break the prompt cache for a few tokens.
	// Least is the size that drop would have left.
	HeldBack bool
	Least    int
	// Repay is the judgement of a drop that leaves the request over the window against
	// the prompt cache it breaks; one that does not repay is held back too.
	Repay *tokens.Repayment
	Kept  int // messages kept
	// Opened says the tier put an opening user message first (repair.FirstUserText): in an
	// Anthropic conversation that did not open with an assistant message, the first message
	// it kept is one. OpenerTokens is the opener's share, counted in Fits.
	Opened       bool
	OpenerTokens int
	// Noted says the tier put a note where the dropped messages were (noteText): in a
	// session log that records usage (Claude Code, Codex), so the model is told what is
	// gone, and the figures recorded before the drop still read right (the note says how
	// many tokens it stands for). NoteTokens is the note's share, counted in Fits.
	Noted      bool
	NoteTokens int
}

// notes says whether the tier notes what it dropped in t: a session log that records
// usage, whose figures the note keeps right.
func notes(t *transcript.Transcript) bool {
	return t.Format.UsageSource() != "" && len(t.Usage) > 0
}

// noteText is the note that stands for the dropped messages. ctx-count reads the figure
// back (measure.markerWas).
func noteText(messages, tokens int) string {
	return fmt.Sprintf("[ctx-trim: the %s earlier %s of this conversation were dropped to fit the context window (%s tokens); they are not available here]",
		human.Thousands(messages), plural(messages, "message"), human.Thousands(tokens))
}

// noteShare is what the note for the given figures costs, its framing included.
func noteShare(t *transcript.Transcript, c tokens.Counter, messages, dropped int) int {
	return tokens.MessageOverhead(measure.ProviderOf(t.Format)) + c.Count(noteText(messages, dropped))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// opener is the opening user message of an Anthropic conversation whose beginning was
// dropped: the one ctx-repair writes (repair.FirstUserText), byte for byte, so a later
// ctx-repair finds nothing to change.
var opener = `{"role":"user","content":[{"type":"text","text":` + transcript.Quote(repair.FirstUserText) + `}]}`

// Plan works out which messages to drop and returns the edits that drop them.
func Plan(t *transcript.Transcript, o Options) ([]transcript.Edit, Stats) {
	d := Choose(t, o)
	return d.Edits(t), d.Stats
}

// Drops is what Choose decided: Drop marks the messages to drop (nil when none), and
// Stats says why. Choose reads only the conversation's structure and measures.
type Drops struct {
	Drop  []bool
	Stats Stats
	first int // the first message kept, where the opener goes when Stats.Opened
	note  int // the first message kept after the first dropped one, where the note goes
}

// Edits returns the edits that carry out the drops. In a Claude Code session it reads the
// first lines of the kept messages that must be re-chained (t.RechainTargets), and nothing
// else of the document's text.
func (d *Drops) Edits(t *transcript.Transcript) []transcript.Edit {
	if len(d.Stats.Dropped) == 0 {
		return nil
	}
	if d.Stats.Noted {
		return d.noted(t)
	}
	edits := t.DropMessages(d.Drop)
	if d.Stats.Opened {
		at := t.Messages[d.first].Span.Start
		edits = append(edits, transcript.Edit{Span: transcript.Span{Start: at, End: at}, With: opener + ","})
	}
	return edits
}

// noted returns the edits that drop the messages and put the note in their place: a user
// record in a Claude Code session, chained between the kept messages around it, or a
// user message item in a Codex rollout.
func (d *Drops) noted(t *transcript.Transcript) []transcript.Edit {
	text := noteText(len(d.Stats.Dropped), d.Stats.Was)
	line := d.NoteLine(t)
	at := t.Slice(line)
	edits := t.DropLines(d.Drop)
	if t.Format == transcript.Codex {
		stamp := gjson.Get(at, "timestamp").Raw
		if stamp == "" {
			stamp = `""`
		}
		rec := `{"timestamp":` + stamp + `,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":` + transcript.Quote(text) + `}]}}` + "\n"
		return append(edits, transcript.Edit{Span: transcript.Span{Start: line.Start, End: line.Start}, With: rec})
	}
	uuid := transcript.DeriveUUID(gjson.Get(at, "uuid").String() + "\x00ctx-trim")
	parent := "null"
	for _, rc := range t.RechainTargets(d.Drop, "") {
		with := rc.Parent
		if rc.Message == d.note {
			parent, with = rc.Parent, transcript.Quote(uuid)
		}
		if e, ok := t.ParentEdit(rc.Message, with); ok {
			edits = append(edits, e)
		}
	}
	common, stamp := transcript.SessionFields(at)
	rec := `{"parentUuid":` + parent + `,` + common + `,"type":"user","message":{"role":"user","content":` + transcript.Quote(text) + `},"uuid":` + transcript.Quote(uuid) + stamp + "}\n"
	return append(edits, transcript.Edit{Span: transcript.Span{Start: line.Start, End: line.Start}, With: rec})
}

// NoteLine is the first line of the message the note goes before (Stats.Noted): the
// lines a plan that writes the note must read are it and RechainTargets'.
func (d *Drops) NoteLine(t *transcript.Transcript) transcript.Span {
	return t.Messages[d.note].Lines[0]
}

// Choose works out which messages to drop.
func Choose(t *transcript.Transcript, o Options) Drops {
	var st Stats
	st.Kept = len(t.Messages)
	// Two limits, each with the size it trims down to: the window's (above Trigger of the
	// effective window, down to Target) and --max-tokens (above it, down to it). The tier
	// acts when the document is over either and trims to the lower goal of those it is
	// over; it only shrinks the document, so it stays within the other limit too.
	var fired, within []string
	goal, idle := math.MaxInt, math.MaxInt
	if o.Effective > 0 {
		target := int(math.Floor(o.Target * float64(o.Effective)))
		if o.Tokens > int(math.Floor(o.Trigger*float64(o.Effective))) {
			goal = target
			fired = append(fired, fmt.Sprintf("utilization %.0f%% (trigger %s)", math.Floor(100*float64(o.Tokens)/float64(o.Effective)), percent(o.Trigger)))
		} else {
			idle = target
			within = append(within, fmt.Sprintf("below %s of window", percent(o.Trigger)))
		}
	}
	if o.MaxTokens > 0 {
		if o.Tokens > o.MaxTokens {
			goal = min(goal, o.MaxTokens)
			fired = append(fired, fmt.Sprintf("above --max-tokens %d", o.MaxTokens))
		} else {
			idle = min(idle, o.MaxTokens)
			within = append(within, fmt.Sprintf("within --max-tokens %d", o.MaxTokens))
		}
	}
	if len(fired) == 0 {
		st.Trigger, st.Goal, st.Fits = strings.Join(within, ", "), idle, true
		if len(within) == 0 {
			st.Trigger, st.Goal = "no window to measure against", 0
		}
		return Drops{Stats: st}
	}
	st.Trigger, st.Goal = strings.Join(fired, " and "), goal
	st.Acts = true
	units, firstUnit := droppableUnits(t)
	if o.Strategy == KeepFirst {
		// The opening exchange stays wherever it is: after a summary, the assistant's
		// reply to the summary comes before it and may go.
		for k := range units {
			if units[k].start == firstUnit {
				units = append(units[:k:k], units[k+1:]...)
				break
			}
		}
	}
	n := len(t.Messages)
	drop := make([]bool, n)
	// An Anthropic conversation must open with a user message: when the first message kept
	// is an assistant's, an opening user message goes first, and its share counts.
	first := firstMessage(t, drop, 0)
	// (An input that already opens with an assistant message is ctx-repair's to fix.)
	needsOpener := t.Format.MessagesAPI() && first < n && t.Messages[first].Role != "assistant"
	c := o.Counter
	if c == nil {
		c, _ = tokens.New("estimate")
	}
	openerTokens := 0
	if needsOpener {
		openerTokens = tokens.MessageOverhead("anthropic") + c.Count(repair.FirstUserText)
	}
	opened := func(first int) bool {
		return needsOpener && first < n && t.Messages[first].Role == "assistant"
	}
	// The note's share, at its longest (the figures it holds grow with what is dropped).
	noteTokens := 0
	if notes(t) {
		noteTokens = noteShare(t, c, n, o.Tokens)
	}
	// cost is what is left of the document, the opener and the note included when they
	// are needed.
	cost := func(size, first int) int {
		if opened(first) {
			size += openerTokens
		}
		if size < o.Tokens {
			size += noteTokens // something is dropped
		}
		return size
	}
	// Runs go oldest first until the rest fits. The opener makes the cost go up as well as
	// down, so the tier remembers the cheapest point on the way: when nothing fits, it
	// stops there, and never returns a document larger than it was given.
	size, k := o.Tokens, 0
	best, bestK := o.Tokens, 0
	for k < len(units) && cost(size, first) > goal {
		for mi := units[k].start; mi < units[k].end; mi++ {
			drop[mi] = true
			size -= o.PerMessage[mi]
		}
		first = firstMessage(t, drop, first)
		k++
		if c := cost(size, first); c < best {
			best, bestK = c, k
		}
	}
	if cost(size, first) > goal && bestK < k {
		for _, u := range units[bestK:k] {
			for mi := u.start; mi < u.end; mi++ {
				drop[mi] = false
				size += o.PerMessage[mi]
			}
		}
		k, first = bestK, firstMessage(t, drop, 0)
	}
	st.Fits = cost(size, first) <= goal
	for _, u := range units[:k] {
		for mi := u.start; mi < u.end; mi++ {
			st.TokensDropped += o.PerMessage[mi]
			st.Was += o.PerMessage[mi]
			if mi < len(o.Removed) {
				st.Was += o.Removed[mi]
			}
			st.Dropped = append(st.Dropped, Dropped{Message: mi, Role: t.Messages[mi].Role, Tokens: o.PerMessage[mi]})
		}
	}
	st.Kept -= len(st.Dropped)
	if len(st.Dropped) == 0 {
		return Drops{Stats: st}
	}
	if opened(first) {
		st.Opened, st.OpenerTokens = true, openerTokens
	}
	d := Drops{Drop: drop, Stats: st, first: first}
	if notes(t) {
		d.note = firstMessage(t, drop, st.Dropped[0].Message)
		if d.note < n && len(t.Messages[d.note].Lines) > 0 {
			d.Stats.Noted = true
			d.Stats.NoteTokens = noteShare(t, c, len(st.Dropped), st.Was)
			d.Stats.Fits = size+d.Stats.OpenerTokens+d.Stats.NoteTokens <= goal
		}
	}
	after := size + d.Stats.OpenerTokens + d.Stats.NoteTokens
	heldBack := func(why string) Drops {
		st.Dropped, st.TokensDropped, st.Was, st.Kept, st.Fits = nil, 0, 0, n, false
		st.HeldBack, st.Least = true, after
		st.Trigger += ", but " + why
		return Drops{Stats: st}
	}
	if !d.Stats.Fits && o.Effective > 0 && o.Tokens <= o.Effective && (o.MaxTokens <= 0 || o.Tokens <= o.MaxTokens) {
		return heldBack("dropping cannot reach the goal and the document fits the window")
	}
	// Dropping that leaves the request over the window fits nothing: it must repay the
	// cache it breaks, from the first dropped message on.
	uncached := 0
	for mi := st.Dropped[0].Message; mi < n; mi++ {
		uncached += o.PerMessage[mi]
	}
	r := o.Price.Judge(o.Tokens-after, uncached, o.Repay)
	switch {
	case o.Effective <= 0 || after <= o.Effective:
		r.Exempt = "makes the request fit the window"
	case o.Repay <= 0:
		r.Exempt = "--repay 0"
	}
	if r.Exempt != "" {
		return d // (the test does not apply: nothing to report)
	}
	st.Repay, d.Stats.Repay = &r, &r
	if !r.Repays {
		return heldBack("the request stays over the window after dropping (" + strconv.Itoa(after) + " tokens, window " + strconv.Itoa(o.Effective) + "), and " + r.Why())
	}
	return d
}

// firstMessage is the first message of the array at or after from that is not dropped
// (len(t.Messages) when there is none). Messages are dropped oldest first, so the first
// kept message only moves forward.
func firstMessage(t *transcript.Transcript, drop []bool, from int) int {
	for from < len(t.Messages) && (t.Messages[from].Header || drop[from]) {
		from++
	}
	return from
}

// unit is a run of messages [start, end) that goes or stays as a whole.
type unit struct{ start, end int }

// droppableUnits lists, oldest first, the runs of messages the tier may drop. Runs are cut
// where no tool call is separated from its result and a new step begins (a message that
// is not a tool result; in Responses not the call a reasoning item leads to). A run that
// holds a system prompt, a summary, pinned context (a message that is, or holds, the
// client's standing instructions: Claude Code's first message with its reminders), the
// newest user message or the newest assistant message, or comes after them, stays. It also returns the first message of the opening
// exchange (the first user message that is not tool results), -1 if none.
func droppableUnits(t *transcript.Transcript) ([]unit, int) {
	protected := t.Protected()
	last := -1 // the newest protected message of the conversation
	for i, m := range t.Messages {
		if protected[i] && !m.Instructions() {
			last = max(last, i)
		}
	}
	glued := t.Glued() // a call is never parted from its result
	keep := func(m *transcript.Message) bool { return m.Summary || m.Instructions() }
	first := -1
	for i := range t.Messages {
		if m := &t.Messages[i]; m.Role == "user" && !keep(m) && !m.OnlyResults() {
			first = i
			break
		}
	}
	var units []unit
	stays := map[int]bool{} // units that must stay, by index
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if keep(m) {
			continue
		}
		n := len(units)
		if n == 0 || units[n-1].end != mi || !glued[mi] && !m.OnlyResults() && !t.AfterReasoning(mi) {
			units = append(units, unit{mi, mi + 1})
		} else {
			units[n-1].end = mi + 1
		}
		if protected[mi] || mi > last || m.HoldsPinned() {
			stays[len(units)-1] = true
		}
	}
	out := units[:0]
	for k, u := range units {
		if !stays[k] {
			out = append(out, u)
		}
	}
	return out, first
}

// Apply runs the tier on a document: plan, splice, then, when the input was a request the
// API accepts, ctx-repair's rules for what dropping broke in the format (two user messages
// that now meet). It returns the output, the stats, and the problems the repair fixed.
func Apply(t *transcript.Transcript, o Options) ([]byte, Stats, []repair.Problem, error) {
	d := Choose(t, o)
	edits, st := d.Edits(t), d.Stats
	if len(edits) == 0 {
		return []byte(t.Doc), st, nil, nil
	}
	out, err := t.Apply(edits)
	if err != nil || !repair.WouldBreak(t, d.Drop, st.Opened) {
		return out, st, nil, err
	}
	out, problems, err := repair.KeepValid(t, out)
	return out, st, problems, err
}

// percent writes a fraction as a percentage without float noise: 0.95 -> 95%, 0.875 -> 87.5%.
func percent(f float64) string {
	return fmt.Sprintf("%g%%", math.Round(f*100*1e6)/1e6)
}
