package summarize

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/toolvocab"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// Restoring working state: a summary says which files were read and changed, but an agent
// that carries on edits them, and an edit needs the text it replaces. As Claude Code
// re-reads the files it read last after compacting, ctx-summarize puts the newest content
// of the files most recently read or edited in the summarized part right after the
// summary, each in a <ctxkit-restored path="..."> block. The content comes from the
// transcript itself, never the disk (a tier reads no file): a read's result, with the
// later edits applied where the edit tool records the old and new text.

// RestoredTag opens a restored file's block.
const RestoredTag = "<ctxkit-restored"

// restoredEnd closes it.
const restoredEnd = "</ctxkit-restored>"

// maxFile caps the content kept of one file while reading the transcript: a file bigger
// than this is restored cut anyway.
const maxFile = 256 << 10

// fileState is what the transcript tells of one file's content.
type fileState struct {
	content string
	known   bool // content is the whole file as of the last read, write or edit
	partial bool // the read showed part of the file (an offset or a limit)
	order   int  // when it was last read or changed, for "most recent"
	focus   int  // where in content the last edit wrote: what a cut keeps
	changed bool // the summarized part changed it
}

// edit is what an edit call would do to a file's content, applied when its result says
// it succeeded.
type edit struct {
	path    string
	write   *string   // the whole new content (Write, create)
	replace []replace // old and new text, in order (Edit, MultiEdit, str_replace)
	unknown bool      // an edit whose effect the call does not record (a patch): content unknown after it
}

type replace struct {
	old, new string
	all      bool
}

// editOf reads the change an edit call records. ok is false for a call that is not an
// edit of one file.
func editOf(tool, args string) (edit, bool) {
	lower := strings.ToLower(tool)
	e := edit{}
	for _, key := range toolvocab.PathKeys {
		if p := gjson.Get(args, key).String(); p != "" {
			e.path = strings.Clone(p)
			break
		}
	}
	if e.path == "" {
		return e, false
	}
	text := func(keys ...string) *string {
		for _, k := range keys {
			if v := gjson.Get(args, k); v.Exists() && v.Type == gjson.String {
				s := strings.Clone(v.String())
				return &s
			}
		}
		return nil
	}
	switch lower {
	case "write", "write_file", "write_to_file", "create_file":
		e.write = text("content", "file_text", "contents")
	case "edit", "edit_file", "search_replace":
		if old := text("old_string", "old_str"); old != nil {
			e.replace = []replace{{*old, stringOr(text("new_string", "new_str")), gjson.Get(args, "replace_all").Bool()}}
		}
	case "multiedit":
		gjson.Get(args, "edits").ForEach(func(_, r gjson.Result) bool {
			e.replace = append(e.replace, replace{strings.Clone(r.Get("old_string").String()), strings.Clone(r.Get("new_string").String()), r.Get("replace_all").Bool()})
			return true
		})
	case "str_replace_editor", "str_replace_based_edit_tool":
		switch gjson.Get(args, "command").String() {
		case "create":
			e.write = text("file_text")
		case "str_replace":
			e.replace = []replace{{strings.Clone(gjson.Get(args, "old_str").String()), strings.Clone(gjson.Get(args, "new_str").String()), false}}
		case toolvocab.EditorView:
			return e, false
		}
	case "replace_in_file":
		e.replace = searchReplace(gjson.Get(args, "diff").String())
	}
	e.unknown = e.write == nil && len(e.replace) == 0
	return e, true
}

func stringOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var searchBlock = regexp.MustCompile(`(?s)<{3,} SEARCH\n(.*?)\n?={3,}\n(.*?)\n?>{3,} REPLACE`)

// searchReplace reads Cline's SEARCH/REPLACE blocks.
func searchReplace(diff string) []replace {
	var out []replace
	for _, m := range searchBlock.FindAllStringSubmatch(diff, -1) {
		out = append(out, replace{strings.Clone(m[1]), strings.Clone(m[2]), false})
	}
	return out
}

