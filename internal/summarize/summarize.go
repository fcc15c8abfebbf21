// Package summarize owns ctx-summarize, the lossy tier that replaces the older part of a
// conversation with one summary message when the cheaper tiers are not enough.
//
// Choose picks what to summarize (everything between the system prompt and a kept tail of
// the newest turns, never splitting a tool call from its result); a Summarizer (Local, or
// a model through internal/llm) writes the sections; the Extractor also follows the
// content of the files the summarized part read and edited, and the newest of them are
// restored right after the summary (restore.go), so an agent can carry on editing; Place
// returns the edits that put the summary message where the format needs it. Choose, Local
// and Place are pure; the model call and the store are the caller's.
package summarize

import (
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/ctxkit/ctxkit/internal/trim"
	"github.com/tidwall/gjson"
)

// Options steer the split.
type Options struct {
	Counter tokens.Counter
	Trigger float64 // act above this utilization
	Force   bool    // act whatever the utilization
	// KeepTokens or KeepTurns size the kept tail; with both zero it is 20% of the room the
	// messages have in the window, what the system prompt, tools and schemas leave of it
	// (of the document, when that is smaller).
	KeepTokens, KeepTurns int
	// The document's measures: its tokens, the window it is measured against, and each
	// message's share.
	Tokens, Effective int
	PerMessage        []int
	// Removed is what earlier edits took out of each message (measure.Counts.Removed); nil
	// when nothing was.
	Removed []int
	// Target is the utilization a summary must leave the request at while the request is
	// at or below Hold of the window (Judge); 0: no target. Hold is ctx-trim's trigger, so
	// that a summary comes before messages are dropped; 0: the window.
	Target, Hold float64
	// Repay and Price judge a firing that does not make the request fit: it must pay back
	// the prompt cache it breaks within Repay requests at Price, as ctx-snip's clearing
	// must (0 turns the test off).
	Repay int
	Price tokens.Price
	// KeepFirst keeps the opening exchange where it is (--keep-first): the first user
	// message and what answers it, up to where the next step starts. Only in a JSON
	// document: a Claude Code compact boundary and a Codex compacted record start the
	// conversation anew, so there the first message is kept in the summary instead.
	KeepFirst bool
}

// Defaults are ctx-summarize's defaults (measures aside).
func Defaults() Options {
	return Options{Trigger: 0.80, Target: 0.70, Hold: trim.Defaults().Trigger, Repay: 1}
}

// Split is what a run summarizes.
type Split struct {
	Acts    bool
	Trigger string
	// Summarized are the messages the summary replaces, in order; Previous are the earlier
	// summaries among them, which are folded in rather than summarized again.
	Summarized, Previous []int
	Tokens               int // the summarized messages' share
	Was                  int // what they held before any ctxkit edit: the size the summary states
	Keep                 int // the kept tail's goal, in tokens (or turns, with KeepTurns)
	// Forced and Before say what set the run off and how big the document was: a Claude
	// Code compact boundary records both.
	Forced bool
	Before int
}

