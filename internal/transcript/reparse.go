package transcript

import (
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// Reparse reads raw, a later version of the document prev was read from, as Parse reads
// it, reading again only the messages whose bytes prev does not hold: the next request of
// a conversation (the one before with new messages after it), or a document a tier edited
// (a few messages changed, dropped or added, everything after them moved). The result is
// the Transcript Parse(raw, o) returns, field for field; prev is left as it was.
//
// Messages are matched by their bytes, not by a common prefix: a message of prev found
// anywhere in raw (an agent re-encodes a message between requests, an edit moves all that
// follows it) is prev's, its spans moved to where it now is. The cost is a walk over the
// message array's elements (JSON) or the document's lines (JSONL), comparing each with the
// message prev had in its place, or looking it up by its bytes among prev's, and reading
// the elements or lines prev does not hold. What is read of the document as a whole is
// done again on the messages as they are (a Claude Code log's tree, a Codex rollout's
// compactions and figures, which message is a conversation's first user message). A JSON
// document's bytes around its message array are compared with prev's and, where they
// differ (the system prompt, the tools, a setting), read again: the document is then
// validated whole, which a request whose wrapper is unchanged is not (BenchmarkReparse).
//
// Where a message's reading depends on more than its own bytes, or where the document
// around the messages changed, Reparse is Parse:
//   - a Cline history: a labelled text answers the call of the assistant message before
//     it (markCline), so a message read the same bytes may read differently in another
//     place;
//   - an input read with --path, or a Responses input that is one string;
//   - a document that now reads as another format, or whose messages are now elsewhere;
//   - prev read with other Options (Name aside), or not by Parse or Reparse (a streamed
//     conversation), or a document prev's format does not read;
//   - any document Parse refuses: the error is Parse's.
//
// prev must be as Parse or Reparse returned it, its messages and blocks unchanged.
func Reparse(prev *Transcript, raw []byte, o Options) (*Transcript, error) {
	if t := reparse(prev, raw, o); t != nil {
		return t, nil
	}
	return Parse(raw, o)
}

// reuse is what Reparse needs of a document beyond its Transcript: the options it was read
// with, and for JSONL what the format's reader read of each record alone, before the
// document as a whole decided which of them make up the conversation.
type reuse struct {
	opts Options
	// carried are the messages each record carries, as its line alone reads (Claude Code
	// pins not yet settled).
	carried [][]Message
	cc      []ccLine   // Claude Code: each record as ccParser keeps it
	codex   []codexRec // Codex: each record as codexParser plays it
}

// remember keeps with a document Parse read the options it was read with.
func remember(t *Transcript, o Options) {
	if t.memo == nil {
		t.memo = &reuse{}
	}
	t.memo.opts = optionsKey(o)
}

// optionsKey is the options that bear on reading (Name and Checked do not).
func optionsKey(o Options) Options {
	o.Name, o.Checked = "", false
	return o
}

// reparse is Reparse where reuse is safe and raw reads without error; nil otherwise.
func reparse(prev *Transcript, raw []byte, o Options) (t *Transcript) {
	if prev == nil || prev.memo == nil || prev.Base != 0 || prev.memo.opts != optionsKey(o) {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(dupKey); !ok {
				panic(r)
			}
			t = nil // a refusal: Parse words it
		}
	}()
	doc := unsafe.String(unsafe.SliceData(raw), len(raw))
	// What doc shares with prev's document has no NUL byte: Parse refuses one.
	same := CommonPrefix(prev.Doc, doc)
	if strings.IndexByte(doc[same:], 0) >= 0 {
		return nil
	}
	switch prev.Format {
	case Anthropic, OpenAI, Responses:
		t = reparseJSON(prev, doc, o)
	case ClaudeCode, Codex:
		t = reparseJSONL(prev, doc, same, o)
	}
	if t != nil {
		remember(t, o)
	}
	return t
}

// element is one element of a message array: its span, and the index among prev's
// elements of the one with the same bytes (-1 for none).
type element struct{ start, end, prev int }