// files tracks the content the transcript shows of each file.
type files struct {
	byPath map[string]*fileState
	clock  int
}

// maxTracked bounds the files whose content is followed, so that a long session read
// record by record holds a few megabytes at most: the least recently touched goes first
// (only the most recent few are ever restored).
const maxTracked = 64

func (fs *files) state(p string) *fileState {
	if fs.byPath == nil {
		fs.byPath = map[string]*fileState{}
	}
	p = cleanPath(p)
	s := fs.byPath[p]
	if s == nil {
		if len(fs.byPath) >= maxTracked {
			oldest := ""
			for q, st := range fs.byPath {
				if oldest == "" || st.order < fs.byPath[oldest].order {
					oldest = q
				}
			}
			delete(fs.byPath, oldest)
		}
		s = &fileState{}
		fs.byPath[p] = s
	}
	fs.clock++
	s.order = fs.clock
	return s
}

// read records what a successful read showed.
func (fs *files) read(p, shown string, partial bool) {
	s := fs.state(p)
	s.content, s.known, s.partial, s.focus = readContent(shown), true, partial, 0
	if len(s.content) > maxFile {
		s.content, s.partial = strings.ToValidUTF8(s.content[:maxFile], ""), true
	}
}

// took records what an answered call showed or changed of a file, when it succeeded.
func (fs *files) took(p *pending) {
	if p.end.isError || p.end.refused {
		return
	}
	switch {
	case p.shown != "":
		fs.read(p.read, p.shown, p.partial)
	default:
		for i := range p.edits {
			fs.apply(&p.edits[i])
		}
	}
}

// apply records a successful edit.
func (fs *files) apply(e *edit) {
	s := fs.state(e.path)
	s.changed = true
	switch {
	case e.write != nil:
		s.content, s.known, s.partial, s.focus = *e.write, true, false, 0
		if len(s.content) > maxFile {
			s.content, s.partial = strings.ToValidUTF8(s.content[:maxFile], ""), true
		}
	case e.unknown || !s.known:
		s.known = false
	default:
		for _, r := range e.replace {
			at := strings.Index(s.content, r.old)
			if r.old == "" || at < 0 {
				s.known = false // the content shown is not the file the edit saw
				return
			}
			s.focus = at
			if r.all {
				s.content = strings.ReplaceAll(s.content, r.old, r.new)
			} else {
				s.content = strings.Replace(s.content, r.old, r.new, 1)
			}
		}
	}
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return p
	}
	return path.Clean(p)
}

var (
	// Claude Code numbers a read's lines "     1→text", cat -n (str_replace_editor's
	// view) "     1\ttext": the file is the text after the number.
	numbered = regexp.MustCompile(`^\s*\d+(?:→|\t)`)
)

// readContent is a file's text from what a read showed: without line numbers and without
// a reminder the agent appended.
func readContent(shown string) string {
	// The regular expressions cost a quarter of ctx-summarize on 10 MB of Responses
	// (every result read, megabytes of text), and the reminder's a fifth on 10 MB of
	// Claude Code, where most reads end in one: both are read by hand (stripReminder and
	// numberedEnd, held to the expressions by their tests).
	shown = stripReminder(shown)
	lines := strings.Split(shown, "\n")
	numberedLines := 0
	for _, l := range lines {
		if numberedEnd(l) >= 0 {
			numberedLines++
		}
	}
	if numberedLines == 0 || numberedLines < len(lines)-1 {
		return shown
	}
	for i, l := range lines {
		if end := numberedEnd(l); end >= 0 {
			lines[i] = l[end:]
		}
	}
	return strings.TrimSuffix(strings.Join(lines, "\n"), "\n")
}

