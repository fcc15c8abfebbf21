package repair

import (
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// checkClaudeCode applies the pairing rules to the live branch of a session. It reads
// only the conversation's structure (roles, blocks, tool ids and names, records), never
// its text: ctx-repair checks a streamed session, whose transcript has no Doc.
func (f *fixer) checkClaudeCode() { f.checkPairing() }

// OrphanRemovedText replaces the content of a Claude Code user record whose only blocks
// were results without a call, so the record stays in the uuid chain.
const OrphanRemovedText = "(A tool result whose call is not in the conversation was removed.)"

// fixClaudeCode edits records in place: a renamed call id and the tool_use_id of its
// result are spliced; a missing result becomes a new user record after the line of its
// call, chained to it by parentUuid (Claude Code hangs parallel results off their calls
// the same way); an orphan result is cut from its record's content.
func (f *fixer) fixClaudeCode() ([]transcript.Edit, error) {
	t := f.t
	var edits []transcript.Edit
	idEdit := func(r transcript.Ref, key, literal string) { edits = append(edits, f.valueEdit(r, key, literal)...) }
	inserts := map[int][]string{}
	given := map[int]string{} // line start → the uuid repair gave a line that had none
	for _, c := range f.calls {
		id := f.callID(c)
		if _, renamed := f.newID[c]; renamed {
			idEdit(c, "id", transcript.Quote(id))
		}
		r := f.resultOf[c]
		if r != transcript.None {
			if t.Block(r).ToolID != id {
				idEdit(r, "tool_use_id", f.callIDJSON(c))
			}
			continue
		}
		line := f.lineOf(c)
		raw := t.Slice(line)
		g := gjson.GetMany(raw, "uuid", "timestamp", "sessionId", "cwd", "version", "gitBranch", "isSidechain", "userType")
		parent := g[0].Raw
		if g[0].Type != gjson.String || g[0].String() == "" {
			// A call line without a uuid cannot be chained to: it gets one, derived from it.
			if parent = given[line.Start]; parent == "" {
				parent = transcript.Quote(transcript.DeriveUUID("ctx-repair line\x00" + raw))
				given[line.Start] = parent
				if g[0].Exists() {
					at := line.Start + g[0].Index
					edits = append(edits, transcript.Edit{Span: transcript.Span{Start: at, End: at + len(g[0].Raw)}, With: parent})
				} else if i := strings.IndexByte(raw, '{'); i >= 0 {
					at := line.Start + i + 1
					edits = append(edits, transcript.Edit{Span: transcript.Span{Start: at, End: at}, With: `"uuid":` + parent + `,`})
				}
			}
		}
		rec := `{"parentUuid":` + parent + `,"isSidechain":` + orFalse(g[6].Raw)
		for i, key := range []string{"userType", "cwd", "sessionId", "version", "gitBranch"} {
			if v := g[[]int{7, 3, 2, 4, 5}[i]]; v.Exists() {
				rec += `,"` + key + `":` + v.Raw
			}
		}
		rec += `,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":` + f.callIDJSON(c) +
			`,"content":` + transcript.Quote(Interrupted) + `,"is_error":true}]}` +
			`,"uuid":` + transcript.Quote(transcript.DeriveUUID("ctx-repair\x00"+gjson.Parse(parent).String()+"\x00"+id)) +
			`,"timestamp":` + orNull(g[1].Raw) + `}`
		inserts[line.End] = append(inserts[line.End], rec)
	}
	orphanEdits, err := f.cutOrphans()
	if err != nil {
		return nil, err
	}
	edits = append(edits, orphanEdits...)
	return append(edits, insertLines(inserts)...), nil
}

// cutOrphans removes orphan results from their records: each from its content array, or
// the whole array's content replaced by a note when nothing else would be left.
func (f *fixer) cutOrphans() ([]transcript.Edit, error) {
	t := f.t
	byLine := map[transcript.Span][]transcript.Ref{}
	var lines []transcript.Span
	for _, r := range f.orphans {
		l := f.lineOf(r)
		if _, ok := byLine[l]; !ok {
			lines = append(lines, l)
		}
		byLine[l] = append(byLine[l], r)
	}
	var edits []transcript.Edit
	for _, l := range lines {
		content := gjson.Get(t.Slice(l), "message.content")
		if !content.IsArray() {
			continue
		}
		drop := map[int]bool{}
		for _, r := range byLine[l] {
			drop[t.Block(r).Span.Start] = true
		}
		edits = append(edits, without(l.Start, content, drop, `[{"type":"text","text":`+transcript.Quote(OrphanRemovedText)+`}]`))
	}
	return edits, nil
}

// valueEdit sets key in a block's JSON object to a JSON literal: the value spliced where it
// is, or the block rewritten with the key added when it has none (a tool_use without an id).
func (f *fixer) valueEdit(r transcript.Ref, key, literal string) []transcript.Edit {
	b := f.t.Block(r)
	raw := f.t.Slice(b.Span)
	if v := gjson.Get(raw, key); v.Exists() && v.Index > 0 {
		s := b.Span.Start + v.Index
		return []transcript.Edit{{Span: transcript.Span{Start: s, End: s + len(v.Raw)}, With: literal}}
	}
	with, err := setField(raw, key, literal)
	if err != nil {
		return nil
	}
	return []transcript.Edit{{Span: b.Span, With: with}}
}

// lineOf returns the record line that holds a block.
func (f *fixer) lineOf(r transcript.Ref) transcript.Span {
	m := &f.t.Messages[r.Message]
	s := f.t.Block(r).Span.Start
	for _, l := range m.Lines {
		if l.Start <= s && s < l.End {
			return l
		}
	}
	return m.Lines[len(m.Lines)-1]
}

func orNull(raw string) string {
	if raw == "" {
		return "null"
	}
	return raw
}

func orFalse(raw string) string {
	if raw == "" {
		return "false"
	}
	return raw
}