// Choose works out what to summarize. Below the trigger (and without Force) it does not
// act. The kept tail is the newest messages up to the keep goal, extended back so that
// it starts where a step starts (not on a tool result) and no call is separated from its
// result; system prompts, system and developer messages, pinned context and the newest
// user message stay where they are, everything else before the tail is summarized.
func Choose(t *transcript.Transcript, o Options) Split {
	sp := Split{Forced: o.Force, Before: o.Tokens}
	util := float64(o.Tokens) / float64(max(o.Effective, 1))
	sp.Trigger = fmt.Sprintf("utilization %.0f%% (trigger %.0f%%)", 100*util, 100*o.Trigger)
	switch {
	case o.Force:
		sp.Trigger = "forced"
	case o.Tokens <= int(math.Floor(o.Trigger*float64(o.Effective))):
		sp.Trigger = fmt.Sprintf("below %.0f%% of window", 100*o.Trigger)
		return sp
	}
	n := len(t.Messages)
	glued := t.Glued() // a call is never parted from its result
	// Pinned context stays where it is, but in a Claude Code session: its compact boundary
	// starts the chain anew, so a message pinned whole there is summarized and its texts
	// carried over into the summary (Place), as the pinned texts of any summarized message
	// are.
	carried := func(m *transcript.Message) bool {
		return m.Pinned && t.Format == transcript.ClaudeCode
	}
	stays := func(m *transcript.Message) bool { return m.Instructions() && !carried(m) }
	canStart := func(mi int) bool {
		m := &t.Messages[mi]
		return !glued[mi] && !m.OnlyResults() && !stays(m) && !t.AfterReasoning(mi)
	}
	// Walk back from the end until the tail holds the goal.
	keep := o.KeepTokens
	if keep <= 0 && o.KeepTurns <= 0 {
		// A fifth of the room the messages have: the window (or the document, when it is
		// smaller: --force) less what is sent whatever is summarized (the system prompt
		// and tools an agent adds, tool schemas). Where those fill most of a small window,
		// a fifth of the window would be kept and summarized again a few turns later.
		fixed := o.Tokens
		for _, n := range o.PerMessage {
			fixed -= n
		}
		keep = max(0, min(o.Effective, o.Tokens)-max(0, fixed)) / 5
	}
	sp.Keep = keep
	cut, size, turns := n, 0, 0
	for cut > 0 {
		m := &t.Messages[cut-1]
		if o.KeepTurns > 0 {
			if turns >= o.KeepTurns && canStart(cut) {
				break
			}
			if m.Role == "user" && !m.OnlyResults() && !m.Summary && !stays(m) {
				turns++
			}
		} else if size >= keep && cut < n && canStart(cut) {
			break
		}
		size += o.PerMessage[cut-1]
		cut--
	}
	if o.KeepTurns > 0 {
		sp.Keep = o.KeepTurns
		// The turn's opening message itself is kept.
		for cut < n && !canStart(cut) {
			cut++
		}
	}
	// The opening exchange, kept in place with --keep-first: the summary then follows an
	// assistant message, so it is never merged into the first user message.
	head := 0
	if o.KeepFirst && (t.Format == transcript.Anthropic || t.Format == transcript.OpenAI || t.Format == transcript.Responses || t.Format == transcript.Cline) {
		for mi := 0; mi < n; mi++ {
			m := &t.Messages[mi]
			if stays(m) {
				continue
			}
			if m.Role == "user" && !m.Summary && !m.OnlyResults() {
				head = mi + 1
				// The Messages API merges user messages that meet: the summary must
				// follow the assistant's answer, not the first message or its results.
				for t.Format.MessagesAPI() && head < n && (t.Messages[head-1].Role != "assistant" || !canStart(head)) {
					head++
				}
			}
			break
		}
	}
	if head >= cut {
		head = 0 // no room after the opening exchange: the summary keeps it as its goal
	}
	protected := t.Protected()
	// A protected message before the cut stays where it is. When it is (or holds) a tool
	// result, its call must stay too, or the result would be left without it; when it holds
	// a call whose result follows (the newest assistant message, its results and a user's
	// word after them), the result must stay with it: the tail then starts where that
	// call's step starts.
	for mi := 0; mi < cut; mi++ {
		m := &t.Messages[mi]
		if protected[mi] && !stays(m) && !m.Summary && (glued[mi] || m.OnlyResults() || glued[mi+1]) {
			cut = mi
			for cut > 0 && !canStart(cut) {
				cut--
			}
			break
		}
	}
	for mi := head; mi < cut; mi++ {
		m := &t.Messages[mi]
		if stays(m) || (protected[mi] && !m.Summary && !carried(m)) {
			continue
		}
		sp.Summarized = append(sp.Summarized, mi)
		sp.Tokens += o.PerMessage[mi]
		sp.Was += o.PerMessage[mi]
		if mi < len(o.Removed) {
			sp.Was += o.Removed[mi]
		}
		if m.Summary {
			sp.Previous = append(sp.Previous, mi)
		}
	}
	// Nothing new to summarize: only an earlier summary, or nothing at all.
	sp.Acts = len(sp.Summarized) > len(sp.Previous)
	if !sp.Acts {
		sp.Summarized, sp.Previous, sp.Tokens, sp.Was = nil, nil, 0, 0
	}
	return sp
}