// stripReminder is shown without a system reminder that ends it: what
// `(?s)\n*<system-reminder>.*?</system-reminder>\s*$` replaced with nothing leaves (the
// expression, in the tests, holds it to that). The match, when there is one, starts at the
// first opening tag (the newlines before it included) and runs to the end, so it is found
// from the end and the first tag, not by trying every place in megabytes of text.
func stripReminder(shown string) string {
	const open, close = "<system-reminder>", "</system-reminder>"
	body := strings.TrimRight(shown, "\t\n\f\r ") // (\s)
	if !strings.HasSuffix(body, close) {
		return shown
	}
	k := strings.Index(shown, open)
	if k < 0 || k+len(open) > len(body)-len(close) {
		return shown
	}
	for k > 0 && shown[k-1] == '\n' {
		k--
	}
	return shown[:k]
}

// numberedEnd is where the match of numbered at the start of l ends, -1 when there is
// none: spaces (\s: tab, newline, form feed, carriage return, space), digits, then an
// arrow or a tab.
func numberedEnd(l string) int {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\n' || l[i] == '\f' || l[i] == '\r') {
		i++
	}
	digits := i
	for i < len(l) && '0' <= l[i] && l[i] <= '9' {
		i++
	}
	switch {
	case i == digits:
		return -1
	case strings.HasPrefix(l[i:], "\t"):
		return i + 1
	case strings.HasPrefix(l[i:], "→"):
		return i + len("→")
	}
	return -1
}

// Restored is a file's content put back after a summary.
type Restored struct {
	Path    string
	Content string
	Partial bool // only part of the file was shown, or it was cut to fit
	// Lines is the range of lines Content holds when it was cut to fit ("" when whole
	// or unknown).
	Lines   string
	order   int
	focus   int
	changed bool
}

// Restored lists the files whose content the summarized part shows: those it changed, then
// those it only read, the most recent first.
func (x *Extractor) Restored() []Restored {
	var out []Restored
	for p, s := range x.files.byPath {
		if s.known && strings.TrimSpace(s.content) != "" {
			out = append(out, Restored{Path: p, Content: s.content, Partial: s.partial, order: s.order, focus: s.focus, changed: s.changed})
		}
	}
	// The files the agent was changing come first: it is likeliest to change them again.
	sort.Slice(out, func(i, j int) bool {
		if out[i].changed != out[j].changed {
			return out[i].changed
		}
		return out[i].order > out[j].order
	})
	return out
}

// Carry feeds the Extractor the files an earlier summary restored, as if read where it was.
func (x *Extractor) Carry(rs []Restored) {
	for _, r := range rs {
		x.files.read(r.Path, r.Content, r.Partial)
	}
}

// RestoreOptions bound what is restored.
type RestoreOptions struct {
	Files      int // at most this many files
	FileTokens int // each at most this many tokens (cut beyond)
	Tokens     int // and all of them at most this many
	Counter    tokens.Counter
}

// ChooseRestored picks the files to restore: the most recent first, leaving out those the
// kept part reads again (it holds a newer content) and those that do not fit.
func ChooseRestored(rs []Restored, newer map[string]bool, o RestoreOptions) []Restored {
	var out []Restored
	left := o.Tokens
	for _, r := range rs {
		if len(out) >= o.Files || left <= 0 {
			break
		}
		if newer[cleanPath(r.Path)] || strings.Contains(r.Content, restoredEnd) {
			// A content holding the closing tag (a page about ctxkit itself) would not
			// read back whole on the next run.
			continue
		}
		n := o.Counter.Count(r.Content)
		if room := min(o.FileTokens, left); n > room {
			if room < minCut {
				continue // a few lines of a big file are not worth their tokens
			}
			r = cutAround(r, len(r.Content)*room/n)
			n = o.Counter.Count(r.Content)
		}
		if n > left {
			continue
		}
		left -= n
		out = append(out, r)
	}
	return out
}

// minCut is the fewest tokens a file cut to fit keeps.
const minCut = 300

