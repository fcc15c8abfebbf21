package repair

import (
	"sort"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// checkAnthropic applies the Messages API rules.
func (f *fixer) checkAnthropic() {
	t := f.t
	msgs := f.arrayMessages()
	live := make([]int, 0, len(msgs)) // messages that are not empty, in order
	for _, mi := range msgs {
		m := &t.Messages[mi]
		full := 0
		for bi := range m.Blocks {
			if f.nonEmpty(&m.Blocks[bi]) {
				full++
			}
		}
		if full == 0 {
			f.add(mi, EmptyMessage, nil, "%s message has no content", m.Role)
			continue
		}
		for bi := range m.Blocks {
			if !f.nonEmpty(&m.Blocks[bi]) {
				f.add(mi, EmptyText, nil, "text block %d is empty", bi)
			}
		}
		if len(live) > 0 {
			if prev := &t.Messages[live[len(live)-1]]; prev.Role == m.Role {
				f.add(mi, SameRole, nil, "second %s message in a row", m.Role)
			}
		} else if m.Role == "assistant" {
			f.add(mi, FirstNotUser, nil, "the conversation opens with an assistant message")
		}
		live = append(live, mi)
	}
	// Where each message's results belong: the next non-empty message.
	next := map[int]int{}
	for k, mi := range live {
		next[mi] = -1
		if k+1 < len(live) {
			next[mi] = live[k+1]
		}
	}
	for _, c := range f.calls {
		r := f.resultOf[c]
		if r == transcript.None {
			continue
		}
		want := next[c.Message]
		if r.Message != want || !f.leadingResult(r) || t.Messages[want].Role != "user" {
			f.add(r.Message, MisplacedResult, []string{t.Block(r).ToolID},
				"result of %s is not at the start of the user message after its call (message %d)", quoteID(t.Block(c).ToolID), c.Message)
		}
	}
	f.checkPairing()
}

// leadingResult reports whether only results (and their labels) come before result r in
// its message.
func (f *fixer) leadingResult(r transcript.Ref) bool {
	m := &f.t.Messages[r.Message]
	for bi := 0; bi < r.Block; bi++ {
		b := &m.Blocks[bi]
		if !f.isResult(b) && f.nonEmpty(b) && !f.isLabel(transcript.Ref{Message: r.Message, Block: bi}) {
			return false
		}
	}
	return true
}

// checkCline reports each call a labelled user text answers: the API wants a tool_result
// block, and a call answered by text alone it rejects.
func (f *fixer) checkCline() {
	for _, c := range f.calls {
		r := f.resultOf[c]
		if r == transcript.None || !f.textResult(f.t.Block(r)) {
			continue
		}
		f.add(r.Message, TextResult, []string{f.t.Block(c).ToolID},
			"tool call %s (%s) is answered by user text, not a tool_result block", quoteID(f.t.Block(c).ToolID), f.toolName(c))
	}
}

// isLabel reports whether block at is the label block of the result after it (older
// Cline), which goes wherever that result goes.
func (f *fixer) isLabel(at transcript.Ref) bool {
	m := &f.t.Messages[at.Message]
	if at.Block+1 >= len(m.Blocks) {
		return false
	}
	next := &m.Blocks[at.Block+1]
	return f.textResult(next) && next.Lead == m.Blocks[at.Block].Span &&
		len(f.callsOf[transcript.Ref{Message: at.Message, Block: at.Block + 1}]) > 0
}

// clineResultJSON is the tool_result block for a Cline text result r answering call c:
// the same text, with its label (the label block and the text when the label is a block
// of its own).
func (f *fixer) clineResultJSON(c, r transcript.Ref) string {
	t := f.t
	b := t.Block(r)
	content := t.Slice(b.Body)
	if !b.Lead.IsZero() {
		content = "[" + t.Slice(b.Lead) + "," + t.Slice(b.Span) + "]"
	}
	return `{"type":"tool_result","tool_use_id":` + f.callIDJSON(c) + `,"content":` + content + `}`
}

// piece is one content block of a rebuilt message: an original block (json empty) or new
// JSON.
type piece struct {
	ref  transcript.Ref
	json string
}

type aMessage struct {
	src    int
	role   string
	pieces []piece
	calls  []transcript.Ref // client calls among the pieces
}

// fixAnthropic takes every client tool result out of its message, drops empty texts and
// messages, merges same-role neighbours, then puts the results of each assistant
// message's calls at the start of the user message after it (an error result for a
// missing one) and opens the conversation with a user message. A message that held only
// results stays in place while they are out, so results that were where they belong go
// back where they were and the messages around them are not merged.
func (f *fixer) fixAnthropic() ([]transcript.Edit, error) {
	t := f.t
	var out []*aMessage
	for _, mi := range f.arrayMessages() {
		m := &t.Messages[mi]
		am := &aMessage{src: mi, role: m.Role}
		results := 0
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			ref := transcript.Ref{Message: mi, Block: bi}
			switch {
			case f.isLabel(ref):
				// Goes with its result.
			case f.isResult(b) && (!f.textResult(b) || len(f.callsOf[ref]) > 0):
				results++
			case !f.nonEmpty(b):
			case f.isCall(b) && m.Role == "assistant":
				am.calls = append(am.calls, ref)
				p := piece{ref: ref}
				if nid, ok := f.newID[ref]; ok {
					j, err := setField(t.Slice(b.Span), "id", transcript.Quote(nid))
					if err != nil {
						return nil, err
					}
					p.json = j
				}
				am.pieces = append(am.pieces, p)
			default:
				am.pieces = append(am.pieces, piece{ref: ref})
			}
		}
		if len(am.pieces) == 0 && results == 0 {
			continue // an empty message
		}
		out = append(out, am)
	}
	out = mergeRoles(out)
	var placed []*aMessage
	for k, am := range out {
		placed = append(placed, am)
		if am.role != "assistant" || len(am.calls) == 0 {
			continue
		}
		results, err := f.anthropicResults(am.calls)
		if err != nil {
			return nil, err
		}
		if k+1 < len(out) && out[k+1].role == "user" {
			out[k+1].pieces = append(results, out[k+1].pieces...)
			continue
		}
		placed = append(placed, &aMessage{src: -1, role: "user", pieces: results})
	}
	// Messages that held only results that went elsewhere are empty now.
	out = placed[:0]
	for _, am := range placed {
		if len(am.pieces) > 0 {
			out = append(out, am)
		}
	}
	out = mergeRoles(out)
	if len(out) > 0 && out[0].role == "assistant" {
		opening := piece{ref: transcript.None, json: `{"type":"text","text":` + transcript.Quote(FirstUserText) + `}`}
		out = append([]*aMessage{{src: -1, role: "user", pieces: []piece{opening}}}, out...)
	}
	elems := make([]elem, len(out))
	for k, am := range out {
		e, err := f.anthropicElem(am)
		if err != nil {
			return nil, err
		}
		elems[k] = e
	}
	return f.rebuildArray(elems)
}