// Judge says whether summarizing sp, which leaves after tokens of the o.Tokens there
// were, is worth the prompt cache it breaks: why not ("" when it is), and the judgement
// the --stats line reports. Forced runs are always worth it, and so is a summary that
// makes a request fit that would not: it fails otherwise. While the request is at or below
// o.Hold of the window, a summary must leave it at or below o.Target: one that leaves it
// just under the trigger is due again a few requests later, each time breaking the cache,
// so it waits until the request is about to overflow. One that leaves the request over the window makes
// nothing fit: it must pay back the cache from its first summarized message on within
// o.Repay requests at o.Price.
func Judge(o Options, sp Split, after int) (string, tokens.Repayment) {
	saved := o.Tokens - after
	uncached := 0
	if len(sp.Summarized) > 0 {
		for mi := sp.Summarized[0]; mi < len(o.PerMessage); mi++ {
			uncached += o.PerMessage[mi]
		}
	}
	r := o.Price.Judge(saved, uncached, o.Repay)
	switch {
	case o.Force:
		r.Exempt = "forced"
		return "", r
	case o.Effective <= 0:
		r.Exempt = "no window"
		return "", r
	case o.Tokens > o.Effective && after <= o.Effective:
		r.Exempt = "makes the request fit the window"
		return "", r
	case o.AboveTarget(after):
		return fmt.Sprintf("summarizing would leave the request at %.0f%% of the window, above --target %.0f%%, and over the trigger again within a few requests: it waits until the request is above %.0f%% of the window",
			math.Floor(100*float64(after)/float64(o.Effective)), 100*o.Target, 100*o.hold()), r
	case o.Tokens <= o.Effective:
		// Well below the trigger after it (or the request about to overflow): the
		// compaction the trigger schedules.
		r.Exempt = "leaves the request at or below --target, or the request is about to overflow"
		return "", r
	case o.Repay <= 0 || len(sp.Summarized) == 0 || len(o.PerMessage) == 0:
		r.Exempt = "--repay 0"
		return "", r
	case r.Repays:
		return "", r
	}
	return fmt.Sprintf("the request stays over the window after summarizing (%d tokens, window %d), and %s", after, o.Effective, r.Why()), r
}

// AboveTarget reports whether a summary that leaves after tokens of a request at or below
// o.Hold of the window leaves it above o.Target: Judge's first test.
func (o Options) AboveTarget(after int) bool {
	return o.Effective > 0 && o.Tokens <= int(math.Floor(o.hold()*float64(o.Effective))) && o.Target > 0 && after > int(math.Floor(o.Target*float64(o.Effective)))
}

// hold is o.Hold, the window when unset.
func (o Options) hold() float64 {
	if o.Hold <= 0 || o.Hold > 1 {
		return 1
	}
	return o.Hold
}

// PreviousSections reads the earlier summaries among the summarized messages: the
// sections of ctxkit's own, and the text of other agents' (Claude Code's compact summary,
// Codex's compacted history) as one item under "Goal and user requests".
func PreviousSections(t *transcript.Transcript, sp Split) Sections {
	out := Sections{}
	for _, mi := range sp.Previous {
		m := &t.Messages[mi]
		var texts []string
		for bi := range m.Blocks {
			if b := &m.Blocks[bi]; b.Kind == transcript.Text && !b.Pinned { // (carried over as they are)
				texts = append(texts, t.BodyText(b))
			}
		}
		text := strings.Join(texts, "\n")
		if strings.HasPrefix(strings.TrimSpace(text), transcript.SummaryTag) {
			_, text = ParseRestored(text)
			s, _ := Parse(text)
			out = Fold(out, s)
			continue
		}
		out = Fold(out, EarlierSummary(text))
	}
	return out
}

// PreviousFiles reads the files earlier ctxkit summaries among the summarized messages
// restored, oldest first: the newer summary restores them again unless something newer
// replaces them.
func PreviousFiles(t *transcript.Transcript, sp Split) []Restored {
	var out []Restored
	for _, mi := range sp.Previous {
		m := &t.Messages[mi]
		for bi := range m.Blocks {
			if b := &m.Blocks[bi]; b.Kind == transcript.Text && !b.Pinned {
				rs, _ := ParseRestored(t.BodyText(b))
				// Restored lists the newest first: carry the oldest first.
				for i := len(rs) - 1; i >= 0; i-- {
					out = append(out, rs[i])
				}
			}
		}
	}
	return out
}