// cutAround keeps the whole lines of a file's content that fit in n bytes around where it
// was last edited (a third of them before it), the part an agent carrying on is likeliest
// to edit again, and names the lines kept. A content cut already (Fit cuts again what
// ChooseRestored cut) is cut within its lines, and named by the file's.
func cutAround(r Restored, n int) Restored {
	text := r.Content
	if n >= len(text) {
		return r
	}
	before := 0 // the file's lines before the content, when it was cut already
	if from, _, ok := strings.Cut(r.Lines, "-"); ok {
		if l, err := strconv.Atoi(from); err == nil {
			before = l - 1
		}
	}
	start := max(0, min(r.focus-n/3, len(text)-n))
	if i := strings.LastIndexByte(text[:start], '\n'); i >= 0 {
		start = i + 1
	} else {
		start = 0
	}
	end := min(len(text), start+n)
	if end < len(text) {
		if i := strings.LastIndexByte(text[start:end], '\n'); i > 0 {
			end = start + i
		}
	}
	first := before + strings.Count(text[:start], "\n") + 1
	r.focus = max(0, r.focus-start)
	r.Content = strings.ToValidUTF8(text[start:end], "")
	r.Lines = fmt.Sprintf("%d-%d", first, first+strings.Count(r.Content, "\n"))
	r.Partial = true
	return r
}

// RenderRestored writes the blocks that follow a summary.
func RenderRestored(rs []Restored) string {
	var b strings.Builder
	for _, r := range rs {
		attr := ""
		if r.Partial {
			attr = ` partial="true"`
		}
		if r.Lines != "" {
			attr += ` lines="` + r.Lines + `"`
		}
		fmt.Fprintf(&b, "\n\n%s path=%s%s>\n", RestoredTag, strconv.Quote(r.Path), attr)
		note := "the newest content the conversation before the summary showed"
		switch {
		case r.Lines != "":
			note = "lines " + r.Lines + " of the newest content the conversation before the summary showed (read the file for the rest)"
		case r.Partial:
			note = "part of the newest content the conversation before the summary showed (read the file for the rest)"
		}
		fmt.Fprintf(&b, "Restored by ctx-summarize: %s; read the file again if it may have changed since.\n", note)
		// One line break always ends the content, so that it reads back exactly.
		b.WriteString(r.Content)
		b.WriteByte('\n')
		b.WriteString(restoredEnd)
	}
	return b.String()
}

var restoredBlock = regexp.MustCompile(`(?s)<ctxkit-restored path=("(?:[^"\\]|\\.)*")( partial="true")?(?: lines="(\d+-\d+)")?>\nRestored by ctx-summarize: [^\n]*\n(.*?)\n</ctxkit-restored>`)

// ParseRestored reads the restored files back from a summary message's text, and the text
// before them (the summary).
func ParseRestored(text string) ([]Restored, string) {
	var out []Restored
	summary := text
	if i := strings.Index(text, "\n\n"+RestoredTag); i >= 0 {
		summary = text[:i]
	}
	for _, m := range restoredBlock.FindAllStringSubmatch(text, -1) {
		p, err := strconv.Unquote(m[1])
		if err != nil {
			continue
		}
		out = append(out, Restored{Path: p, Content: m[4], Partial: m[2] != "", Lines: m[3]})
	}
	return out, summary
}

// keptReads lists the files the kept part shows again whole (a read, or a write of the
// whole file): its content there is newer than any the summarized part showed.
func keptReads(t *transcript.Transcript, mi int, into map[string]bool) {
	m := &t.Messages[mi]
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		if b.Kind != transcript.ToolCall {
			continue
		}
		args := t.BodyText(b)
		if c := snip.Classify(b.ToolName, args, snip.Tools{}); c.Class == snip.Read && c.File != "" {
			into[cleanPath(c.File)] = true
			continue
		}
		if e, ok := editOf(b.ToolName, args); ok && e.write != nil {
			into[cleanPath(e.path)] = true
		}
	}
}

