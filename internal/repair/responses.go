package repair

import (
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// checkResponses applies the Responses rules (Codex rollouts hold Responses items). Like
// checkClaudeCode it reads no text: a streamed rollout is checked without it.
func (f *fixer) checkResponses() {
	if f.t.Format == transcript.Responses {
		for _, mi := range f.arrayMessages() {
			switch shape, _ := f.itemShape(mi); shape {
			case "string":
				f.add(mi, ItemShape, nil, "input item is a bare string, not a message item")
			case "object":
				f.add(mi, ItemShape, nil, "message item has no role")
			case "value":
				f.add(mi, ItemShape, nil, "input item is not an object")
			}
		}
	}
	for _, c := range f.calls {
		if r := f.resultOf[c]; r != transcript.None && before(r, c) {
			f.add(r.Message, MisplacedResult, []string{f.t.Block(r).ToolID}, "output for %s comes before its call (message %d)", quoteID(f.t.Block(c).ToolID), c.Message)
		}
	}
	f.checkPairing()
}

// itemShape says what is wrong with the shape of a Responses input item, "" when nothing:
// "string" for a bare string, "object" for a message item without a role, "value" for any
// other JSON value; and the item's JSON. Only items the parser read as a message without a
// role (role "other") are looked at, so a well-formed document costs nothing, and a
// streamed Codex rollout, whose items are records, is never read.
func (f *fixer) itemShape(mi int) (string, string) {
	m := &f.t.Messages[mi]
	if m.Role != "other" {
		return "", ""
	}
	raw := f.t.Slice(m.Span)
	switch {
	case strings.HasPrefix(raw, `"`):
		return "string", raw
	case strings.HasPrefix(raw, "{"):
		return "object", raw
	}
	return "value", raw
}

// reshapedItem is what fixing an item's shape makes of it: a bare string becomes the user
// message it stands for, and a message item with content but no role a user message;
// anything else goes (ok false).
func (f *fixer) reshapedItem(mi int) (text string, ok bool, err error) {
	shape, raw := f.itemShape(mi)
	switch shape {
	case "string":
		return `{"role":"user","content":` + raw + `}`, true, nil
	case "object":
		if !gjson.Get(raw, "content").Exists() {
			return "", false, nil
		}
		text, err := setField(raw, "role", `"user"`)
		return text, err == nil, err
	case "value":
		return "", false, nil
	}
	return "", true, nil
}

// outputItem is the output item answering a call that has none.
func (f *fixer) outputItem(c transcript.Ref) string {
	b := f.t.Block(c)
	typ := b.Type + "_output"
	if b.Type == "" {
		typ = "function_call_output"
	}
	return `{"type":` + transcript.Quote(typ) + `,"call_id":` + f.callIDJSON(c) + `,"output":` + transcript.Quote(Interrupted) + `}`
}

// moved reports whether result r belongs after its call: it came before it.
func (f *fixer) moved(r transcript.Ref) bool {
	cs := f.callsOf[r]
	return len(cs) > 0 && before(r, cs[0])
}

// fixResponses drops outputs without a call and puts, right after each call, the output
// that came before it or an error output for a missing one.
func (f *fixer) fixResponses() ([]transcript.Edit, error) {
	t := f.t
	orphan := map[transcript.Ref]bool{}
	for _, r := range f.orphans {
		orphan[r] = true
	}
	var elems []elem
	for _, mi := range f.arrayMessages() {
		m := &t.Messages[mi]
		if len(m.Blocks) == 1 {
			ref := transcript.Ref{Message: mi, Block: 0}
			if b := &m.Blocks[0]; f.isResult(b) && (orphan[ref] || f.moved(ref)) {
				continue
			}
		}
		text, keep, err := f.reshapedItem(mi)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		e, err := f.responsesItem(mi)
		if err != nil {
			return nil, err
		}
		if text != "" {
			e.text = text
		}
		elems = append(elems, e)
		for bi := range m.Blocks {
			c := transcript.Ref{Message: mi, Block: bi}
			r, isCall := f.resultOf[c]
			switch {
			case !isCall:
			case r == transcript.None:
				elems = append(elems, elem{src: -1, text: f.outputItem(c)})
			case f.moved(r):
				e, err := f.responsesItem(r.Message)
				if err != nil {
					return nil, err
				}
				if e.text == "" {
					e.text = t.Slice(t.Messages[r.Message].Span)
				}
				elems = append(elems, e)
			}
		}
	}
	return f.rebuildArray(elems)
}

// responsesItem is an item as repair writes it: as it was, or with the call_id its call
// got (a call with an empty call_id, and the output answering it).
func (f *fixer) responsesItem(mi int) (elem, error) {
	m := &f.t.Messages[mi]
	if len(m.Blocks) != 1 {
		return elem{src: mi}, nil
	}
	ref := transcript.Ref{Message: mi, Block: 0}
	id, ok := f.newID[ref]
	if !ok {
		if cs := f.callsOf[ref]; len(cs) > 0 {
			if nid, renamed := f.newID[cs[0]]; renamed {
				id, ok = nid, true
			}
		}
	}
	if !ok {
		return elem{src: mi}, nil
	}
	text, err := setField(f.t.Slice(m.Span), "call_id", transcript.Quote(id))
	return elem{src: mi, text: text}, err
}

// fixCodex does what fixResponses does, a record at a time: a missing output becomes a
// response_item record on the line after its call, an orphan output's record goes, and an
// output that came before its call moves to the line after it.
func (f *fixer) fixCodex() ([]transcript.Edit, error) {
	t := f.t
	inserts := map[int][]string{} // line end → records to add after it
	var edits []transcript.Edit
	for _, c := range f.calls {
		if nid, ok := f.newID[c]; ok {
			edits = append(edits, f.valueEdit(c, "call_id", transcript.Quote(nid))...)
			if r := f.resultOf[c]; r != transcript.None && !f.moved(r) {
				edits = append(edits, f.valueEdit(r, "call_id", transcript.Quote(nid))...)
			}
		}
	}
	for _, c := range f.calls {
		r := f.resultOf[c]
		if r != transcript.None && !f.moved(r) {
			continue
		}
		line := t.Messages[c.Message].Lines[0]
		stamp := gjson.Get(t.Slice(line), "timestamp").Raw
		if stamp == "" {
			stamp = `""`
		}
		record := `{"timestamp":` + stamp + `,"type":"response_item","payload":` + f.outputItem(c) + `}`
		if r != transcript.None {
			// A moved output keeps its own record when it had one.
			e, err := f.responsesItem(r.Message)
			if err != nil {
				return nil, err
			}
			switch own := t.Messages[r.Message].Lines[0]; {
			case f.isPayload(r.Message) && e.text == "":
				record = t.Slice(own)
			case f.isPayload(r.Message):
				line := t.Slice(own)
				at := t.Messages[r.Message].Span.Start - own.Start
				record = line[:at] + e.text + line[at+t.Messages[r.Message].Span.Len():]
			default:
				if e.text == "" {
					e.text = t.Slice(t.Messages[r.Message].Span)
				}
				record = `{"timestamp":` + stamp + `,"type":"response_item","payload":` + e.text + `}`
			}
		}
		inserts[line.End] = append(inserts[line.End], record)
	}
	drop := append([]transcript.Ref(nil), f.orphans...)
	for _, c := range f.calls {
		if r := f.resultOf[c]; r != transcript.None && f.moved(r) {
			drop = append(drop, r)
		}
	}
	edits = append(edits, f.dropItems(dedupeRefs(drop))...)
	return append(edits, insertLines(inserts)...), nil
}

// dropItems removes Codex items: the whole record line when the item is the record's
// payload, or the items from the replacement history of a compacted record.
func (f *fixer) dropItems(rs []transcript.Ref) []transcript.Edit {
	t := f.t
	var edits []transcript.Edit
	inRecord := map[transcript.Span]map[int]bool{}
	var records []transcript.Span
	for _, r := range rs {
		m := &t.Messages[r.Message]
		line := m.Lines[0]
		if f.isPayload(r.Message) {
			end := line.End
			if end-t.Base < len(t.Doc) && t.Doc[end-t.Base] == '\r' {
				end++
			}
			if end-t.Base < len(t.Doc) && t.Doc[end-t.Base] == '\n' {
				end++
			}
			edits = append(edits, transcript.Edit{Span: transcript.Span{Start: line.Start, End: end}})
			continue
		}
		if inRecord[line] == nil {
			inRecord[line] = map[int]bool{}
			records = append(records, line)
		}
		inRecord[line][m.Span.Start] = true
	}
	for _, line := range records {
		if hist := gjson.Get(t.Slice(line), "payload.replacement_history"); hist.IsArray() {
			edits = append(edits, without(line.Start, hist, inRecord[line], "[]"))
		}
	}
	return edits
}

// isPayload reports whether a Codex message is its record's payload (not an item of a
// compacted record's history).
func (f *fixer) isPayload(mi int) bool {
	m := &f.t.Messages[mi]
	line := m.Lines[0]
	payload := gjson.Get(f.t.Slice(line), "payload")
	return payload.Index > 0 && line.Start+payload.Index == m.Span.Start
}

// without rewrites the array arr (found at document offset base+arr.Index) without the
// elements that start at the offsets in drop, or as empty when none is left.
func without(base int, arr gjson.Result, drop map[int]bool, empty string) transcript.Edit {
	var kept []string
	arr.ForEach(func(_, v gjson.Result) bool {
		if !drop[base+v.Index] {
			kept = append(kept, v.Raw)
		}
		return true
	})
	s := base + arr.Index
	with := empty
	if len(kept) > 0 {
		with = "[" + strings.Join(kept, ",") + "]"
	}
	return transcript.Edit{Span: transcript.Span{Start: s, End: s + len(arr.Raw)}, With: with}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