// Place returns the edits that replace the summarized messages with one summary message
// of the given text: in a JSON document a user message where the first summarized one
// was; in a Claude Code session a compact boundary and a compact-summary record
// (isCompactSummary) that the kept messages hang off; in a Codex rollout a compacted
// record before the first kept item, whose replacement history starts with the messages
// that stayed before the summarized ones (developer messages, AGENTS.md and the
// environment), verbatim, as Codex's own compaction starts it with its initial context.
//
// The pinned texts of the summarized messages (Block.Pinned: Claude Code's reminders in
// the first user message) open the summary message, verbatim and in order, and its text
// follows them as a block of its own.
func Place(t *transcript.Transcript, sp Split, text string) ([]transcript.Edit, error) {
	if len(sp.Summarized) == 0 {
		return nil, nil
	}
	drop := make([]bool, len(t.Messages))
	for _, mi := range sp.Summarized {
		drop[mi] = true
	}
	content := summaryContent(t.Format, pinnedBlocks(t, sp), text)
	switch t.Format {
	case transcript.Anthropic, transcript.OpenAI, transcript.Responses, transcript.Cline:
		if t.Format.Wire() == transcript.ResponsesWire && (t.Array.IsZero() || t.Slice(t.Array)[0] != '[') {
			return nil, fmt.Errorf("the input is one string, not a list of items")
		}
		return placeJSON(t, drop, sp.Summarized[0], t.Format.Wire().UserMessage(content)), nil
	case transcript.ClaudeCode:
		return placeClaudeCode(t, sp, drop, text, content)
	case transcript.Codex:
		at := afterLast(t, sp.Summarized)
		if at < 0 {
			return nil, fmt.Errorf("nothing is kept after the summary")
		}
		// The compacted record drops everything before it but the session's instructions:
		// the instructions that stayed before the summarized messages open its replacement
		// history, verbatim.
		var hist []string
		for mi := 0; mi < sp.Summarized[0]; mi++ {
			if m := &t.Messages[mi]; m.Instructions() && !m.Header {
				hist = append(hist, t.Slice(m.Span))
			}
		}
		hist = append(hist, `{"type":"message","role":"user","content":`+content+`}`)
		// Other messages that stay before or among the summarized ones (the newest user
		// message, system items) move to just after the compacted record; one that is
		// itself an item of an earlier compaction goes into the new replacement history
		// after the summary.
		var moved []string
		var edits []transcript.Edit
		for mi := 0; mi < at; mi++ {
			m := &t.Messages[mi]
			if drop[mi] || m.Header || (mi < sp.Summarized[0] && m.Instructions()) {
				continue
			}
			line := m.Lines[0]
			if p := gjson.Get(t.Slice(line), "payload"); p.Index > 0 && line.Start+p.Index == m.Span.Start {
				moved = append(moved, t.Slice(line))
				edits = append(edits, transcript.Edit{Span: transcript.Span{Start: line.Start, End: t.LineEnd(line)}})
				continue
			}
			hist = append(hist, t.Slice(m.Span))
		}
		stamp := gjson.Get(t.Slice(t.Messages[at].Lines[0]), "timestamp").Raw
		if stamp == "" {
			stamp = `""`
		}
		rec := `{"timestamp":` + stamp + `,"type":"compacted","payload":{"message":` + transcript.Quote(text) + `,"replacement_history":[` + strings.Join(hist, ",") + `]}}` + "\n"
		for _, l := range moved {
			rec += l + "\n"
		}
		start := t.Messages[at].Lines[0].Start
		return append(edits, transcript.Edit{Span: transcript.Span{Start: start, End: start}, With: rec}), nil
	}
	return nil, fmt.Errorf("cannot place a summary in a %s document", t.Format)
}

// placeClaudeCode writes what Claude Code writes when it compacts: a compact_boundary
// system record that starts a new chain (logicalParentUuid names where the old one
// ended; compactMetadata says what set it off and the size before), and the summary as
// a user record with isCompactSummary hanging off it. Both go on the line before the
// first kept message, which is chained to the summary; the summarized records stay in
// the file, off the live branch, as Claude Code leaves them. Readers that follow the
// chain and readers that start at the last compact boundary both find the summary first.
func placeClaudeCode(t *transcript.Transcript, sp Split, drop []bool, text, content string) ([]transcript.Edit, error) {
	at := firstKept(t, drop)
	if at < 0 {
		return nil, fmt.Errorf("nothing is kept after the summary")
	}
	first := &t.Messages[sp.Summarized[0]]
	line := t.Slice(first.Lines[0])
	uuid := transcript.DeriveUUID(gjson.Get(line, "uuid").String() + "\x00" + text)
	boundary := transcript.DeriveUUID(uuid + "\x00compact_boundary")
	last := &t.Messages[sp.Summarized[len(sp.Summarized)-1]]
	logical := gjson.Get(t.Slice(last.Lines[len(last.Lines)-1]), "uuid").Raw
	if logical == "" {
		logical = "null"
	}
	common, stamp := transcript.SessionFields(line)
	trigger := "auto"
	if sp.Forced {
		trigger = "manual"
	}
	recs := `{"parentUuid":null,"logicalParentUuid":` + logical + `,` + common +
		`,"type":"system","subtype":"compact_boundary","content":"Conversation summarized by ctx-summarize","isMeta":false` + stamp +
		`,"uuid":` + transcript.Quote(boundary) + `,"level":"info","compactMetadata":{"trigger":"` + trigger + `","preTokens":` + strconv.Itoa(sp.Before) + `}}` + "\n" +
		`{"parentUuid":` + transcript.Quote(boundary) + `,` + common +
		`,"type":"user","message":{"role":"user","content":` + content + `},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":` + transcript.Quote(uuid) + stamp + "}\n"
	start := t.Messages[at].Lines[0].Start
	edits := []transcript.Edit{{Span: transcript.Span{Start: start, End: start}, With: recs}}
	return append(edits, t.Rechain(drop, uuid)...), nil
}