// shellRead tells a command that prints one file whole (cat FILE) or its first lines
// (sed -n '1,Np' FILE, as Codex reads): -1 whole, N the lines asked for, 0 neither.
func shellRead(cmd, file string) int {
	f := commandWords(cmd)
	unquote := func(w string) string { return strings.Trim(w, `'"`) }
	switch {
	case len(f) == 2 && f[0] == "cat" && unquote(f[1]) == file:
		return -1
	case len(f) == 4 && f[0] == "sed" && f[1] == "-n" && unquote(f[3]) == file:
		var n int
		if _, err := fmt.Sscanf(unquote(f[2]), "1,%dp", &n); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// shellPrinted is what a command printed, from its result: Codex wraps it in JSON with
// its exit code. ok is false when the command did not end well.
func shellPrinted(result string, _ int) (string, bool) {
	if out, meta := transcript.ShellWrapper(result); out.Exists() {
		if c := meta.Get("exit_code"); c.Exists() && c.Int() != 0 {
			return "", false
		}
		return out.String(), true
	}
	return result, true
}

// patchText is the patch an apply_patch call carries: the call's text itself, or the
// string in its arguments that holds it (Codex writes it as the input, or as the
// argument of an apply_patch command).
func patchText(args string) string {
	if !gjson.Valid(args) {
		return args
	}
	found := ""
	var walk func(r gjson.Result)
	walk = func(r gjson.Result) {
		switch {
		case found != "":
		case r.Type == gjson.String && strings.Contains(r.Str, "*** Begin Patch"):
			found = r.Str
		case r.IsObject() || r.IsArray():
			r.ForEach(func(_, v gjson.Result) bool { walk(v); return found == "" })
		}
	}
	walk(gjson.Parse(args))
	if found == "" {
		return args
	}
	return found
}

// patchEdits reads an apply_patch patch as edits: an added file is written whole, an
// updated file's hunks replace their old lines (context and removed) with the new
// (context and added), a deleted or moved file's content is no longer known.
func patchEdits(patch string) []edit {
	var out []edit
	var cur *edit
	var old, new []string
	flush := func() {
		if cur != nil && cur.write == nil && (len(old) > 0 || len(new) > 0) {
			cur.replace = append(cur.replace, replace{strings.Clone(strings.Join(old, "\n")), strings.Clone(strings.Join(new, "\n")), false})
		}
		old, new = nil, nil
	}
	for _, line := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "*** Add File: "), strings.HasPrefix(line, "*** Update File: "), strings.HasPrefix(line, "*** Delete File: "):
			flush()
			out = append(out, edit{path: strings.Clone(strings.TrimSpace(line[strings.Index(line, ": ")+2:]))})
			cur = &out[len(out)-1]
			switch {
			case strings.HasPrefix(line, "*** Add File: "):
				empty := ""
				cur.write = &empty
			case strings.HasPrefix(line, "*** Delete File: "):
				cur.unknown = true
			}
		case cur == nil:
		case strings.HasPrefix(line, "*** Move to: "):
			cur.unknown = true
		case strings.HasPrefix(line, "*** "):
			flush()
		case strings.HasPrefix(line, "@@"):
			flush()
		case cur.write != nil:
			if t, ok := strings.CutPrefix(line, "+"); ok {
				w := *cur.write + t + "\n"
				cur.write = &w
			}
		case strings.HasPrefix(line, "+"):
			new = append(new, line[1:])
		case strings.HasPrefix(line, "-"):
			old = append(old, line[1:])
		case strings.HasPrefix(line, " "):
			old, new = append(old, line[1:]), append(new, line[1:])
		}
	}
	flush()
	for i := range out {
		e := &out[i]
		e.unknown = e.unknown || e.write == nil && len(e.replace) == 0
	}
	return out
}
