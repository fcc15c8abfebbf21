package repair

import (
	"sort"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/sjson"
)

// checkOpenAI applies the Chat Completions rules.
func (f *fixer) checkOpenAI() {
	t := f.t
	for _, mi := range f.arrayMessages() {
		m := &t.Messages[mi]
		if len(m.Blocks) == 0 {
			f.add(mi, EmptyMessage, nil, "%s message has no content", m.Role)
			continue
		}
		if b := &m.Blocks[0]; f.isResult(b) && (len(b.ToolIDs) > 0 || b.ToolID == "") {
			what := "has no tool_call_id"
			if len(b.ToolIDs) > 0 {
				what = "answers a tool_call_ids list, not one tool_call_id"
			}
			f.add(mi, ToolCallIDs, b.ToolIDs, "tool message %s", what)
		}
	}
	runEnd := f.toolRuns()
	for _, c := range f.calls {
		r := f.resultOf[c]
		if r == transcript.None {
			continue
		}
		if r.Message <= c.Message || r.Message > runEnd[c.Message] {
			f.add(r.Message, MisplacedResult, []string{t.Block(r).ToolID},
				"tool message for %s is not among the tool messages right after its call (message %d)", quoteID(f.t.Block(c).ToolID), c.Message)
		}
	}
	f.checkPairing()
}

// toolRuns gives, for each message, the index of the last message of the run of tool
// messages right after it (the message itself when none follows).
func (f *fixer) toolRuns() []int {
	ms := f.t.Messages
	end := make([]int, len(ms))
	for mi := len(ms) - 1; mi >= 0; mi-- {
		end[mi] = mi
		if mi+1 < len(ms) {
			if next := &ms[mi+1]; len(next.Blocks) > 0 && f.isResult(&next.Blocks[0]) {
				end[mi] = end[mi+1]
			}
		}
	}
	return end
}

// fixOpenAI takes every tool message out and writes, right after each assistant message
// with tool_calls, one tool message per call (an error one for a missing result); orphan
// tool messages and empty messages go.
func (f *fixer) fixOpenAI() ([]transcript.Edit, error) {
	t := f.t
	var elems []elem
	for _, mi := range f.arrayMessages() {
		m := &t.Messages[mi]
		if len(m.Blocks) == 0 || f.isResult(&m.Blocks[0]) {
			continue
		}
		e := elem{src: mi}
		var calls []transcript.Ref
		k := 0 // index in tool_calls
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if !f.isCall(b) {
				continue
			}
			ref := transcript.Ref{Message: mi, Block: bi}
			if m.Role == "assistant" {
				calls = append(calls, ref)
			}
			if nid, ok := f.newID[ref]; ok {
				if e.text == "" {
					e.text = t.Slice(m.Span)
				}
				var err error
				if e.text, err = setField(e.text, "tool_calls."+itoa(k)+".id", transcript.Quote(nid)); err != nil {
					return nil, err
				}
			}
			k++
		}
		elems = append(elems, e)
		results, err := f.openaiResults(calls)
		if err != nil {
			return nil, err
		}
		elems = append(elems, results...)
	}
	return f.rebuildArray(elems)
}

// openaiResults gives the tool messages answering calls: recorded ones in document order,
// then an error one for each missing result.
func (f *fixer) openaiResults(calls []transcript.Ref) ([]elem, error) {
	type found struct {
		at transcript.Ref
		e  elem
	}
	var have []found
	var missing []elem
	for _, c := range calls {
		id := f.callID(c)
		r := f.resultOf[c]
		if r == transcript.None {
			missing = append(missing, elem{src: -1, text: `{"role":"tool","tool_call_id":` + f.callIDJSON(c) + `,"content":` + transcript.Quote(Interrupted) + `}`})
			continue
		}
		b := f.t.Block(r)
		e := elem{src: r.Message}
		if len(b.ToolIDs) > 0 || b.ToolID != id {
			raw := f.t.Slice(f.t.Messages[r.Message].Span)
			var err error
			if len(b.ToolIDs) > 0 {
				if raw, err = sjson.Delete(raw, "tool_call_ids"); err != nil {
					return nil, err
				}
			}
			if e.text, err = setField(raw, "tool_call_id", f.callIDJSON(c)); err != nil {
				return nil, err
			}
		}
		have = append(have, found{r, e})
	}
	// By the result's place, so results already in order stay in order.
	sort.SliceStable(have, func(i, j int) bool { return before(have[i].at, have[j].at) })
	out := make([]elem, 0, len(have)+len(missing))
	for _, h := range have {
		out = append(out, h.e)
	}
	return append(out, missing...), nil
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