// reparseJSON is Reparse of a JSON document: its message array's elements are matched
// with prev's. The bytes around the array are prev's (the document is then valid when its
// new elements are, and its wrapper reads as prev's did), or they are read again.
func reparseJSON(prev *Transcript, doc string, o Options) *Transcript {
	old := prev.Doc
	at := prev.Array.Start
	if o.Path != "" || prev.Array.IsZero() || old[at] != '[' {
		return nil
	}
	h := 0 // header messages (a system prompt, instructions) come first
	for h < len(prev.Messages) && prev.Messages[h].Header {
		h++
	}
	prevMsgs := prev.Messages[h:]
	t := &Transcript{Format: prev.Format, Doc: doc, ArrayPath: prev.ArrayPath}
	var headers []Message
	elems, end, ok := []element(nil), 0, false
	if len(doc) > at && doc[:at] == old[:at] && doc[at] == '[' {
		elems, end, ok = walkElements(doc, at, old, prevMsgs)
	}
	prevEnd := strings.LastIndexByte(old[:prev.Array.End], ']') + 1
	bare := prev.ArrayPath == ""
	switch {
	case ok && bare && firstNonSpace(doc[end:]) < 0:
		// The root is the array, white space after it included.
		t.Array = Span{at, len(doc)}
	case ok && !bare && doc[end:] == old[prevEnd:]:
		// Everything outside the array is prev's, the part after it moved by delta: a
		// document valid but for its array, whose elements are valid (prev's, or checked)
		// and correctly separated, is valid, and its wrapper reads as prev's did.
		delta := end - prevEnd
		wrapper := func(s Span) *shifter {
			if s.Start >= prevEnd {
				return &shifter{old: old, new: doc, from: s, d: delta}
			}
			return &shifter{old: old, new: doc, from: s}
		}
		t.Array = Span{at, end}
		if !prev.Tools.IsZero() {
			t.Tools = wrapper(prev.Tools).span(prev.Tools)
		}
		if prev.Model != "" {
			t.Model = (&shifter{old: old, new: doc}).wrapperStr(prev.Model, at, prevEnd, delta)
		}
		for i := range h {
			headers = append(headers, wrapper(prev.Messages[i].Span).message(prev.Messages[i]))
		}
	default:
		// The wrapper changed (the system prompt, the tools, a setting): it is read
		// again, as Parse reads it, and the array's elements matched where it now is.
		if elems, end, headers, ok = rereadWrapper(t, doc, o, old, prevMsgs); !ok {
			return nil
		}
		if o.Format == "" {
			return elementsOf(prev, h, t, headers, elems)
		}
	}
	if o.Format == "" && !sameHead(elems, len(prevMsgs)) {
		// The format was told by the first 200 messages, which are not prev's.
		first := firstNonSpace(doc)
		root := jval{doc[first:], first}
		rf := readRoot(root)
		if detectJSON(root, &rf, jval{doc[at:end], at}) != t.Format {
			return nil
		}
	}
	return elementsOf(prev, h, t, headers, elems)
}

// rereadWrapper reads a JSON document's wrapper as Parse does (t's format is prev's, and
// the document must read as one of it), and finds and matches the message array's elements
// (prevMsgs, of prev's document old). ok is false where Parse would read it otherwise.
func rereadWrapper(t *Transcript, doc string, o Options, old string, prevMsgs []Message) (elems []element, end int, headers []Message, ok bool) {
	if !Valid(doc) {
		return nil, 0, nil, false
	}
	first := firstNonSpace(doc)
	root := jval{doc[first:], first}
	if o.Format == "" && root.isObject() && recordFormat(root) != "" {
		return nil, 0, nil, false // a record of a JSONL log
	}
	rf := readRoot(root)
	arr, path, err := locateArray(doc, root, &rf, "")
	if err != nil || path != t.ArrayPath || !arr.isArray() {
		return nil, 0, nil, false
	}
	if o.Format == "" && detectJSON(root, &rf, arr) != t.Format {
		return nil, 0, nil, false
	}
	if elems, end, ok = walkElements(doc, arr.at, old, prevMsgs); !ok || end != arr.at+len(arr.raw) && path != "" {
		return nil, 0, nil, false
	}
	t.Array = arr.span()
	if root.isObject() {
		if rf.tools.isArray() {
			t.Tools = rf.tools.span()
		}
		t.Model = rf.model.str()
	}
	switch t.Format {
	case Anthropic:
		if sys := rf.system; sys.exists() && !sys.isNull() {
			headers = append(headers, headerMessage(sys))
		}
	case Responses:
		if ins := rf.instructions; ins.isString() {
			headers = append(headers, headerMessage(ins))
		}
	}
	return elems, end, headers, true
}

