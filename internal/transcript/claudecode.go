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
	pinned  bool // a user message of pinned texts only, if it is the first (settlePinned)
	// boundary marks a compaction's boundary record: a new root (parentUuid null) that
	// keeps a link to the history it replaces (logicalParentUuid, logical). A newer
	// compaction keeps some messages whole (compactMetadata.preservedSegment): their
	// first, relinkHead, hangs off a message from before the compaction in the file, and
	// is read as hanging off relinkAnchor (the summary, or the boundary), as Claude Code
	// relinks it when it loads the log.
	boundary                             bool
	logical                              string
	relinkHead, relinkAnchor, relinkTail string
	model                                string // message.model, unless synthetic
	usage                                Usage
	counted                              bool // usage holds a real figure
	// attached marks an attachment record that puts something into the prompt:
	// attachment is what (attachmentBlock), of type attachType.
	attached   bool
	attachType string
	attachment Block
}

// ccParser reads a Claude Code session log.
//
// The log is a tree through uuid/parentUuid. The live conversation is the chain from the
// newest message up to the root (rewinds and forks leave dead branches), widened by the
// lines that belong to the turns on it: Claude Code hangs each line of a streamed
// assistant turn, and each result of a parallel tool call, off its own parent, so the
// other lines of a turn (same message.id) and the results of its calls are side branches
// that the model still sees. Lines are taken in file order; assistant lines that share a
// message.id become one message.
//
// A log holds one agent's conversation and may hold its subagents' (isSidechain lines:
// Claude Code 1.x wrote them into the session's log; 2.0 on writes each into a log of its
// own, all of whose lines are sidechain lines). The conversation read is the main one,
// its subagents' lines left out; a subagent's own log's (the file holds nothing else);
// with sidechains, the subagent's where the log holds one (the newest: its lines chain
// to each other, not to the main conversation), the main conversation's lines left out
// (MainThread), so that a tier changes the subagent's conversation alone; with all
// (AllThreads), the main conversation and every subagent line with it, for a restore
// that must find every marker a run over either wrote.
type ccParser struct {
	sidechains, all bool
	subagent        string // Options.Subagent
	lines           []ccLine
	byUUID          map[string]int
	onlySidechains  bool
	anySidechain    bool // a sidechain message line was seen
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
	ccType // read by the record reader (Record.Type), listed so that a duplicate is refused
	ccAttachment
	ccCompactMetadata
	ccFields
)

var ccRecordKeys = [ccFields]string{"uuid", "parentUuid", "isSidechain", "message", "timestamp", "isCompactSummary", "logicalParentUuid", "subtype", "type", "attachment", "compactMetadata"}

func (p *ccParser) record(seq int, r *Record, raw string) []Message {
	l, out := ccRead(r, raw)
	p.add(seq, r, l)
	return out
}

// add puts line seq, read as l, into the session's tree.
func (p *ccParser) add(seq int, r *Record, l ccLine) {
	r.UUID, r.Parent = l.uuid, l.parent
	if l.message {
		if !l.sidechain {
			p.onlySidechains = false
		} else {
			p.anySidechain = true
		}
	}
	if l.uuid != "" {
		p.byUUID[l.uuid] = seq
	}
	p.lines = append(p.lines, l)
}

