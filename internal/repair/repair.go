// Package repair owns the rules a provider's API applies to a conversation before it
// accepts it — every tool call answered, no result without its call, ids unique, roles
// alternating where the format needs it — and the smallest edit that makes a document
// follow them.
//
// Check lists what is wrong; Plan returns the edits that fix it, spliced into the
// original bytes by transcript.Apply, so a message with nothing to fix stays byte for byte
// what it was. Check and Plan agree by construction: Plan returns no edits exactly when
// Check finds nothing, and a document Plan repaired passes Check, so repairing is
// idempotent. Ids that a repair invents are derived from the document (a hash of the id
// they replace or answer), so repairing the same input twice gives the same bytes.
//
// Rules per format:
//   - Anthropic Messages: a tool_use is answered by a tool_result at the start of the next
//     user message; results elsewhere are moved there, results without a call dropped,
//     missing ones filled with an error result; tool_use ids are unique and not empty;
//     consecutive messages of one role are merged (tool results first); empty messages and
//     empty text blocks are removed; the first message is a user message. Thinking blocks
//     and their signatures are kept as they are.
//   - OpenAI Chat Completions: every tool_calls[].id is answered by a tool message in the
//     run of tool messages right after its assistant message; orphan tool messages are
//     dropped; a tool message answers one tool_call_id (SWE-agent's tool_call_ids lists are
//     split); call ids are unique within their message; messages without content are
//     removed. System and developer messages stay where they are, except that they cannot
//     sit between a call and its results, so the results move up to the call.
//   - OpenAI Responses and Codex rollouts: every function_call, custom_tool_call (any item
//     with a call_id) has its output item with the same call_id after it, and no output is
//     without its call.
//   - Claude Code sessions: every tool_use of the live branch is answered and no
//     tool_result is without its call, and tool_use ids are unique. The structural rules of
//     the Messages API do not apply to the session file itself: Claude Code merges its
//     lines into API messages when it resumes (use ctx-convert for a request body).
package repair

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// Rule names one thing a provider rejects.
type Rule string

// The rules, as --check and --stats name them.
const (
	MissingResult   Rule = "missing-result"   // a tool call without its result
	OrphanResult    Rule = "orphan-result"    // a result whose call is not in the conversation
	MisplacedResult Rule = "misplaced-result" // a result that is not where the format needs it
	DuplicateID     Rule = "duplicate-id"     // a call id used twice, or empty
	ToolCallIDs     Rule = "tool-call-ids"    // a tool message that does not answer exactly one tool_call_id
	ResultID        Rule = "result-id"        // a tool_result without its call's id (Anthropic, Claude Code)
	SameRole        Rule = "same-role"        // two messages of one role in a row (Anthropic)
	EmptyMessage    Rule = "empty-message"    // a message with no content
	EmptyText       Rule = "empty-text"       // a text block with no text (Anthropic)
	FirstNotUser    Rule = "first-not-user"   // an Anthropic conversation that does not open with a user message
	ItemShape       Rule = "item-shape"       // a Responses input item that is not an item: a bare string, an object with neither type nor role
	TextResult      Rule = "text-result"      // a tool call answered by user text, not a tool_result block (Cline)
)

// Rules lists every rule in a stable order.
var Rules = []Rule{MissingResult, OrphanResult, MisplacedResult, DuplicateID, ToolCallIDs, ResultID, SameRole, EmptyMessage, EmptyText, FirstNotUser, ItemShape, TextResult}

// Problem is one thing the API would reject.
type Problem struct {
	// Message is the index in the transcript's messages (the numbering ctx-count uses);
	// Line is the 1-based line of a JSONL record, 0 for JSON documents.
	Message int      `json:"message"`
	Line    int      `json:"line,omitempty"`
	Rule    Rule     `json:"rule"`
	IDs     []string `json:"ids,omitempty"`
	Detail  string   `json:"detail"`
}

