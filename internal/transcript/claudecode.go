package transcript

import (
	"fmt"
	"time"
)

// ccLine is what the Claude Code reader keeps of one record: enough to find the live
// conversation and to assemble its messages, a few hundred bytes however long the record.
type ccLine struct {
	uuid, parent string
	msgID        string // message.id of an assistant record
	sidechain    bool
	message      bool     // a user or assistant record
	calls        []string // tool_use ids an assistant record makes
	answer       string   // the tool_use id the first tool_result of a user record answers
	answers      bool     // the record has a tool_result
	// Of a message record: what its message starts as, or adds to a turn.
	role    string
	stamp   time.Time // zero when absent or unreadable
	stampOK bool
	summary bool // isCompactSummary
	// boundary marks a compaction's boundary record: a new root (parentUuid null) that
	// keeps a link to the history it replaces (logicalParentUuid). A compaction that kept
	// the newest messages as they were names the first of them (preservedHead) and the
	// message they now follow, its summary (preservedAnchor): compactMetadata's
	// preservedSegment.
	boundary                                      bool
	preservedHead, preservedAnchor, preservedTail string
	model                                         string // message.model, unless synthetic
	usage                                         Usage
	counted                                       bool // usage holds a real figure
}

// ccParser reads a Claude Code session log.
//
// The log is a tree through uuid/parentUuid. The live conversation is the chain from the
// newest message up to the root (rewinds and forks leave dead branches), widened by the
// lines that belong to the turns on it: Claude Code hangs each line of a streamed
// assistant turn, and each result of a parallel tool call, off its own parent, so the
// other lines of a turn (same message.id) and the results of its calls are side branches
// that the model still sees. Lines are taken in file order; assistant lines that share a
// message.id become one message. Subagent (isSidechain) lines are left out unless
// sidechains is set, or unless the file holds nothing else (a subagent's own log).
type ccParser struct {
	sidechains     bool
	lines          []ccLine
	byUUID         map[string]int
	onlySidechains bool
}

// The fields of a Claude Code record that the reader uses, in one walk.
const (
	ccUUID = iota
	ccParent
	ccSidechain
	ccMessage
	ccTimestamp
	ccCompactSummary
	ccLogicalParent
	ccSubtype
	ccCompactMetadata
	ccType // read by the record reader (Record.Type), listed so that a duplicate is refused
	ccFields
)

var ccRecordKeys = [ccFields]string{"uuid", "parentUuid", "isSidechain", "message", "timestamp", "isCompactSummary", "logicalParentUuid", "subtype", "compactMetadata", "type"}

func (p *ccParser) record(seq int, r *Record, raw string) []Message {
	var f [ccFields]jval
	recordValue(raw, r.Span.Start).fields(f[:], ccRecordKeys[:]...)
	// An id that is not a string (false, {}) names nothing: the record is read as one with
	// no id, not as one hanging off a record no longer in the file.
	l := ccLine{uuid: keep(f[ccUUID].text()), parent: keep(f[ccParent].text()), sidechain: f[ccSidechain].boolean()}
	r.UUID, r.Parent = l.uuid, l.parent
	l.boundary = f[ccLogicalParent].str() != "" || f[ccSubtype].str() == "compact_boundary"
	if l.boundary && f[ccCompactMetadata].isObject() {
		if seg := f[ccCompactMetadata].get("preservedSegment"); seg.isObject() {
			var sf [3]jval
			seg.fields(sf[:], "headUuid", "anchorUuid", "tailUuid")
			l.preservedHead, l.preservedAnchor, l.preservedTail = keep(sf[0].str()), keep(sf[1].str()), keep(sf[2].str())
		}
	}
	msg := f[ccMessage]
	l.message = (r.Type == "user" || r.Type == "assistant") && msg.isObject()
	var out []Message
	if l.message {
		if !l.sidechain {
			p.onlySidechains = false
		}
		var mf [5]jval
		msg.fields(mf[:], "id", "role", "content", "model", "usage")
		if r.Type == "assistant" {
			l.msgID = keep(mf[0].str())
		}
		role := mf[1].str()
		if role == "" {
			role = r.Type // the record's type names the role when the message leaves it out
		}
		m := Message{Role: role, Span: msg.span()}
		m.Blocks = anthropicContent(mf[2], nil)
		for i := range m.Blocks {
			switch b := &m.Blocks[i]; {
			case b.Kind == ToolCall:
				l.calls = append(l.calls, keep(b.ToolID))
			case b.Type == "tool_result" && !l.answers:
				l.answer, l.answers = keep(b.ToolID), true
			}
		}
		l.role = intern(m.Role)
		if ts, err := time.Parse(time.RFC3339Nano, f[ccTimestamp].str()); err == nil {
			l.stamp, l.stampOK = ts, true
		}
		l.summary = f[ccCompactSummary].boolean() || opensWith(raw, r.Span.Start, &m, TrimNote)
		if model := mf[3].str(); model != "" && model != "<synthetic>" {
			l.model = intern(model)
		}
		l.usage, l.counted = ccUsage(mf[4])
		out = []Message{m}
	}
	if l.uuid != "" {
		p.byUUID[l.uuid] = seq
	}
	p.lines = append(p.lines, l)
	return out
}