// ccRead reads one record of a session log (raw is its line, r its record) on its own:
// what the reader keeps of it, and the message it carries.
func ccRead(r *Record, raw string) (ccLine, []Message) {
	var f [ccFields]jval
	recordValue(raw, r.Span.Start).fields(f[:], ccRecordKeys[:]...)
	// An id that is not a string (false, {}) names nothing: the record is read as one with
	// no id, not as one hanging off a record no longer in the file.
	l := ccLine{uuid: keep(f[ccUUID].text()), parent: keep(f[ccParent].text()), sidechain: f[ccSidechain].boolean()}
	l.boundary = f[ccLogicalParent].str() != "" || f[ccSubtype].str() == "compact_boundary"
	if l.boundary {
		l.logical = keep(f[ccLogicalParent].str())
		var seg [3]jval
		f[ccCompactMetadata].get("preservedSegment").fields(seg[:], "headUuid", "anchorUuid", "tailUuid")
		if head, anchor := seg[0].str(), seg[1].str(); head != "" && anchor != "" {
			l.relinkHead, l.relinkAnchor, l.relinkTail = keep(head), keep(anchor), keep(seg[2].str())
		}
	}
	if r.Type == "attachment" {
		typ, b, ok := attachmentBlock(f[ccAttachment])
		bs := []Block{b}
		detachBlocks(bs)
		l.attachType, l.attachment, l.attached = intern(typ), bs[0], ok
	}
	msg := f[ccMessage]
	l.message = (r.Type == "user" || r.Type == "assistant") && msg.isObject()
	var out []Message
	if l.message {
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
		markPinned(ClaudeCode, &m, raw, r.Span.Start)
		l.pinned = m.Pinned
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
	return l, out
}

func (p *ccParser) finish(o *Outline) {
	// side: the conversation read is a subagent's.
	side := p.onlySidechains || p.sidechains && p.anySidechain && !p.all
	thread := func(l *ccLine) bool { return l.sidechain == side || p.onlySidechains }
	wanted := func(l *ccLine) bool { return l.message && (p.all || thread(l)) }
	// (the lines of the thread the conversation ends with; with all, the main one's)
	leafOf := func(l *ccLine) bool { return l.message && thread(l) }
	keepSide := p.all || p.onlySidechains
	relinks := p.relinks(len(p.lines))
	if side && p.subagent != "" && !p.onlySidechains {
		// One subagent of several: the chain whose first line is p.subagent.
		roots := ccRoots(p.lines, p.byUUID, relinks)
		mine := make(map[*ccLine]bool)
		for i := range p.lines {
			if p.lines[roots[i]].uuid == p.subagent {
				mine[&p.lines[i]] = true
			}
		}
		leafOf = func(l *ccLine) bool { return l.message && l.sidechain && mine[l] }
	}
	live, top := ccLive(p.lines, p.byUUID, relinks, p.all, leafOf, wanted)
	p.explain(o, live, top, relinks, wanted, side)
	c := p.assemble(o.Records, live, func(l *ccLine) bool { return keepSide || thread(l) }, wanted)
	if top >= 0 && p.lines[top].boundary {
		// The messages a compaction kept whole (a preserved segment) sit before it in the
		// file and carry the figures of requests made before it, which measure a context
		// that is gone: Claude Code zeroes them when it loads the log.
		var usage []Usage
		for _, u := range c.all {
			if u.line > top {
				usage = addUsage(usage, u.Usage, u.After)
			}
		}
		c.usage = usage
		o.Prior = p.prior(o.Records, top, func(l *ccLine) bool { return keepSide || thread(l) }, leafOf, wanted)
	}
	o.Messages, o.Parts, o.Attachments, o.Usage = c.messages, c.parts, c.attachments, c.usage
	o.Subagent = side && len(c.messages) > 0
	if c.model != "" {
		o.Model = c.model
	}
}

// relinks are the preserved segments of the boundaries before some line (see ccLine):
// the anchor each head hangs off, and the tail that comes after each anchor.
type relinks struct {
	anchor, tail map[string]string
}

// relinks gathers the preserved segments of the boundaries before line end.
func (p *ccParser) relinks(end int) relinks {
	var r relinks
	for i := range end {
		if l := &p.lines[i]; l.relinkHead != "" {
			if r.anchor == nil {
				r.anchor, r.tail = map[string]string{}, map[string]string{}
			}
			r.anchor[l.relinkHead] = l.relinkAnchor
			if l.relinkTail != "" {
				r.tail[l.relinkAnchor] = l.relinkTail
			}
		}
	}
	return r
}

// parentOf is the parent of a line as the session's tree has it: its parentUuid, or the
// anchor a preserved segment's head is relinked to.
func parentOf(l *ccLine, r relinks) string {
	if a, ok := r.anchor[l.uuid]; ok && l.uuid != "" {
		return a
	}
	return l.parent
}

// conversation is a conversation assembled from the lines a mask marks live.
type conversation struct {
	messages    []Message
	parts       [][]Part
	attachments []Attachment
	usage       []Usage
	all         []lineUsage // every figure, with its line
	model       string
}

type lineUsage struct {
	Usage
	line int
}

// assemble makes the conversation of the live lines, in file order: the lines of a turn
// (one message.id) one message, each figure at its message, the attachments at theirs.
func (p *ccParser) assemble(records []Record, live []bool, attached, wanted func(*ccLine) bool) conversation {
	var c conversation
	leaf := -1 // the newest message line of the conversation
	for i := len(p.lines) - 1; i >= 0 && leaf < 0; i-- {
		if live[i] && wanted(&p.lines[i]) {
			leaf = i
		}
	}
	figure := func(u Usage, at, line int) {
		c.usage = addUsage(c.usage, u, at)
		u.After = at
		c.all = append(c.all, lineUsage{u, line})
	}
	turnAt := make(map[string]int)
	for i := range p.lines {
		l := &p.lines[i]
		if l.attached && attached(l) && p.attachedLive(i, leaf, live) {
			c.attachments = append(c.attachments, Attachment{Type: l.attachType, Before: len(c.messages), Record: i, Block: l.attachment})
			continue
		}
		if !live[i] || !wanted(l) {
			continue // system records and the like sit in the chain too
		}
		span := records[i].Span
		if at, ok := turnAt[l.msgID]; ok && l.msgID != "" {
			prev := &c.messages[at]
			prev.Lines = append(prev.Lines, span)
			c.parts[at] = append(c.parts[at], Part{Record: i})
			if l.stampOK {
				prev.Time = l.stamp
			}
			if l.counted {
				figure(l.usage, at, i)
			}
			continue
		}
		m := Message{Role: l.role, Span: span, Lines: []Span{span}, ID: l.msgID, Time: l.stamp, Summary: l.summary, Pinned: l.pinned}
		if m.ID == "" {
			m.ID = l.uuid
		} else {
			turnAt[l.msgID] = len(c.messages)
		}
		c.messages = append(c.messages, m)
		c.parts = append(c.parts, []Part{{Record: i}})
		if l.model != "" {
			c.model = l.model
		}
		if l.counted {
			figure(l.usage, len(c.messages)-1, i)
		}
	}
	return c
}

// prior is the conversation the compaction at line top replaced, up to its newest figure
// (Outline.Prior): the chain from the record the boundary names as its logical parent,
// else from the newest message line before it, read as the live conversation is (its
// compaction's own relink left out). When that conversation records no figure and
// starts at a compaction itself, the one before that is looked at, and so on.
func (p *ccParser) prior(records []Record, top int, attached, leafOf, wanted func(*ccLine) bool) *Prior {
	for top >= 0 && p.lines[top].boundary {
		leaf := -1
		if k, ok := p.byUUID[p.lines[top].logical]; ok && p.lines[top].logical != "" && k < top {
			leaf = k
		}
		for i := top - 1; i >= 0 && leaf < 0; i-- {
			if l := &p.lines[i]; leafOf(l) {
				leaf = i
			}
		}
		if leaf < 0 {
			return nil
		}
		relinks := p.relinks(top)
		live, prevTop := ccChain(p.lines, p.byUUID, relinks, leaf, p.all, wanted)
		for i := top; i < len(live); i++ {
			live[i] = false
		}
		c := p.assemble(records, live, attached, wanted)
		if n := len(c.usage); n > 0 {
			u := c.usage[n-1]
			pr := &Prior{Messages: c.messages[:u.After+1], Parts: c.parts[:u.After+1], Usage: u}
			for _, a := range c.attachments {
				if a.Before <= u.After {
					pr.Attachments = append(pr.Attachments, a)
				}
			}
			return pr
		}
		top = prevTop
	}
	return nil
}

// attachedLive reports whether the attachment record at line i is part of the live
// conversation: on its chain, or hanging off a line that is (Claude Code hangs a hook's
// record off the tool result it follows, which may be a side branch of a parallel call).
// In a log without ids (leaf, the newest message line, has none), every attachment
// without one after the last compaction before the leaf is, as ccLive reads messages.
func (p *ccParser) attachedLive(i, leaf int, live []bool) bool {
	l := &p.lines[i]
	switch {
	case live[i]:
		return true
	case l.parent != "":
		k, ok := p.byUUID[l.parent]
		return ok && (live[k] || k < i && p.lines[k].attached && p.attachedLive(k, leaf, live))
	case l.uuid != "" || leaf < 0 || p.lines[leaf].uuid != "":
		return false
	}
	for k := leaf; k > i; k-- {
		if p.lines[k].boundary {
			return false
		}
	}
	return true
}

// ccLive marks the lines of the live conversation (see ccParser), and returns the top of
// the chain it followed from the newest message of its thread (leafOf): the line whose
// parent is null or names no line (-1 when it followed none).
func ccLive(lines []ccLine, byUUID map[string]int, relinks relinks, all bool, leafOf, wanted func(*ccLine) bool) (live []bool, top int) {
	leaf := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if l := &lines[i]; leafOf(l) {
			leaf = i
			break
		}
	}
	switch {
	case leaf < 0:
		return make([]bool, len(lines)), -1
	case lines[leaf].uuid == "":
		// Records without ids (an old or hand-made log): every message line in file order,
		// from the last compaction on (a compact boundary starts the conversation anew, as
		// it does on a chain: ctx-summarize's own summary of such a log is one).
		live = make([]bool, len(lines))
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
		return live, -1
	}
	// The newest message line may be the anchor of a preserved segment (the summary a
	// compaction just wrote): the conversation then goes on from the segment's tail,
	// which comes before it in the file.
	for seen := 0; seen < len(lines); seen++ {
		tail, ok := relinks.tail[lines[leaf].uuid]
		k, found := byUUID[tail]
		if !ok || !found || k == leaf {
			break
		}
		leaf = k
	}
	return ccChain(lines, byUUID, relinks, leaf, all, wanted)
}