// pinnedOf yields the pinned texts of the summarized messages, in order: what the summary
// carries over (Place).
func pinnedOf(t *transcript.Transcript, sp Split) iter.Seq[*transcript.Block] {
	return func(yield func(*transcript.Block) bool) {
		for _, mi := range sp.Summarized {
			for bi := range t.Messages[mi].Blocks {
				if b := &t.Messages[mi].Blocks[bi]; b.Pinned && !yield(b) {
					return
				}
			}
		}
	}
}

// pinnedBlocks is pinnedOf as written (a message whose content is a plain string gives a
// text block around the same literal).
func pinnedBlocks(t *transcript.Transcript, sp Split) []string {
	var out []string
	for b := range pinnedOf(t, sp) {
		raw := t.Slice(b.Span)
		if raw[0] == '"' {
			raw = `{"type":"` + textType(t.Format) + `","text":` + raw + `}`
		}
		out = append(out, raw)
	}
	return out
}

// PinnedCount is how many pinned texts the summary of sp carries over, counted without
// their text.
func PinnedCount(t *transcript.Transcript, sp Split) int {
	n := 0
	for range pinnedOf(t, sp) {
		n++
	}
	return n
}

// PinnedTokens is what the pinned texts the summary of sp carries over count: the
// summary's stated size (Meta.Tokens) leaves them out, since they are still there, and
// measure reads that figure as what the summary's own text stands for.
func PinnedTokens(t *transcript.Transcript, sp Split, c tokens.Counter) int {
	n := 0
	for b := range pinnedOf(t, sp) {
		n += c.Count(t.BodyText(b))
	}
	return n
}

// textType is the type of a text block a user message of the format holds.
func textType(f transcript.Format) string {
	if f == transcript.Responses || f == transcript.Codex {
		return "input_text"
	}
	return "text"
}

// summaryContent is the summary message's content: its text, after the pinned blocks it
// carries over. A Responses item's content is always a list; elsewhere a summary that
// carries nothing is a plain string.
func summaryContent(f transcript.Format, pins []string, text string) string {
	if len(pins) == 0 && textType(f) == "text" {
		return transcript.Quote(text)
	}
	pins = append(pins, `{"type":"`+textType(f)+`","text":`+transcript.Quote(text)+`}`)
	return "[" + strings.Join(pins, ",") + "]"
}

// placeJSON drops the summarized elements and puts the summary where the first was.
func placeJSON(t *transcript.Transcript, drop []bool, first int, summary string) []transcript.Edit {
	drop[first] = false
	edits := t.DropMessages(drop)
	drop[first] = true
	return append(edits, transcript.Edit{Span: t.Messages[first].Span, With: summary})
}

// afterLast is the first message after the last summarized one (not a header), -1 if none.
func afterLast(t *transcript.Transcript, summarized []int) int {
	for mi := summarized[len(summarized)-1] + 1; mi < len(t.Messages); mi++ {
		if !t.Messages[mi].Header && len(t.Messages[mi].Lines) > 0 {
			return mi
		}
	}
	return -1
}

// firstKept is the first message after the summarized ones that stays (not a header).
func firstKept(t *transcript.Transcript, drop []bool) int {
	seen := false
	for mi := range t.Messages {
		switch {
		case drop[mi]:
			seen = true
		case seen && !t.Messages[mi].Header && len(t.Messages[mi].Lines) > 0:
			return mi
		}
	}
	return -1
}