func (p *ccParser) finish(o *Outline) {
	keepSide := p.sidechains || p.onlySidechains
	wanted := func(l *ccLine) bool { return l.message && (keepSide || !l.sidechain) }
	links := newCCLinks(p.lines, p.byUUID)
	live, top := ccLive(p.lines, links, p.onlySidechains, p.sidechains, wanted)
	p.explain(o, live, top, links.up, wanted)
	// The messages a compaction kept as they were, before its boundary in the file, carry
	// the figures of requests made before it, which measured the context it replaced:
	// Claude Code sets them to zero when it reads the log, and so are they left out here.
	preserved := func(i int) bool { return top >= 0 && p.lines[top].boundary && i < top }

	turnAt := make(map[string]int)
	for i := range p.lines {
		l := &p.lines[i]
		if !live[i] || !wanted(l) {
			continue // attachments, system records and the like sit in the chain too
		}
		span := o.Records[i].Span
		if at, ok := turnAt[l.msgID]; ok && l.msgID != "" {
			prev := &o.Messages[at]
			prev.Lines = append(prev.Lines, span)
			o.Parts[at] = append(o.Parts[at], Part{Record: i})
			if l.stampOK {
				prev.Time = l.stamp
			}
			if l.counted && !preserved(i) {
				o.Usage = addUsage(o.Usage, l.usage, at)
			}
			continue
		}
		m := Message{Role: l.role, Span: span, Lines: []Span{span}, ID: l.msgID, Time: l.stamp, Summary: l.summary}
		if m.ID == "" {
			m.ID = l.uuid
		} else {
			turnAt[l.msgID] = len(o.Messages)
		}
		o.Messages = append(o.Messages, m)
		o.Parts = append(o.Parts, []Part{{Record: i}})
		if l.model != "" {
			o.Model = l.model
		}
		if l.counted && !preserved(i) {
			o.Usage = addUsage(o.Usage, l.usage, len(o.Messages)-1)
		}
	}
}

// ccLinks are the links of a log's tree. A compaction that kept the newest messages as
// they were (compactMetadata.preservedSegment) writes a boundary and a summary after
// them, and what follows chains on from the last of them (tailUuid), while the first
// (headUuid) still names the message before it, which the compaction replaced. Claude
// Code relinks the head to the summary (anchorUuid) when it reads the log: the
// conversation is the summary, the messages kept, then what follows. So are the links
// here: the head's goes to the summary, and the kept messages go on from the summary
// when it is the newest message. The newest compaction naming a line wins; a link to the
// line itself or to no line is not made.
type ccLinks struct {
	lines  []ccLine
	byUUID map[string]int
	relink map[string]int // a kept head's uuid: the line of its summary
	tail   map[int]int    // a summary's line: the line of the last message kept after it
}