func (p Problem) String() string {
	where := fmt.Sprintf("message %d", p.Message)
	if p.Line > 0 {
		where += fmt.Sprintf(" (line %d)", p.Line)
	}
	return fmt.Sprintf("%s: %s: %s", where, p.Rule, p.Detail)
}

// Interrupted is the text of the error result that stands in for a missing one.
const Interrupted = "The tool call was interrupted and no result was recorded."

// FirstUserText opens an Anthropic conversation that started with an assistant message.
const FirstUserText = "(The beginning of this conversation is not included.)"

// Check lists every problem of the document, in message order.
func Check(t *transcript.Transcript) []Problem {
	return newFixer(t).check()
}

// Counts tallies problems by rule.
func Counts(ps []Problem) map[Rule]int {
	n := map[Rule]int{}
	for _, p := range ps {
		n[p.Rule]++
	}
	return n
}

// Plan returns the problems of the document and the edits that fix them all; no edits
// when there are no problems.
func Plan(t *transcript.Transcript) ([]transcript.Edit, []Problem, error) {
	f := newFixer(t)
	problems := f.check()
	if len(problems) == 0 {
		return nil, nil, nil
	}
	edits, err := f.fix()
	return edits, problems, err
}

// fixer holds what checking and fixing a document share: the pairing of calls and results
// by the format's rules.
type fixer struct {
	t        *transcript.Transcript
	problems []Problem
	lines    map[int]int // record start → line number (JSONL)

	// calls lists the client-side tool calls in document order; resultOf maps each to its
	// result (None when missing); callsOf maps each result to the calls it answers.
	calls    []transcript.Ref
	resultOf map[transcript.Ref]transcript.Ref
	callsOf  map[transcript.Ref][]transcript.Ref
	orphans  []transcript.Ref
	// newID holds the id a call gets because its own is empty or used before.
	newID map[transcript.Ref]string
}

func newFixer(t *transcript.Transcript) *fixer {
	f := &fixer{t: t, resultOf: map[transcript.Ref]transcript.Ref{}, callsOf: map[transcript.Ref][]transcript.Ref{}, newID: map[transcript.Ref]string{}}
	if len(t.Records) > 0 {
		f.lines = make(map[int]int, len(t.Records))
		for _, r := range t.Records {
			f.lines[r.Span.Start] = r.Line
		}
	}
	f.pair()
	return f
}

func (f *fixer) add(m int, rule Rule, ids []string, format string, a ...any) {
	p := Problem{Message: m, Rule: rule, IDs: ids, Detail: fmt.Sprintf(format, a...)}
	if f.lines != nil && m >= 0 && m < len(f.t.Messages) {
		msg := &f.t.Messages[m]
		if len(msg.Lines) > 0 {
			p.Line = f.lines[msg.Lines[0].Start]
		}
	}
	f.problems = append(f.problems, p)
}

// formatRules are each format's checks and fixes, in one table: a format without its row fails
// TestEveryFormatRepaired.
var formatRules = map[transcript.Format]struct {
	check func(*fixer)
	fix   func(*fixer) ([]transcript.Edit, error)
}{
	transcript.Anthropic:  {(*fixer).checkAnthropic, (*fixer).fixAnthropic},
	transcript.Cline:      {func(f *fixer) { f.checkAnthropic(); f.checkCline() }, (*fixer).fixAnthropic},
	transcript.OpenAI:     {(*fixer).checkOpenAI, (*fixer).fixOpenAI},
	transcript.Responses:  {(*fixer).checkResponses, (*fixer).fixResponses},
	transcript.Codex:      {(*fixer).checkResponses, (*fixer).fixCodex},
	transcript.ClaudeCode: {(*fixer).checkClaudeCode, (*fixer).fixClaudeCode},
}

// check runs the format's rules.
func (f *fixer) check() []Problem {
	f.problems = nil
	if r, ok := formatRules[f.t.Format]; ok {
		r.check(f)
	}
	sort.SliceStable(f.problems, func(i, j int) bool { return f.problems[i].Message < f.problems[j].Message })
	return f.problems
}