// mergeRoles merges neighbours of one role into the first of them. (Results are only ever
// put at the start of a message, after merging, so they stay first.)
func mergeRoles(ms []*aMessage) []*aMessage {
	var out []*aMessage
	for _, am := range ms {
		n := len(out)
		if n == 0 || out[n-1].role != am.role {
			out = append(out, am)
			continue
		}
		prev := out[n-1]
		prev.pieces = append(prev.pieces, am.pieces...)
		prev.calls = append(prev.calls, am.calls...)
		if prev.src < 0 {
			prev.src = am.src
		}
	}
	return out
}

// anthropicResults gives the result blocks for calls: the recorded ones in their document
// order (with the call's new id if it got one), then an error result for each missing one.
func (f *fixer) anthropicResults(calls []transcript.Ref) ([]piece, error) {
	var found, missing []piece
	for _, c := range calls {
		id := f.callID(c)
		r := f.resultOf[c]
		if r == transcript.None {
			missing = append(missing, piece{ref: transcript.None, json: `{"type":"tool_result","tool_use_id":` + f.callIDJSON(c) +
				`,"content":` + transcript.Quote(Interrupted) + `,"is_error":true}`})
			continue
		}
		p := piece{ref: r}
		if b := f.t.Block(r); f.textResult(b) {
			p.json = f.clineResultJSON(c, r)
		} else if b.ToolID != id {
			j, err := setField(f.t.Slice(b.Span), "tool_use_id", f.callIDJSON(c))
			if err != nil {
				return nil, err
			}
			p.json = j
		}
		found = append(found, p)
	}
	sortPieces(found)
	return append(found, missing...), nil
}

func sortPieces(ps []piece) {
	sort.SliceStable(ps, func(i, j int) bool { return before(ps[i].ref, ps[j].ref) })
}

// anthropicElem renders a message: the original bytes when its blocks are exactly the
// ones it had, else its JSON with a new content array (every other field kept).
func (f *fixer) anthropicElem(am *aMessage) (elem, error) {
	t := f.t
	if am.src >= 0 && len(am.pieces) == len(t.Messages[am.src].Blocks) {
		same := true
		for bi, p := range am.pieces {
			if p.json != "" || p.ref != (transcript.Ref{Message: am.src, Block: bi}) {
				same = false
				break
			}
		}
		if same {
			return elem{src: am.src}, nil
		}
	}
	content := []byte{'['}
	for i, p := range am.pieces {
		if i > 0 {
			content = append(content, ',')
		}
		switch {
		case p.json != "":
			content = append(content, p.json...)
		default:
			raw := t.Slice(t.Block(p.ref).Span)
			if raw[0] == '"' { // a message whose content was a plain string
				content = append(content, `{"type":"text","text":`...)
				content = append(content, raw...)
				content = append(content, '}')
			} else {
				content = append(content, raw...)
			}
		}
	}
	content = append(content, ']')
	if am.src < 0 {
		return elem{src: -1, text: `{"role":` + transcript.Quote(am.role) + `,"content":` + string(content) + `}`}, nil
	}
	raw := t.Slice(t.Messages[am.src].Span)
	if !gjson.Get(raw, "content").Exists() {
		return elem{src: am.src, text: `{"role":` + transcript.Quote(am.role) + `,"content":` + string(content) + `}`}, nil
	}
	text, err := setField(raw, "content", string(content))
	return elem{src: am.src, text: text}, err
}