func newCCLinks(lines []ccLine, byUUID map[string]int) *ccLinks {
	k := &ccLinks{lines: lines, byUUID: byUUID}
	for i := range lines {
		l := &lines[i]
		if l.preservedHead == "" || l.preservedHead == l.preservedAnchor {
			continue
		}
		a, ok := byUUID[l.preservedAnchor]
		if !ok {
			continue
		}
		if k.relink == nil {
			k.relink, k.tail = map[string]int{}, map[int]int{}
		}
		k.relink[l.preservedHead] = a
		if t, ok := byUUID[l.preservedTail]; ok && t != a {
			k.tail[a] = t
		}
	}
	return k
}

// up is the line line i follows, ok false at a root (parentUuid null or naming no line).
func (k *ccLinks) up(i int) (int, bool) {
	if k.relink != nil && k.lines[i].uuid != "" {
		if a, ok := k.relink[k.lines[i].uuid]; ok {
			return a, true
		}
	}
	p, ok := k.byUUID[k.lines[i].parent]
	return p, ok && k.lines[i].parent != ""
}

// leaf is where the conversation whose newest message line is i ends: the last message a
// compaction kept, when i is its summary.
func (k *ccLinks) leaf(i int) int {
	if t, ok := k.tail[i]; ok {
		return t
	}
	return i
}

// ccLive marks the lines of the live conversation (see ccParser), and returns the top of
// the chain it followed from the newest message (up): the line whose parent is null or
// names no line (-1 when it followed none).
func ccLive(lines []ccLine, links *ccLinks, onlySidechains, sidechains bool, wanted func(*ccLine) bool) (live []bool, top int) {
	live = make([]bool, len(lines))
	top = -1
	leaf := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if l := &lines[i]; l.message && (onlySidechains || !l.sidechain) {
			leaf = i
			break
		}
	}
	switch {
	case leaf < 0:
	case lines[leaf].uuid == "":
		// Records without ids (an old or hand-made log): every message line in file order,
		// from the last compaction on (a compact boundary starts the conversation anew, as
		// it does on a chain: ctx-summarize's own summary of such a log is one).
		from := 0
		for i := leaf; i >= 0; i-- {
			if lines[i].boundary {
				from = i + 1
				break
			}
		}
		for i := from; i < len(lines); i++ {
			live[i] = wanted(&lines[i])
		}
	default:
		for i := links.leaf(leaf); !live[i]; {
			live[i] = true
			top = i
			p, ok := links.up(i)
			if !ok {
				break
			}
			i = p
		}
		// Widen the chain to whole turns and the results of their calls.
		turns := make(map[string]bool)
		calls := make(map[string]bool)
		for i := range lines {
			if live[i] && lines[i].msgID != "" {
				turns[lines[i].msgID] = true
			}
		}
		for i := range lines {
			l := &lines[i]
			if wanted(l) && l.msgID != "" && turns[l.msgID] {
				live[i] = true
			}
			if live[i] {
				for _, id := range l.calls {
					calls[id] = true
				}
			}
		}
		for i := range lines {
			l := &lines[i]
			if !live[i] && wanted(l) && l.answers && calls[l.answer] {
				live[i] = true
			}
		}
		if sidechains {
			// Subagent lines are chains of their own; keep them all.
			for i := range lines {
				if lines[i].sidechain && lines[i].message {
					live[i] = true
				}
			}
		}
	}
	return live, top
}