func (f *fixer) fix() ([]transcript.Edit, error) {
	if r, ok := formatRules[f.t.Format]; ok {
		return r.fix(f)
	}
	return nil, nil
}

// isCall and isResult pick the blocks the client must pair. Server-side tools
// (server_tool_use and its web_search_tool_result...) are answered inside the same
// assistant message by the provider, and legacy OpenAI function_call messages carry no
// id: neither is ours to pair.
func (f *fixer) isCall(b *transcript.Block) bool {
	if b.Kind != transcript.ToolCall {
		return false
	}
	switch f.t.Format {
	case transcript.Anthropic, transcript.ClaudeCode, transcript.Cline:
		return b.Type == "tool_use"
	case transcript.OpenAI:
		return b.Type != "function_call"
	}
	return true
}

func (f *fixer) isResult(b *transcript.Block) bool {
	if b.Kind != transcript.ToolResult {
		return false
	}
	switch f.t.Format {
	case transcript.Anthropic, transcript.ClaudeCode:
		return b.Type == "tool_result"
	case transcript.Cline:
		return b.Type == "tool_result" || b.Type == "text"
	case transcript.OpenAI:
		return b.Type == "tool"
	}
	return true
}

// textResult reports whether a result is a Cline labelled text: one that answers a call
// becomes a tool_result block; one that answers none (the call was XML in the
// assistant's text) is a user text the API accepts as it is, not an orphan.
func (f *fixer) textResult(b *transcript.Block) bool {
	return f.t.Format == transcript.Cline && b.Kind == transcript.ToolResult && b.Type == "text"
}

// pair links calls and results as transcript.Pairs does (a result answers the oldest
// waiting call with its id), then lets a result that came before its call answer it: a
// misplaced result, not an orphan.
func (f *fixer) pair() {
	t := f.t
	for _, p := range transcript.PairsOf(clientBlocks{f}) {
		callOK := p.Call != transcript.None
		resOK := p.Result != transcript.None
		switch {
		case callOK && resOK:
			f.calls = append(f.calls, p.Call)
			f.resultOf[p.Call] = p.Result
			f.callsOf[p.Result] = append(f.callsOf[p.Result], p.Call)
		case callOK:
			f.calls = append(f.calls, p.Call)
			f.resultOf[p.Call] = transcript.None
		case resOK && !f.textResult(t.Block(p.Result)):
			f.orphans = append(f.orphans, p.Result)
		}
	}
	sortRefs(f.calls)
	// Adopt: an orphan whose id belongs to a later unanswered call (the first such call
	// after it; each call adopts one result).
	waiting := map[string][]transcript.Ref{} // id → unanswered calls, in document order
	for _, c := range f.calls {
		if id := t.Block(c).ToolID; id != "" && f.resultOf[c] == transcript.None {
			waiting[id] = append(waiting[id], c)
		}
	}
	kept := f.orphans[:0]
	for _, r := range f.orphans {
		id := t.Block(r).ToolID
		adopted := false
		if calls := waiting[id]; id != "" {
			for k, c := range calls {
				if before(r, c) {
					f.resultOf[c] = r
					f.callsOf[r] = append(f.callsOf[r], c)
					waiting[id] = append(calls[:k:k], calls[k+1:]...)
					adopted = true
					break
				}
			}
		}
		if !adopted && len(f.callsOf[r]) == 0 {
			kept = append(kept, r)
		}
	}
	f.orphans = dedupeRefs(kept)
	f.assignIDs()
}

// clientBlocks shows pairing only the calls and results the client must pair: server
// tool blocks, legacy function calls and tool_use blocks outside assistant messages are
// plain blocks to it.
type clientBlocks struct{ f *fixer }

func (c clientBlocks) Len() int         { return len(c.f.t.Messages) }
func (c clientBlocks) Blocks(m int) int { return len(c.f.t.Messages[m].Blocks) }
func (c clientBlocks) Tool(m, b int) (transcript.Kind, string, []string) {
	bl := &c.f.t.Messages[m].Blocks[b]
	switch {
	case c.f.isCall(bl) && c.f.callerRole(transcript.Ref{Message: m, Block: b}):
		return transcript.ToolCall, bl.ToolID, nil
	case c.f.isResult(bl):
		return transcript.ToolResult, bl.ToolID, bl.ToolIDs
	}
	return transcript.Other, "", nil
}