// elementsOf fills in t's messages: its header messages, then one message an element, the
// elements prev holds (after its h headers) taken from prev, the others read; nil where an
// element is not a message (Parse then says why).
func elementsOf(prev *Transcript, h int, t *Transcript, headers []Message, elems []element) *Transcript {
	doc, old, f := t.Doc, prev.Doc, t.Format
	hn := len(headers)
	if n := hn + len(elems); n > 0 {
		t.Messages = make([]Message, n)
	}
	copy(t.Messages, headers)
	read := anthropicMessage
	switch f {
	case OpenAI:
		read = openaiMessage
	case Responses:
		read = responsesElement
	}
	_, firstOnly := pinsOf(f)
	fresh := func(k int) bool {
		e := elems[k]
		v := jval{doc[e.start:e.end], e.start}
		m, content := read(v)
		if checkElement(f, k, v, &m, content) != nil {
			return false
		}
		t.Messages[hn+k] = m
		return true
	}
	// New elements are read first: which message is the first user message (whose
	// reminders alone are pinned, for formats that pin only there) needs every role.
	for k, e := range elems {
		if e.prev < 0 && !fresh(k) {
			return nil
		}
	}
	firstUser := func(from, n int, role func(i int) string) int {
		for i := from; i < n; i++ {
			if role(i) == "user" {
				return i
			}
		}
		return -1
	}
	pf := firstUser(h, len(prev.Messages), func(i int) string { return prev.Messages[i].Role })
	nf := firstUser(hn, len(t.Messages), func(i int) string {
		if e := elems[i-hn]; e.prev >= 0 {
			return prev.Messages[h+e.prev].Role
		}
		return t.Messages[i].Role
	})
	// One shifter, its blocks carved from one allocation for all the messages reused.
	sh := shifter{old: old, new: doc}
	n := 0
	for _, e := range elems {
		if e.prev >= 0 {
			n += len(prev.Messages[h+e.prev].Blocks)
		}
	}
	sh.slab = make([]Block, n)
	for k, e := range elems {
		i := hn + k
		if e.prev >= 0 {
			j := h + e.prev
			if !firstOnly || (j == pf) == (i == nf) {
				pm := &prev.Messages[j]
				sh.from, sh.d = pm.Span, e.start-pm.Span.Start
				t.Messages[i] = sh.message(*pm)
				continue
			}
			// The message is the first user message here and was not in prev, or the
			// other way round: its pins are read anew.
			if !fresh(k) {
				return nil
			}
		}
		m := &t.Messages[i]
		if !firstOnly || i == nf {
			markPinned(f, m, doc, 0)
		}
		m.Summary = opensWith(doc, 0, m, SummaryTag) || opensWith(doc, 0, m, TrimNote)
	}
	return t
}

// sameHead reports whether the elements begin with prev's first elements (prev had n), as
// many as format detection reads: it then tells the format it told for prev.
func sameHead(elems []element, n int) bool {
	const head = 200 // detectJSON's
	if min(head, len(elems)) != min(head, n) {
		return false
	}
	for k := range min(head, len(elems)) {
		if elems[k].prev != k {
			return false
		}
	}
	return true
}