// explain names why each message line the live chain leaves out is left out: a subagent's
// (sidechain), one on a branch of the live tree that a rewind or fork left, or on a branch
// cut from it (dead branch), or one from before the compaction the live chain starts at
// (compacted). A message line none of these explains is in a tree of its own with no
// compaction to account for it: records whose parentUuid is null or names no record, as
// exported or hand-made logs have. Following the chain would keep the newest message
// alone, so the whole file is read in line order instead, every message line in it, and
// a warning says so.
func (p *ccParser) explain(o *Outline, live []bool, top int, up func(int) (int, bool), wanted func(*ccLine) bool) {
	lines := p.lines
	if top < 0 {
		for i := range lines {
			if l := &lines[i]; l.message && !live[i] {
				o.Records[i].Left = Sidechain // only subagent lines, left out by choice
			}
		}
		return
	}
	roots := ccRoots(lines, up)
	liveRoot := roots[top]
	unchained, messages := 0, 0
	for i := range lines {
		l := &lines[i]
		if !l.message {
			continue
		}
		if wanted(l) {
			messages++
		}
		r := &o.Records[i]
		switch {
		case live[i]:
		case !wanted(l):
			r.Left = Sidechain
		case roots[i] == liveRoot:
			r.Left = DeadBranch
		case lines[top].parent == "" && lines[roots[i]].parent != "":
			// A branch whose first record hangs off one no longer in the file, beside a
			// live chain that starts at a true root: history was cut away (ctx-trim
			// drops the oldest records and makes the first it keeps a root), and this
			// hung off it, a branch the live chain had already left.
			r.Left = DeadBranch
		case lines[top].boundary && i < top:
			r.Left = Compacted
		default:
			unchained++
		}
	}
	if unchained == 0 {
		return
	}
	for i := range lines {
		if l := &lines[i]; wanted(l) {
			live[i], o.Records[i].Left = true, Read
		}
	}
	o.Warnings = append(o.Warnings, fmt.Sprintf("%d of the %d message records do not chain to the newest message (parentUuid null or naming no record) and no rewind, compaction or subagent explains it: all %d are read in line order", unchained, messages, messages))
}

// ccRoots gives, for each line, the first line of its tree: the ancestor reached by
// following the links up (parentUuid, ccUp) until there is none (or they loop).
func ccRoots(lines []ccLine, up func(int) (int, bool)) []int {
	const unknown, visiting = -1, -2
	roots := make([]int, len(lines))
	for i := range roots {
		roots[i] = unknown
	}
	var path []int
	for i := range lines {
		j := i
		for roots[j] == unknown {
			roots[j] = visiting
			path = append(path, j)
			p, ok := up(j)
			if !ok {
				roots[j] = j
				break
			}
			j = p
		}
		root := roots[j]
		if root == visiting { // a loop: its first line stands for its root
			root = j
		}
		for _, k := range path {
			roots[k] = root
		}
		path = path[:0]
	}
	return roots
}

// ccUsage reads an assistant message's usage: the prompt it answered (fresh, cache-read
// and cache-written tokens) plus its reply. ok is false when there is none.
func ccUsage(u jval) (us Usage, ok bool) {
	if !u.isObject() {
		return Usage{}, false
	}
	var f [4]jval
	u.fields(f[:], "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
	us = Usage{CacheRead: int(f[1].integer()), CacheCreation: int(f[2].integer()), Output: int(f[3].integer())}
	us.Input = int(f[0].integer()) + us.CacheRead + us.CacheCreation
	if us.Input == 0 && us.Output == 0 {
		return Usage{}, false // synthetic messages carry zeroes
	}
	return us, true
}

// addUsage records a figure for message at. A later line of the same turn carries the
// final figure; the list stays in message order.
func addUsage(list []Usage, us Usage, at int) []Usage {
	us.After = at
	k := len(list)
	for k > 0 && list[k-1].After > at {
		k--
	}
	if k > 0 && list[k-1].After == at {
		list[k-1] = us
		return list
	}
	list = append(list, Usage{})
	copy(list[k+1:], list[k:])
	list[k] = us
	return list
}

func parseTime(s string, fallback time.Time) time.Time {
	if s == "" {
		return fallback
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fallback
	}
	return ts
}