// callerRole: a call counts only in an assistant message (a tool_use a user message
// carries is not one the model made, and its result is an orphan).
func (f *fixer) callerRole(r transcript.Ref) bool {
	return f.t.Messages[r.Message].Role == "assistant"
}

// assignIDs gives a new id to every call whose id is empty or was used by an earlier
// call (within the message for OpenAI, in the whole conversation for Anthropic and
// Claude Code; Responses pairs reused call_ids by position, so there only an empty one is
// renamed).
func (f *fixer) assignIDs() {
	byPosition := f.t.Format == transcript.Responses || f.t.Format == transcript.Codex
	used := map[string]bool{}
	for _, c := range f.calls {
		used[f.t.Block(c).ToolID] = true
	}
	seen := map[string]bool{}
	lastMsg := -1
	for _, c := range f.calls {
		if f.t.Format == transcript.OpenAI && c.Message != lastMsg {
			seen = map[string]bool{}
		}
		lastMsg = c.Message
		id := f.t.Block(c).ToolID
		if id == "" || (seen[id] && !byPosition) {
			nid := deriveID(f.t.Format, id, c, used)
			used[nid] = true
			f.newID[c] = nid
			continue
		}
		seen[id] = true
	}
}

// callID is the id a call has after repair.
func (f *fixer) callID(c transcript.Ref) string {
	if id, ok := f.newID[c]; ok {
		return id
	}
	return f.t.Block(c).ToolID
}

// callIDJSON is the JSON string a result must carry to answer call c: the new id's, or the
// call's own id literal as the document spells it. (Re-quoting the decoded id would not do:
// an id with invalid UTF-8 would come out as U+FFFD and answer nothing.)
func (f *fixer) callIDJSON(c transcript.Ref) string {
	if nid, ok := f.newID[c]; ok {
		return transcript.Quote(nid)
	}
	b := f.t.Block(c)
	key := "id"
	if f.t.Format == transcript.Responses || f.t.Format == transcript.Codex {
		key = "call_id"
	}
	if v := gjson.Get(f.t.Slice(b.Span), key); v.Type == gjson.String {
		return v.Raw
	}
	return transcript.Quote(b.ToolID)
}

func (f *fixer) toolName(c transcript.Ref) string {
	if n := f.t.Block(c).ToolName; n != "" {
		return n
	}
	return "?"
}

func before(a, b transcript.Ref) bool {
	return a.Message < b.Message || (a.Message == b.Message && a.Block < b.Block)
}

func sortRefs(rs []transcript.Ref) {
	sort.Slice(rs, func(i, j int) bool { return before(rs[i], rs[j]) })
}

func dedupeRefs(rs []transcript.Ref) []transcript.Ref {
	sortRefs(rs)
	out := rs[:0]
	for i, r := range rs {
		if i == 0 || r != rs[i-1] {
			out = append(out, r)
		}
	}
	return out
}

// checkPairing reports what every format shares: calls without results, results without
// calls, and calls whose ids repair must change.
func (f *fixer) checkPairing() {
	for _, c := range f.calls {
		b := f.t.Block(c)
		if f.resultOf[c] == transcript.None {
			f.add(c.Message, MissingResult, []string{b.ToolID}, "tool call %s (%s) has no result", quoteID(b.ToolID), f.toolName(c))
		}
		if nid, ok := f.newID[c]; ok {
			what := "is used by an earlier call"
			if b.ToolID == "" {
				what = "is empty"
			}
			f.add(c.Message, DuplicateID, []string{b.ToolID, nid}, "tool call id %s %s; it becomes %s", quoteID(b.ToolID), what, nid)
		}
	}
	for _, r := range f.orphans {
		b := f.t.Block(r)
		f.add(r.Message, OrphanResult, []string{b.ToolID}, "tool result for %s answers no call in the conversation", quoteID(b.ToolID))
	}
	if !f.t.Format.MessagesAPI() && f.t.Format != transcript.ClaudeCode {
		return // OpenAI's is tool-call-ids; Responses pairs an empty call_id by position
	}
	for _, c := range f.calls {
		r := f.resultOf[c]
		if _, renamed := f.newID[c]; renamed || r == transcript.None {
			continue
		}
		if id := f.t.Block(c).ToolID; f.t.Block(r).ToolID != id {
			f.add(r.Message, ResultID, []string{id}, "tool result without a tool_use_id answers %s by its place; it gets the id", quoteID(id))
		}
	}
}