// ccChain marks the chain from line leaf up to its top, widened to whole turns and the
// results of their calls (and, with all, every subagent line), and returns its top.
func ccChain(lines []ccLine, byUUID map[string]int, relinks relinks, leaf int, all bool, wanted func(*ccLine) bool) (live []bool, top int) {
	live = make([]bool, len(lines))
	top = -1
	for i := leaf; !live[i]; {
		live[i] = true
		top = i
		parent := parentOf(&lines[i], relinks)
		p, ok := byUUID[parent]
		if parent == "" || !ok {
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
	if all {
		// Subagent lines are chains of their own; keep them all.
		for i := range lines {
			if lines[i].sidechain && lines[i].message {
				live[i] = true
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
func (p *ccParser) explain(o *Outline, live []bool, top int, relinks relinks, wanted func(*ccLine) bool, side bool) {
	lines := p.lines
	// other names a message line of the other thread: a subagent's, or with sidechains the
	// main conversation's.
	other := func(l *ccLine) Left {
		if l.sidechain {
			return Sidechain
		}
		return MainThread
	}
	if top < 0 {
		for i := range lines {
			if l := &lines[i]; l.message && !live[i] {
				o.Records[i].Left = other(l) // only the other thread's lines, left out by choice
			}
		}
		return
	}
	roots := ccRoots(lines, p.byUUID, relinks)
	liveRoot, compactedRoot := roots[top], -1
	if k, ok := p.byUUID[lines[top].logical]; ok && lines[top].boundary && lines[top].logical != "" {
		compactedRoot = roots[k]
	}
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
		case !wanted(l):
			// (also when live: a subagent's chain goes up through the session's lines it
			// hangs off, which are the other thread's)
			r.Left = other(l)
		case live[i]:
		case roots[i] == liveRoot:
			r.Left = DeadBranch
		case side && !p.onlySidechains && !(lines[top].boundary && i < top && roots[i] == compactedRoot):
			// Another subagent's lines, in a log that holds several beside the session's
			// (not the subagent's own history, which its compaction replaced).
			r.Left = Sidechain
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
	// In line order, a compact boundary starts the conversation anew, as it does on a
	// chain: what comes before the last one is compacted.
	from := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].boundary {
			from = i + 1
			break
		}
	}
	for i := range lines {
		if l := &lines[i]; wanted(l) {
			if i < from {
				live[i], o.Records[i].Left = false, Compacted
				continue
			}
			live[i], o.Records[i].Left = true, Read
		}
	}
	o.Warnings = append(o.Warnings, fmt.Sprintf("%d of the %d message records do not chain to the newest message (parentUuid null or naming no record) and no rewind, compaction or subagent explains it: all %d are read in line order", unchained, messages, messages))
}

// ccRoots gives, for each line, the first line of its tree: the ancestor reached by
// following parentUuid until it is null or names no line (or loops).
func ccRoots(lines []ccLine, byUUID map[string]int, relinks relinks) []int {
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
			parent := parentOf(&lines[j], relinks)
			p, ok := byUUID[parent]
			if parent == "" || !ok {
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