// walkElements finds the elements of the array that opens at doc[at], and for each the
// element of prev (prevMsgs, one message an element, spans into old) with the same bytes:
// first the one after the element matched last, then the one after that, else any. An
// element prev does not hold is checked to be one valid JSON value. It returns where the
// array ends (past its "]"), and false where the array is not one (Parse then says why).
func walkElements(doc string, at int, old string, prevMsgs []Message) ([]element, int, bool) {
	out := make([]element, 0, len(prevMsgs)+8)
	var byText map[string]int
	next := 0
	i := skipSpace(doc, at+1)
	if i < len(doc) && doc[i] == ']' {
		return out, i + 1, true
	}
	for i < len(doc) {
		end, j := -1, -1
		// The element after the last matched, or the one after it (one element changed).
		for k := next; k < min(next+2, len(prevMsgs)) && j < 0; k++ {
			s := prevMsgs[k].Span
			if want := old[s.Start:s.End]; strings.HasPrefix(doc[i:], want) && Delimits(doc, i+len(want)) {
				end, j = i+len(want), k
			}
		}
		if j < 0 {
			end = valueEnd(doc, i)
			text := doc[i:end]
			// Out of order (only while more than one of prev's elements is left: an
			// element after them is new, and looking it up would cost hashing all of
			// prev's).
			if byText == nil && next+1 < len(prevMsgs) {
				byText = firstIndex(len(prevMsgs), func(k int) string { s := prevMsgs[k].Span; return old[s.Start:s.End] })
			}
			if k, ok := byText[text]; ok {
				j = k
			} else if !Valid(text) {
				return nil, 0, false
			}
		}
		out = append(out, element{i, end, j})
		if j >= 0 {
			next = j + 1
		}
		i = skipSpace(doc, end)
		if i >= len(doc) {
			return nil, 0, false
		}
		switch doc[i] {
		case ']':
			return out, i + 1, true
		case ',':
			if i = skipSpace(doc, i+1); i >= len(doc) || doc[i] == ']' {
				return nil, 0, false
			}
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// Delimits reports whether a JSON value in an array may end just before doc[i]: white
// space, a comma or the array's end follows it.
func Delimits[T ~string | ~[]byte](doc T, i int) bool {
	if i >= len(doc) {
		return false
	}
	switch doc[i] {
	case ',', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// reparseJSONL is Reparse of a Claude Code log or a Codex rollout: each line prev holds is
// taken as prev's reader read it; the document's reading (the session's tree, the
// rollout's compactions and figures) is done again over all of them.
func reparseJSONL(prev *Transcript, doc string, same int, o Options) *Transcript {
	m := prev.memo
	n := len(prev.Records)
	if len(m.carried) != n || (prev.Format == ClaudeCode && len(m.cc) != n) || (prev.Format == Codex && len(m.codex) != n) {
		return nil
	}
	old := prev.Doc
	lines, kept := splitRecordsAfter(prev, doc, same)
	if len(lines) < 2 {
		return nil // one value, or none: Parse reads it as a JSON document or an empty log
	}
	from := make([]int, len(lines))
	var byText map[string]int
	next := 0
	for i := range lines {
		l := &lines[i]
		text := doc[l.Span.Start:l.Span.End]
		j := -1
		if i < kept {
			j = i // prev's line, where prev had it: the first one the walk below would try
		}
		for k := next; k < min(next+2, n) && j < 0; k++ { // (as walkElements matches)
			if s := prev.Records[k].Span; old[s.Start:s.End] == text {
				j = k
			}
		}
		if j < 0 && next+1 < n {
			if byText == nil {
				byText = firstIndex(n, func(k int) string { s := prev.Records[k].Span; return old[s.Start:s.End] })
			}
			if k, ok := byText[text]; ok {
				j = k
			}
		}
		from[i] = j
		if j < 0 {
			if e, _ := checkLine(text, l.Span.Start, l.Line); e != nil {
				return nil
			}
			l.Type = recordValue(text, 0).get("type").str()
			continue
		}
		next = j + 1
		sh := shifter{old: old, new: doc, from: prev.Records[j].Span, d: l.Span.Start - prev.Records[j].Span.Start}
		l.Type = sh.str(prev.Records[j].Type)
	}
	f := o.Format
	if found := detectJSONL(doc, lines); f == "" {
		f = found
	} else if found != "" && found != f {
		return nil
	}
	if f != prev.Format {
		return nil
	}
	p := newRecordParser(f, o)
	switch p := p.(type) {
	case *ccParser:
		p.lines = make([]ccLine, 0, len(lines))
		p.byUUID = make(map[string]int, len(lines)) // (grown line by line, it was rehashed)
	case *codexParser:
		p.keep, p.recs = true, make([]codexRec, 0, len(lines))
	}
	carried := make([][]Message, len(lines))
	// One shifter, the blocks and lines of the messages reused carved from one
	// allocation each.
	sh := shifter{old: old, new: doc}
	nb, nl := 0, 0
	for _, j := range from {
		if j >= 0 {
			for _, cm := range m.carried[j] {
				nb, nl = nb+len(cm.Blocks), nl+len(cm.Lines)
			}
		}
	}
	sh.slab, sh.lines = make([]Block, nb), make([]Span, nl)
	for i := range lines {
		l := &lines[i]
		j := from[i]
		if j < 0 {
			carried[i] = p.record(i, l, doc[l.Span.Start:l.Span.End])
			continue
		}
		sh.from, sh.d = prev.Records[j].Span, l.Span.Start-prev.Records[j].Span.Start
		carried[i] = sh.messages(m.carried[j])
		switch p := p.(type) {
		case *ccParser:
			cl := m.cc[j]
			cl.attachment = sh.block(cl.attachment)
			p.add(i, l, cl)
		case *codexParser:
			rec := m.codex[j]
			p.apply(i, &rec, carried[i])
			p.recs = append(p.recs, rec)
		}
	}
	t := resolve(p, f, lines).Conversation(carried)
	t.Doc = doc
	t.memo = linesMemo(p, carried)
	return t
}

// splitRecordsAfter is splitRecords(doc) for doc, a later version of prev's document
// whose first same bytes are prev's (commonPrefix): the lines of that prefix, each ended
// by its line break there, are prev's records (the first kept of them), and only the rest
// of doc is split.
func splitRecordsAfter(prev *Transcript, doc string, same int) (lines []Record, kept int) {
	old := prev.Doc
	// prev's records whose line break lies in the shared prefix read the same in doc
	kept = sort.Search(len(prev.Records), func(k int) bool {
		r := prev.Records[k]
		return r.Next > same || r.Next == 0 || old[r.Next-1] != '\n'
	})
	if kept == 0 {
		return splitRecords(doc), 0
	}
	last := prev.Records[kept-1]
	rest := splitRecords(doc[last.Next:])
	lines = make([]Record, kept, kept+len(rest))
	for k, r := range prev.Records[:kept] {
		lines[k] = Record{Span: r.Span, Line: r.Line, Next: r.Next, Message: -1}
	}
	for _, r := range rest {
		r.Span = Span{r.Span.Start + last.Next, r.Span.End + last.Next}
		r.Next += last.Next
		r.Line += last.Line
		lines = append(lines, r)
	}
	return lines, kept
}

// firstIndex maps each of the n texts key gives to the first k that gives it: how a text
// of the new document is looked up among prev's when it is not where prev had it.
func firstIndex(n int, key func(k int) string) map[string]int {
	m := make(map[string]int, n)
	for k := n - 1; k >= 0; k-- {
		m[key(k)] = k
	}
	return m
}

// CommonPrefix is the length of the longest common prefix of a and b: found at once when b
// is a's bytes with more appended in place (a request that extends the one before in the
// same memory, or a stage that changed nothing handing on its input), else by comparing
// the two in blocks (a byte loop over a 10 MB request was a third of a replay).
func CommonPrefix(a, b string) int {
	n := min(len(a), len(b))
	if n > 0 && unsafe.StringData(a) == unsafe.StringData(b) {
		return n // the same bytes
	}
	// Block by block (string comparison is the runtime's vectorized compare), then byte by
	// byte in the block that differs.
	const block = 4096
	i := 0
	for ; i+block <= n && a[i:i+block] == b[i:i+block]; i += block {
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

// shifter copies what was read of the bytes at span from of document old for the same
// bytes d further on in document new: spans moved by d, strings that are slices of those
// bytes made slices of new's (so that nothing read from new keeps old in memory).
type shifter struct {
	old, new string
	from     Span
	d        int
	// slab and lines, when long enough, are where a message's blocks and lines are
	// copied to: one allocation for many messages.
	slab  []Block
	lines []Span
}

func (s *shifter) span(x Span) Span {
	if x.IsZero() {
		return x
	}
	return Span{x.Start + s.d, x.End + s.d}
}

// str is x in new, when it is a slice of old's bytes at from; a string of its own (decoded,
// interned, copied) is kept as it is.
func (s *shifter) str(x string) string {
	off, in := s.offset(x)
	switch {
	case len(x) == 0:
		return ""
	case !in:
		return x
	case off < s.from.Start || off+len(x) > s.from.End:
		return strings.Clone(x) // (old's, but not of these bytes: nothing reads so)
	}
	return s.new[off+s.d : off+s.d+len(x)]
}

// offset is where x lies in old, if it is a slice of it.
func (s *shifter) offset(x string) (int, bool) {
	if len(x) == 0 || len(s.old) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(x)))
	base := uintptr(unsafe.Pointer(unsafe.StringData(s.old)))
	if p < base || p-base >= uintptr(len(s.old)) {
		return 0, false
	}
	return int(p - base), true
}

// wrapperStr is str for a string of a JSON document's wrapper: before the message array
// (which ended at prevEnd in old and starts at at) it stays where it was, after it it
// moves by delta.
func (s *shifter) wrapperStr(x string, at, prevEnd, delta int) string {
	off, in := s.offset(x)
	switch {
	case !in:
		return x
	case off+len(x) <= at:
		return s.new[off : off+len(x)]
	case off >= prevEnd:
		return s.new[off+delta : off+delta+len(x)]
	}
	return strings.Clone(x)
}

func (s *shifter) messages(ms []Message) []Message { return mapped(ms, s.message) }

func (s *shifter) message(m Message) Message {
	m.Role, m.ID, m.Name = s.str(m.Role), s.str(m.ID), s.str(m.Name)
	m.Span = s.span(m.Span)
	if n := len(m.Lines); m.Lines != nil && n <= len(s.lines) {
		ls := s.lines[:n:n]
		s.lines = s.lines[n:]
		for i, l := range m.Lines {
			ls[i] = s.span(l)
		}
		m.Lines = ls
	} else {
		m.Lines = mapped(m.Lines, s.span)
	}
	if n := len(m.Blocks); m.Blocks != nil && n <= len(s.slab) {
		bs := s.slab[:n:n]
		s.slab = s.slab[n:]
		for i := range m.Blocks {
			bs[i] = s.block(m.Blocks[i])
		}
		m.Blocks = bs
		return m
	}
	m.Blocks = mapped(m.Blocks, s.block)
	return m
}

func (s *shifter) block(b Block) Block {
	b.Type, b.ToolID, b.ToolName = s.str(b.Type), s.str(b.ToolID), s.str(b.ToolName)
	b.Span, b.Body, b.Lead = s.span(b.Span), s.span(b.Body), s.span(b.Lead)
	b.ToolIDs, b.Parts = mapped(b.ToolIDs, s.str), mapped(b.Parts, s.block)
	if b.Image != nil {
		img := *b.Image
		img.MediaType, img.URL, img.Detail = s.str(img.MediaType), s.str(img.URL), s.str(img.Detail)
		img.Data = s.span(img.Data)
		b.Image = &img
	}
	return b
}

// mapped is a new slice of f of each of xs; nil for nil (a reader's nil and empty differ).
func mapped[T any](xs []T, f func(T) T) []T {
	if xs == nil {
		return nil
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// Twins pairs the messages of t with those of prev, an earlier version of the document,
// that are the same message: the same bytes (MessageBytes) read into the same blocks, so
// that what was worked out of prev's (a token count) holds for t's. twins[i] is the index
// in prev.Messages of message i's twin, or -1. The message after the last twin found is
// tried first, then the one after it, then any with the same bytes.
//
// Blocks are compared for what a message's place in the document can change of them (a
// Cline text read as the result of the call before it): kinds, types, tools and the
// lengths of payloads; not Pinned, which marks standing context in one place and not in
// another and does not change what the model reads.
func Twins(prev, t *Transcript) []int {
	twins := make([]int, len(t.Messages))
	// Out of order, a message is looked up by its span (its first line for JSONL), then
	// compared whole.
	var bySpan map[string]int
	next := 0
	for i := range t.Messages {
		j := -1
		for k := next; k < min(next+2, len(prev.Messages)) && j < 0; k++ { // (as Reparse matches)
			if sameBytes(prev, k, t, i) {
				j = k
			}
		}
		if j < 0 && next+1 < len(prev.Messages) {
			if bySpan == nil {
				bySpan = firstIndex(len(prev.Messages), func(k int) string { return prev.Slice(prev.Messages[k].Span) })
			}
			if k, ok := bySpan[t.Slice(t.Messages[i].Span)]; ok && sameBytes(prev, k, t, i) {
				j = k
			}
		}
		if j >= 0 && !sameBlocks(prev.Messages[j].Blocks, t.Messages[i].Blocks) {
			j = -1
		}
		if j >= 0 && prev.Messages[j].Role == t.Messages[i].Role && prev.Messages[j].Header == t.Messages[i].Header {
			next = j + 1
		} else {
			j = -1
		}
		twins[i] = j
	}
	return twins
}

// sameBytes reports whether message j of a and message i of b are written the same
// (MessageBytes), without joining their lines.
func sameBytes(a *Transcript, j int, b *Transcript, i int) bool {
	am, bm := &a.Messages[j], &b.Messages[i]
	if len(am.Lines) <= 1 || len(bm.Lines) <= 1 {
		return len(am.Lines) <= 1 && len(bm.Lines) <= 1 && a.Slice(am.Span) == b.Slice(bm.Span)
	}
	if len(am.Lines) != len(bm.Lines) {
		return false
	}
	for k := range am.Lines {
		if a.Slice(am.Lines[k]) != b.Slice(bm.Lines[k]) {
			return false
		}
	}
	return true
}

// SameMessageBytes reports whether message j of a and message i of b are written the same:
// a.MessageBytes(j) == b.MessageBytes(i), without joining the lines of either where they
// are the same line for line (a message of a request compared with its twin in the request
// before, whose bytes are often the same memory).
func SameMessageBytes(a *Transcript, j int, b *Transcript, i int) bool {
	am, bm := &a.Messages[j], &b.Messages[i]
	if len(am.Lines) <= 1 && len(bm.Lines) <= 1 {
		return a.Slice(am.Span) == b.Slice(bm.Span)
	}
	return sameBytes(a, j, b, i) || a.MessageBytes(j) == b.MessageBytes(i)
}

// sameBlocks reports whether two lists of blocks of messages with the same bytes were
// read the same way (see Twins).
func sameBlocks(a, b []Block) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		x, y := &a[k], &b[k]
		if x.Kind != y.Kind || x.Type != y.Type || x.ToolID != y.ToolID || x.ToolName != y.ToolName ||
			x.IsError != y.IsError || x.BodyJSON != y.BodyJSON || x.Encrypted != y.Encrypted ||
			x.Signature != y.Signature || x.Head != y.Head || x.Agent != y.Agent || x.User != y.User ||
			x.Span.Len() != y.Span.Len() || x.Body.Len() != y.Body.Len() || x.Lead.Len() != y.Lead.Len() ||
			!slices.Equal(x.ToolIDs, y.ToolIDs) || (x.Image == nil) != (y.Image == nil) || !sameBlocks(x.Parts, y.Parts) {
			return false
		}
		if x.Image != nil && (x.Image.MediaType != y.Image.MediaType || x.Image.URL != y.Image.URL ||
			x.Image.Detail != y.Image.Detail || x.Image.Data.Len() != y.Image.Data.Len()) {
			return false
		}
	}
	return true
}
