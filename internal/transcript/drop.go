package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/tidwall/gjson"
)

// DropMessages returns the edits that delete the messages marked in drop (indexed like
// Messages): runs of array elements with their separators in JSON documents, record lines
// in JSONL ones. In a Claude Code session a kept message whose parent was dropped is
// re-chained (Rechain) so the session still reads as one conversation.
func (t *Transcript) DropMessages(drop []bool) []Edit {
	if t.Format.JSONL() {
		return t.dropLines(drop)
	}
	var arr []int // array elements in order
	for i := range t.Messages {
		if !t.Messages[i].Header {
			arr = append(arr, i)
		}
	}
	var edits []Edit
	for k := 0; k < len(arr); {
		if !drop[arr[k]] {
			k++
			continue
		}
		j := k
		for j+1 < len(arr) && drop[arr[j+1]] {
			j++
		}
		start, end := t.Messages[arr[k]].Span.Start, t.Messages[arr[j]].Span.End
		switch {
		case j+1 < len(arr):
			end = t.Messages[arr[j+1]].Span.Start // the separator after the run goes too
		case k > 0:
			start = t.Messages[arr[k-1]].Span.End // the last run: the separator before it
		}
		edits = append(edits, Edit{Span: Span{Start: start, End: end}})
		k = j + 1
	}
	return edits
}

func (t *Transcript) dropLines(drop []bool) []Edit {
	edits := t.DropLines(drop)
	if t.Format == ClaudeCode {
		edits = append(edits, t.Rechain(drop, "")...)
	}
	return edits
}

// DropLines returns the edits that delete the record lines of the messages marked in drop
// (a JSONL document), without re-chaining what is left: a caller that chains the kept
// messages its own way uses it with RechainTargets and ParentEdit.
func (t *Transcript) DropLines(drop []bool) []Edit {
	gone := map[int]bool{} // record starts
	for mi, d := range drop {
		if d {
			for _, l := range t.Messages[mi].Lines {
				gone[l.Start] = true
			}
		}
	}
	var edits []Edit
	for _, r := range t.Records {
		if gone[r.Span.Start] {
			edits = append(edits, Edit{Span: Span{Start: r.Span.Start, End: max(r.Next, r.Span.End)}})
		}
	}
	return edits
}

// Rechain keeps a Claude Code session's live branch whole across messages that leave it
// (drop): a kept message whose parent chain runs into such a line (directly, or through
// records that are not messages) is hung off its nearest kept ancestor, or, when none is
// left, off root (a record uuid; "" makes it a root itself). The nearest kept ancestor,
// rather than the kept line before it in the file, keeps each chain to itself when the
// session is read with its subagent (isSidechain) lines, which sit in the file among the
// main conversation's.
//
// Only the first lines of the messages RechainTargets names are read.
func (t *Transcript) Rechain(drop []bool, root string) []Edit {
	var edits []Edit
	for _, rc := range t.RechainTargets(drop, root) {
		if e, ok := t.ParentEdit(rc.Message, rc.Parent); ok {
			edits = append(edits, e)
		}
	}
	return edits
}

// ParentEdit is the edit that sets the parentUuid of message mi's first line to parent (a
// JSON value: a quoted uuid, or null); ok is false when the line has none to set.
func (t *Transcript) ParentEdit(mi int, parent string) (e Edit, ok bool) {
	first := t.Messages[mi].Lines[0]
	p := gjson.Get(t.Slice(first), "parentUuid")
	if p.Index <= 0 {
		return Edit{}, false
	}
	s := first.Start + p.Index
	return Edit{Span: Span{Start: s, End: s + len(p.Raw)}, With: parent}, true
}

// Rechained is a kept message of a Claude Code session to hang off a new parent: Parent
// is the JSON value its first line's parentUuid gets (a quoted uuid, or null).
type Rechained struct {
	Message int
	Parent  string
}

// RechainTargets works out what Rechain changes from the records' links alone, without
// the document's text.
func (t *Transcript) RechainTargets(drop []bool, root string) []Rechained {
	if len(drop) != len(t.Messages) {
		return nil
	}
	parent := make(map[string]string, len(t.Records))
	owner := map[string]int{} // uuid of a message line → message
	for _, r := range t.Records {
		parent[r.UUID] = r.Parent
		if r.Message >= 0 {
			owner[r.UUID] = r.Message
		}
	}
	var out []Rechained
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if len(m.Lines) == 0 || drop[mi] {
			continue
		}
		first := t.recordAt(m.Lines[0].Start)
		if first == nil || first.Parent == "" {
			continue
		}
		// Walk up through records that are not messages and messages that were dropped, to
		// the nearest kept message line (up) or the top of the chain (up == "").
		up, broken, found := first.Parent, false, false
		for hops := 0; up != "" && hops <= len(t.Records); hops++ {
			if o, ok := owner[up]; ok && o != mi {
				if found = !drop[o]; found {
					break
				}
				broken = true
			}
			up = parent[up]
		}
		if !broken {
			continue
		}
		with := "null"
		switch {
		case found: // not a uuid the walk stopped at for going round a loop
			with = Quote(up)
		case root != "":
			with = Quote(root)
		}
		out = append(out, Rechained{Message: mi, Parent: with})
	}
	return out
}

// recordAt is the record whose line starts at offset start, nil if none.
func (t *Transcript) recordAt(start int) *Record {
	k := sort.Search(len(t.Records), func(k int) bool { return t.Records[k].Span.Start >= start })
	if k < len(t.Records) && t.Records[k].Span.Start == start {
		return &t.Records[k]
	}
	return nil
}

// DeriveUUID makes a record uuid in Claude Code's 8-4-4-4-12 spelling from a seed, so a
// tool that adds a record to a session gives it the same uuid every time it runs on the
// same input.
func DeriveUUID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	h := hex.EncodeToString(sum[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// SessionFields are what a record ctxkit writes into a Claude Code session shares with the
// session's line it goes beside: common holds isSidechain (a subagent's log is all
// sidechain lines), agentId, userType, cwd, sessionId, version and gitBranch as JSON
// members; stamp is `,"timestamp":...`, or "" when the line has none.
func SessionFields(line string) (common, stamp string) {
	g := gjson.GetMany(line, "sessionId", "cwd", "version", "gitBranch", "timestamp", "userType", "isSidechain", "agentId")
	common = `"isSidechain":false`
	if g[6].Bool() {
		common = `"isSidechain":true`
	}
	if g[7].Exists() {
		common += `,"agentId":` + g[7].Raw
	}
	for i, key := range []string{"userType", "cwd", "sessionId", "version", "gitBranch"} {
		if v := g[[]int{5, 1, 0, 2, 3}[i]]; v.Exists() {
			common += `,"` + key + `":` + v.Raw
		}
	}
	if g[4].Exists() {
		stamp = `,"timestamp":` + g[4].Raw
	}
	return common, stamp
}