func quoteID(id string) string {
	if id == "" {
		return `""`
	}
	return id
}

// nonEmpty reports whether a text block has text the API accepts (not only white space).
// (What Check reads of a document, SameProblems compares: keep them in step.)
func (f *fixer) nonEmpty(b *transcript.Block) bool {
	if b.Kind != transcript.Text || b.BodyJSON {
		return true
	}
	// A literal that opens with a printable ASCII character other than an escape holds
	// text, which TrimSpace keeps: decided without decoding the text (most texts).
	if raw := f.t.Slice(b.Body); len(raw) > 2 && raw[0] == '"' {
		if c := raw[1]; c > ' ' && c < utf8.RuneSelf && c != '\\' {
			return true
		}
	}
	return strings.TrimSpace(f.t.BodyText(b)) != ""
}

// KeepValid applies the rules to out, a tier's edit of the document in, where the edit
// broke one of them in a valid input: two user messages that meet once the messages
// between them are gone are merged, an opening assistant message gets a user message
// before it. A JSONL transcript is left as it is (its agent keeps the rules itself), and
// so is an input that already broke them (fixing that is ctx-repair's call, not the
// tier's). It returns the output and the problems it fixed.
func KeepValid(in *transcript.Transcript, out []byte) ([]byte, []Problem, error) {
	if in.Format.JSONL() || len(Check(in)) > 0 {
		return out, nil, nil
	}
	t, err := transcript.Parse(out, transcript.Options{Format: in.Format})
	if err != nil {
		return nil, nil, fmt.Errorf("internal error: the edited document does not parse: %w", err)
	}
	edits, problems, err := Plan(t)
	if err != nil || len(edits) == 0 {
		return out, nil, err
	}
	fixed, err := t.Apply(edits)
	return fixed, problems, err
}

// WouldBreak reports whether dropping the messages drop marks from t breaks one of the
// rules that KeepValid restores, so that a tier reads its edited document again only when
// it must. It checks the structure of the messages kept, which needs no text. opened says
// the tier puts an opening user message before the first message kept.
func WouldBreak(t *transcript.Transcript, drop []bool, opened bool) bool {
	if t.Format.JSONL() || len(Check(t)) > 0 {
		return false // KeepValid leaves these as they are
	}
	kept := *t
	kept.Messages = nil
	for mi := range t.Messages {
		if mi >= len(drop) || !drop[mi] {
			kept.Messages = append(kept.Messages, t.Messages[mi])
		}
	}
	for _, p := range Check(&kept) {
		if !(opened && p.Rule == FirstNotUser) {
			return true
		}
	}
	return false
}

// insertLines are the edits that insert new JSONL lines: inserts maps the end of a line to
// the lines that go after it, in order. The edits come in document order, so repairing
// twice gives the same bytes.
func insertLines(inserts map[int][]string) []transcript.Edit {
	ends := make([]int, 0, len(inserts))
	for end := range inserts {
		ends = append(ends, end)
	}
	sort.Ints(ends)
	edits := make([]transcript.Edit, 0, len(ends))
	for _, end := range ends {
		edits = append(edits, transcript.Edit{Span: transcript.Span{Start: end, End: end}, With: "\n" + strings.Join(inserts[end], "\n")})
	}
	return edits
}
