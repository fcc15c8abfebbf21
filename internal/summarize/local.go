package summarize

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unique"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/toolvocab"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// Local is the offline summarizer: it extracts the sections from the messages themselves
// — user requests as written, the paths of files read and changed, the commands run and
// how they ended, error lines and whether a later run fixed them, the agent's todo list,
// what it was doing at the cut — so the result is the same every time.
func Local(t *transcript.Transcript, msgs []int) Sections {
	x := NewExtractor()
	for _, mi := range msgs {
		x.Add(t, mi)
	}
	return x.Sections()
}

// Extractor is Local one message at a time, for a caller that streams a transcript: it
// keeps what each call and result told, never their text. A call's effect on the sections
// waits for its result (a failed read read nothing), so calls queue in call order and are
// applied from the front as results come; the sections keep call order whatever the order
// of the results. A call that is never answered holds the calls after it in the queue
// until Sections, a few short strings each.
type Extractor struct {
	found
	files               files // what the applied calls showed of each file
	requests            []string
	decisions           []string
	todos               []string
	inProgress          string // the todo item marked in progress
	lastText            string // shortened already
	nextText            string // the newest sentence where the assistant says what it will do
	lastCall            string
	lastCallRan         bool // the last call is a command: "Last command" says it with its outcome
	lastRequestAnswered bool
	carried             []string // unresolved errors of an earlier summary (CarryErrors)

	// Calls are numbered from 1 in call order; queue holds those not applied yet, from
	// number head on.
	queue   []pending
	head    int
	waiting map[string]waitList // calls without a result, by id
	early   map[string][]ending // results no call was waiting for, by id, oldest first
}

// waitList is the calls waiting for a result with one id, oldest first, linked through
// pending.next.
type waitList struct{ first, last int }

// found is what the calls applied so far add to the sections.
type found struct {
	read, changed      []string
	seenRead, seenEdit map[string]bool
	commands           []command
	toolRuns           []toolRun
	refused            []string // the calls the user refused, as decisions
	lastEdit, lastCmd  string   // the newest edit (its path) and command (with its outcome)
}

// pending is a call's effect, to apply once its result is known.
type pending struct {
	label    string // the call as "At the cut" and Errors name it
	tool     string // the tool's name, lower case
	file     bool   // the call names a file: only a success on the same file fixes it
	read     string
	changed  []string
	cmd      string // a shell command; "" for other calls
	edits    []edit // what an edit changes, to apply to the content known
	partial  bool   // a read of part of a file (an offset, a limit, a range)
	fileRead bool   // a file tool's read, whose result is the file's text
	// shellRead is a command that prints a file (cat, sed -n 'a,bp'): 0 not one, -1 the
	// whole file, n > 0 its first n lines (the whole file when it printed fewer).
	shellRead int
	shown     string // what a successful read showed
	answered  bool
	end       ending
	next      int // the next call waiting with the same id, 0 if none
}

// ending is what a call's result tells: whether it was an error, and for a shell command
// its outcome, for another call its first line. A result that comes before its call has
// both (its call is not known yet).
type ending struct {
	isError         bool
	refused         bool   // the user refused the call: a decision, not an error
	reason          string // what the user said when refusing, if anything
	outcome, cmdErr string
	cmdFailed       bool
	cmdMissing      string
	runErr          string
}

type command struct {
	cmd, outcome string
	failed       bool
	errLine      string
	missing      string // the program its output says is not there
}

// NewExtractor returns an Extractor with no messages.
func NewExtractor() *Extractor {
	return &Extractor{head: 1, waiting: map[string]waitList{}, early: map[string][]ending{}}
}

// Add reads message mi of t. Messages come in conversation order. t may hold only that
// message's text (Doc a part of the document, Base its offset). Add keeps no reference to
// t or its text: the caller may free or reuse them when it returns.
func (x *Extractor) Add(t *transcript.Transcript, mi int) {
	m := &t.Messages[mi]
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		switch {
		case b.Kind == transcript.ToolResult:
			// Even in a summary message: results pair with calls wherever they are.
			x.result(t, b)
		case m.Summary:
			// folded separately
		case b.Pinned:
			// Pinned context: carried over verbatim (Place), not summarized.
		case b.Agent:
			// What the agent wrote into a user message (Cline's <environment_details>, a
			// result's label): not a request.
		case b.Kind == transcript.Text && m.Role == "user":
			if words := userWords(t.Format, t.BodyText(b)); words != "" {
				x.request(words)
			}
		case b.Kind == transcript.Text && m.Role == "assistant":
			text := strings.TrimSpace(t.BodyText(b))
			if text == "" {
				continue
			}
			x.lastText = strings.Clone(shorten(text, 300))
			x.lastRequestAnswered = true
			x.nextText = strings.Clone(nextStep(text))
			for _, d := range decisions(text) {
				x.decisions = append(x.decisions, strings.Clone(d))
			}
		case b.Kind == transcript.ToolCall:
			x.call(t, b)
		}
	}
}

// maxRequest caps one request kept by the Extractor; the summary's budget for the user's
// words (KeepUserWords) is applied to them all later.
const maxRequest = 32 << 10

// request records words the user wrote.
func (x *Extractor) request(words string) {
	if len(x.requests) > 0 { // the first, the goal, is kept whole for --keep-first
		words = shorten(words, maxRequest)
	}
	x.requests = append(x.requests, strings.Clone(words))
	x.lastRequestAnswered = false
}

// resultText is a result's text without the label an agent put before it (Cline's
// "[read_file for 'x'] Result:").
func resultText(t *transcript.Transcript, b *transcript.Block) string {
	if len(b.Parts) == 0 {
		text := t.BodyText(b)
		if b.Head > 0 && b.Head <= len(text) {
			text = strings.TrimLeft(text[b.Head:], "\n")
		}
		return text
	}
	var parts []string
	for i := range b.Parts {
		if b.Parts[i].Kind == transcript.Text {
			parts = append(parts, t.BodyText(&b.Parts[i]))
		}
	}
	return strings.Join(parts, "\n")
}

// wrappers are what one agent writes at the start of a user message for the model: its
// reminders, slash-command echoes, IDE context, environment reports. Each is recognised
// exactly, by its own tag at the start of the text, so that a user who pastes HTML or XML
// is still quoted: a text is the agent's only when it opens with one of these.
type wrappers struct {
	tags     []string // <tag>...</tag> elements, dropped; what follows the last is the user's
	prefixes []string // texts that are the agent's whole
	inner    []string // elements whose content is the user's words (Cline's <task>)
}

var (
	claudeCodeWrappers = wrappers{
		tags: []string{"system-reminder", "command-name", "command-message", "command-args", "command-contents",
			"local-command-stdout", "local-command-stderr", "local-command-caveat", "ide_selection", "ide_opened_file",
			"ide_diagnostics", "bash-input", "bash-stdout", "bash-stderr", "user-prompt-submit-hook", "task-notification"},
		prefixes: []string{"Caveat: The messages below were generated by the user while running local commands",
			"[Request interrupted by user", "This session is being continued from a previous conversation"},
	}
	clineWrappers = wrappers{
		tags:     []string{"environment_details"},
		prefixes: []string{"[TASK RESUMPTION]", "[ERROR] You did not use a tool", "[Response interrupted by"},
		inner:    []string{"task", "feedback", "answer", "user_message"},
	}
	codexWrappers = wrappers{
		tags:     []string{"environment_context", "user_instructions", "turn_aborted", "user_shell_command"},
		prefixes: []string{"# AGENTS.md instructions for "},
	}
)

// agentWrappers are the wrappers of each agent, by transcript.Format.Agent; a format whose
// agent has none here fails TestEveryAgentWrapped.
var agentWrappers = map[string]wrappers{"claude-code": claudeCodeWrappers, "cline": clineWrappers, "codex": codexWrappers}

// wrappersOf is the wrappers of the agent that wrote a format; an API document may come
// from any agent (a session converted by ctx-convert keeps its wrappers), so it gets all.
func wrappersOf(f transcript.Format) []wrappers {
	if w, ok := agentWrappers[f.Agent()]; ok {
		return []wrappers{w}
	}
	return []wrappers{claudeCodeWrappers, clineWrappers, codexWrappers}
}

// userWords is what the user wrote in a user text: the text without the wrappers its agent
// put at its start, "" when nothing is left. A slash command is the user's when it has
// arguments ("/review the parser"); its bare echo is not.
func userWords(f transcript.Format, text string) string {
	text = strings.TrimSpace(text)
	var command, args string
	for _, w := range wrappersOf(f) {
		for _, p := range w.prefixes {
			if strings.HasPrefix(text, p) {
				return ""
			}
		}
	}
	for changed := true; changed && text != ""; {
		changed = false
		for _, w := range wrappersOf(f) {
			for _, tag := range w.tags {
				body, rest, ok := element(text, tag)
				if !ok {
					continue
				}
				switch tag {
				case "command-name":
					command = strings.TrimSpace(body)
				case "command-args":
					args = strings.TrimSpace(body)
				}
				text, changed = rest, true
			}
			for _, tag := range w.inner {
				if body, rest, ok := element(text, tag); ok {
					text, changed = strings.TrimSpace(body+"\n"+rest), true
				}
			}
		}
	}
	if text == "" && command != "" && args != "" {
		return command + " " + args
	}
	return text
}

// element splits an element <tag>...</tag> at the start of text from what follows it. An
// element that is not closed runs to the end.
func element(text, tag string) (body, rest string, ok bool) {
	open := "<" + tag + ">"
	if !strings.HasPrefix(text, open) {
		return "", text, false
	}
	body = text[len(open):]
	end := strings.Index(body, "</"+tag+">")
	if end < 0 {
		return body, "", true
	}
	return body[:end], strings.TrimSpace(body[end+len(tag)+3:]), true
}

func quote(s string) string { return "“" + s + "”" }

// decisionWords mark a sentence that states a choice: what was taken over what ("X
// instead of Y", "rather than"), why ("because"), or that it was chosen ("going with",
// "decided", "switch to"), or the cause it acts on ("the root cause", "the fix is"). A
// sentence that says only what the assistant does next ("Now let's run the tests", "I
// will proceed with the booking") is narration, not a decision.
var decisionWords = regexp.MustCompile(`(?i)\b(?:instead of|rather than|because|decided|decide to|chose|choose to|chosen|opt(?:ed)? for|going with|go with|switch(?:ed|ing)? to|the (?:root )?cause (?:is|was)|root cause|the (?:fix|problem|issue|bug) (?:is|was)|so that)\b`)

// decisionAnchors are strings one of which every match of decisionWords holds, in lower
// case: a sentence of ASCII that holds none of them is not tried with the expression,
// which costs far more than looking for them (a twentieth of ctx-summarize on 10 MB of
// Anthropic JSON). (Text with other bytes is always tried: (?i) folds some of them, such
// as the long s, to ASCII letters.)
var decisionAnchors = []string{"instead of", "rather than", "because", "decide", "chos", "opt", "go with", "going with",
	"switch", "cause", "the fix", "the problem", "the issue", "the bug", "so that"}

// saysDecision is decisionWords.MatchString(s), ruling most sentences out without it.
func saysDecision(s string) bool {
	var buf [256]byte
	lower := buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return decisionWords.MatchString(s)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	l := unsafe.String(unsafe.SliceData(lower), len(lower))
	for _, a := range decisionAnchors {
		if strings.Contains(l, a) {
			return decisionWords.MatchString(s)
		}
	}
	return false
}

// decisions picks the sentences of an assistant text that say what it chose and why.
func decisions(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		for _, s := range sentences(para) {
			if len(out) == 2 {
				return out
			}
			if len(s) > 20 && saysDecision(s) {
				out = append(out, shorten(s, 300))
			}
		}
	}
	return out
}

var nextWords = regexp.MustCompile(`(?i)^(?:now |next,? |then |first,? )?(?:i'll|i will|let me|let's|next,? i|i'm going to|i am going to)\b`)

// nextStep is the last sentence of an assistant text that says what it will do next.
func nextStep(text string) string {
	next := ""
	for _, para := range strings.Split(text, "\n") {
		for _, s := range sentences(para) {
			if nextWords.MatchString(strings.TrimLeft(s, "-*# ")) {
				next = s
			}
		}
	}
	return shorten(next, 300)
}

func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && (i+1 == len(s) || s[i+1] == ' ') {
			out = append(out, strings.TrimSpace(s[start:i+1]))
			start = i + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

var patchFile = regexp.MustCompile(`(?m)^\*\*\* (?:Update|Add|Delete) File: (.+)$`)

// call classifies a call; what it read, changed or ran counts once its result is known.
// Todo lists do not wait: the last list written is the list, whether or not the write
// failed.
func (x *Extractor) call(t *transcript.Transcript, b *transcript.Block) {
	args := t.BodyText(b)
	c := snip.Classify(b.ToolName, args, snip.Tools{})
	label := unique.Make(b.ToolName).Value() // few names: one copy each
	if c.Arg != "" {
		label = b.ToolName + "(" + shorten(c.Arg, 120) + ")"
	}
	x.lastCall = label
	lower := strings.ToLower(b.ToolName)
	x.lastCallRan = isShell(lower) && c.Class != snip.Read && c.Arg != "" // "Last command" names it
	p := pending{label: label, tool: unique.Make(lower).Value(), file: c.File != ""}
	switch {
	case c.Class == snip.Read && c.File != "":
		p.read = strings.Clone(c.File)
		p.fileRead = isFileRead(b.ToolName)
		if isShell(lower) {
			p.shellRead = shellRead(c.Arg, c.File)
		}
		for _, k := range []string{"offset", "limit", "view_range", "start_line", "end_line"} {
			p.partial = p.partial || gjson.Get(args, k).Exists()
		}
	case toolvocab.Edit(lower) || toolvocab.Editor(lower) && gjson.Get(args, "command").String() != toolvocab.EditorView:
		for _, key := range toolvocab.PathKeys {
			if path := gjson.Get(args, key).String(); path != "" {
				p.changed = []string{strings.Clone(path)}
				break
			}
		}
		if e, ok := editOf(b.ToolName, args); ok {
			p.edits = []edit{e}
		}
	case lower == "apply_patch" || strings.Contains(args, "*** Begin Patch"):
		patch := patchText(args)
		for _, m := range patchFile.FindAllStringSubmatch(patch, -1) {
			p.changed = append(p.changed, strings.Clone(strings.TrimSpace(m[1])))
		}
		p.edits = patchEdits(patch)
	case lower == "todowrite":
		x.todos, x.inProgress = nil, ""
		gjson.Get(args, "todos").ForEach(func(_, td gjson.Result) bool {
			if st := td.Get("status").String(); st != "completed" {
				x.todos = append(x.todos, fmt.Sprintf("%s (%s)", td.Get("content").String(), st))
				if st == "in_progress" && x.inProgress == "" {
					x.inProgress = strings.Clone(td.Get("content").String())
				}
			}
			return true
		})
		return
	case lower == "update_plan":
		x.todos, x.inProgress = nil, ""
		gjson.Get(args, "plan").ForEach(func(_, st gjson.Result) bool {
			if s := st.Get("status").String(); s != "completed" {
				x.todos = append(x.todos, fmt.Sprintf("%s (%s)", st.Get("step").String(), s))
				if s == "in_progress" && x.inProgress == "" {
					x.inProgress = strings.Clone(st.Get("step").String())
				}
			}
			return true
		})
		return
	}
	// A command that reads a file counts as a read, not a command (snip classed it already).
	if c.Class != snip.Read && isShell(lower) && c.Arg != "" {
		p.cmd = strings.Clone(shorten(c.Arg, 200))
	}
	if ends := x.early[b.ToolID]; len(ends) > 0 {
		p.answered, p.end = true, ends[0]
		if len(ends) == 1 {
			delete(x.early, b.ToolID)
		} else {
			x.early[b.ToolID] = ends[1:]
		}
		x.queue = append(x.queue, p)
		x.flush()
		return
	}
	x.queue = append(x.queue, p)
	n := x.head + len(x.queue) - 1
	if w, ok := x.waiting[b.ToolID]; ok {
		x.at(w.last).next = n
		x.waiting[b.ToolID] = waitList{w.first, n}
	} else {
		x.waiting[strings.Clone(b.ToolID)] = waitList{n, n}
	}
}

// at is call number n, which is in the queue.
func (x *Extractor) at(n int) *pending { return &x.queue[n-x.head] }

// result answers the oldest call waiting for each of the result's ids (ids are reused),
// or keeps what it tells for a later call. It reads the text only when it must: for a
// command, or for an error.
func (x *Extractor) result(t *transcript.Transcript, b *transcript.Block) {
	ids := b.ToolIDs
	if len(ids) == 0 {
		ids = []string{b.ToolID}
	}
	var text string
	read := false
	textOf := func() string {
		if !read {
			text, read = resultText(t, b), true
		}
		return text
	}
	if b.User {
		// Cline's answers to its questions and feedback on a completion: the user's words.
		if words := userAnswer(textOf()); words != "" {
			x.request(words)
		}
	}
	for _, id := range ids {
		w, ok := x.waiting[id]
		var p *pending
		if ok {
			p = x.at(w.first)
		}
		e := ending{isError: b.IsError}
		if !b.IsError && p != nil && p.cmd == "" && !p.fileRead && p.shellRead == 0 && reportsError(textOf()) {
			// A tool that says its failure in its text (tau-bench's "Error: ..."), with no
			// error flag.
			e.isError = true
		}
		if b.IsError {
			e.refused, e.reason = refusal(textOf())
			e.reason = strings.Clone(e.reason)
		}
		cmd := ""
		if p != nil {
			cmd = p.cmd
		}
		if p == nil || p.cmd != "" {
			// outcome's own text is built, not sliced from the result.
			o, failed, errLine := outcome(cmd, textOf(), b.IsError && !e.refused)
			e.outcome, e.cmdFailed, e.cmdErr = o, failed, strings.Clone(errLine)
			if failed {
				e.cmdMissing = strings.Clone(missingProgram(cmd, scanned(textOf())))
			}
		}
		if (p == nil || p.cmd == "") && e.isError && !e.refused {
			e.runErr = strings.Clone(errorOf(textOf()))
		}
		if p == nil {
			x.early[strings.Clone(id)] = append(x.early[id], e)
			continue
		}
		p.answered, p.end = true, e
		if (p.fileRead || p.shellRead != 0) && !b.IsError {
			shown := textOf()
			if p.shellRead != 0 {
				var ok bool
				if shown, ok = shellPrinted(shown, p.shellRead); !ok {
					shown = ""
				}
				p.partial = p.shellRead > 0 && strings.Count(shown, "\n") >= p.shellRead
			}
			p.shown = strings.Clone(shown[:min(len(shown), maxFile+1)]) // beyond maxFile: partial
		}
		if p.next == 0 {
			delete(x.waiting, id)
		} else {
			x.waiting[id] = waitList{p.next, w.last}
		}
	}
	x.flush()
}

// flush applies the calls at the front of the queue that have their results.
func (x *Extractor) flush() {
	n := 0
	for n < len(x.queue) && x.queue[n].answered {
		x.found.apply(&x.queue[n])
		x.files.took(&x.queue[n])
		x.queue[n] = pending{}
		n++
	}
	x.head += n
	if n == len(x.queue) {
		x.queue = x.queue[:0]
	} else {
		x.queue = x.queue[n:]
	}
}

// apply adds a call to the sections; a call not answered has no result recorded.
func (f *found) apply(p *pending) {
	// A call that failed or was refused read or changed nothing; it is listed under
	// Errors, with its path.
	failed := p.answered && p.end.isError
	if p.answered && p.end.refused {
		r := "The user refused " + p.label
		if p.end.reason != "" {
			r += ": " + quote(p.end.reason)
		}
		f.refused = append(f.refused, r)
		if p.cmd != "" {
			f.commands = append(f.commands, command{cmd: p.cmd, outcome: "refused by the user"})
		}
		return
	}
	if !failed {
		if p.read != "" {
			f.addRead(p.read)
		}
		for _, path := range p.changed {
			f.addChanged(path)
			f.lastEdit = path
		}
	}
	if p.cmd != "" {
		c := command{cmd: p.cmd, outcome: "no result recorded"}
		if p.answered {
			c.outcome, c.failed, c.errLine, c.missing = p.end.outcome, p.end.cmdFailed, p.end.cmdErr, p.end.cmdMissing
		}
		f.commands = append(f.commands, c)
		f.lastCmd = fmt.Sprintf("`%s` → %s", c.cmd, c.outcome)
		return
	}
	if p.answered {
		f.toolRuns = append(f.toolRuns, toolRun{call: p.label, tool: p.tool, file: p.file || p.read != "" || len(p.changed) > 0,
			failed: failed, errLine: p.end.runErr})
	}
}

// toolRun is how a call of a tool other than a shell ended, for the Errors section.
type toolRun struct {
	call, errLine, tool string
	failed, file        bool
}

func isShell(lower string) bool { return toolvocab.Shell(lower) }

func (f *found) addRead(p string) {
	if f.seenRead == nil {
		f.seenRead = map[string]bool{}
	}
	if !f.seenRead[p] {
		f.seenRead[p] = true
		f.read = append(f.read, p)
	}
}

func (f *found) addChanged(p string) {
	if f.seenEdit == nil {
		f.seenEdit = map[string]bool{}
	}
	if !f.seenEdit[p] {
		f.seenEdit[p] = true
		f.changed = append(f.changed, p)
	}
}

// exitCode is how an output says its command's exit status.
var exitCode = regexp.MustCompile(`(?i)(?:exit(?:ed)?(?: with)? (?:code|status)|exit_code"?\s*[:=])\s*:?\s*(-?\d+)`)

// outcome reads how a command ended from its result: the exit code when the output says
// it (Codex writes it in metadata), a test summary line, the first error line.
func outcome(cmd, text string, isError bool) (string, bool, string) {
	code := -1
	if out, meta := transcript.ShellWrapper(text); out.Exists() {
		// Codex shell results: {"output": "...", "metadata": {"exit_code": N}}.
		if c := meta.Get("exit_code"); c.Exists() {
			code = int(c.Int())
		}
		text = out.String()
	}
	head := scanned(text)
	if code < 0 && (strings.Contains(head, "xit") || strings.Contains(head, "XIT")) {
		if m := exitCode.FindStringSubmatch(head); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
	}
	// The lines are read by the one classifier of command output, ctx-budget's: the last
	// line that sums the run up is the summary, the first that says a test failed or an
	// error the error (go's "FAIL pkg" is both).
	// (The first error is read, classifying the lines, only of a run that failed: most
	// did not, and classifying was most of reading them.)
	lines := strings.Split(head, "\n")
	summary := budget.Summary(lines)
	failed := isError || code > 0
	// No non-zero status says it failed (none was recorded, or it is a pipeline's last
	// filter's: docker build ... | tail), the output does.
	byOutput := !failed && (code < 0 || statusHidden(cmd)) && printsFailure(cmd, head)
	if code == 1 && noMatchIsOne(cmd) {
		// A search that found nothing (grep, rg, git grep) or files that differ (diff,
		// cmp) exit 1: an answer, not a failure.
		failed = false
	}
	firstErr := ""
	if failed = failed || byOutput; failed {
		if firstErr = budget.Failure(lines); firstErr == "" && byOutput {
			firstErr = failureLine(head)
		}
		if tb := traceback(text); tb != "" {
			firstErr = tb
		}
	}
	return outcomeLine(text, code, isError, summary, failed, firstErr)
}

// outcomeLine is what outcome says of a run: how it ended (its exit code, else failed or
// ran), its summary line and, of a run that failed, its first error (else the first line
// of its output), each shortened.
func outcomeLine(text string, code int, isError bool, summary string, failed bool, firstErr string) (string, bool, string) {
	var parts []string
	switch {
	case code >= 0:
		parts = append(parts, fmt.Sprintf("exit %d", code))
	case isError:
		parts = append(parts, "failed")
	default:
		parts = append(parts, "ran")
	}
	if summary != "" {
		parts = append(parts, shorten(summary, 160))
	}
	if failed && firstErr != "" {
		parts = append(parts, shorten(firstErr, 400))
	}
	if !failed {
		firstErr = ""
	} else if firstErr == "" {
		firstErr = shorten(firstLine(text), 240)
	} else {
		firstErr = shorten(firstErr, 400)
	}
	return strings.Join(parts, ": "), failed, firstErr
}

// failureWords are the lines with which builds, tests, installs and interpreters say a
// run failed.
var failureWords = regexp.MustCompile(`(?m)^\s*` + failureStartRE + "|" + quoteAll(failurePhrases))

// failureWords read a line at a time: the words that start a line (after its white space,
// which is all failureWords' ^\s* can take before a word) and the phrases found anywhere.
// failureWords.MatchString over a whole output ran its automaton over every byte of it,
// most of ctx-summarize's reading of results; these read the first bytes of each line
// and search for four phrases (saysFailure, held equal to it by TestSaysFailureIsFailureWords).
var (
	failureStart   = regexp.MustCompile(`^` + failureStartRE)
	failurePhrases = []string{": command not found", "failed to solve", "did not complete successfully", "returned a non-zero code"}
)

// failureStartRE is the words with which a line says a run failed.
const failureStartRE = `(?:(?:ERROR|Error|error)(?:\[[^\]\n]*\])?[: ]|FAIL(?:ED|URE)?\b|fatal:|npm ERR!|BUILD FAILED|make(?:\[\d+\])?: \*\*\*|Traceback \(most recent call last\)|[A-Z]\w*(?:Error|Exception): )`

// quoteAll is an expression that matches any of the phrases.
func quoteAll(phrases []string) string {
	q := make([]string, len(phrases))
	for i, p := range phrases {
		q[i] = regexp.QuoteMeta(p)
	}
	return strings.Join(q, "|")
}

// saysFailure is failureWords.MatchString(out).
func saysFailure(out string) bool {
	for _, p := range failurePhrases {
		if strings.Contains(out, p) {
			return true
		}
	}
	for rest := out; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimLeft(line, "\t\f\r ")
		if line == "" {
			continue
		}
		// (the first bytes failureStart's words can have)
		if c := line[0]; ('A' <= c && c <= 'Z' || c == 'e' || c == 'f' || c == 'n' || c == 'm') && failureStart.MatchString(line) {
			return true
		}
	}
	return false
}

// printsFailure tells whether a command's output says it failed, for a command whose
// program does work (a build, a test run, a script) rather than print what it was given
// or found (cat, grep, git log), whose output may hold such words as data.
func printsFailure(cmd, out string) bool {
	program, _ := commandRun(cmd)
	if program == "" || printsData[program] {
		return false
	}
	return saysFailure(out)
}

// failureLine is the first line failureWords finds.
func failureLine(out string) string {
	if loc := failureWords.FindStringIndex(out); loc != nil {
		start := strings.LastIndexByte(out[:loc[0]+1], '\n') + 1
		end := strings.IndexByte(out[loc[0]:], '\n')
		if end < 0 {
			return strings.TrimSpace(out[start:])
		}
		return strings.TrimSpace(out[start : loc[0]+end])
	}
	return ""
}

// printsData are programs that print what they read or found.
var printsData = map[string]bool{"cat": true, "grep": true, "egrep": true, "rg": true, "ag": true, "find": true, "fd": true, "ls": true,
	"head": true, "tail": true, "sed": true, "awk": true, "echo": true, "printf": true, "jq": true, "yq": true, "wc": true, "sort": true,
	"uniq": true, "diff": true, "less": true, "more": true, "tree": true, "curl": true, "wget": true, "git": true, "gh": true, "nl": true,
	"file": true, "stat": true, "du": true, "ps": true, "env": true, "history": true, "man": true, "strings": true, "xxd": true, "od": true,
	"open": true, "search_dir": true, "search_file": true, "find_file": true, "goto": true, "scroll_down": true, "scroll_up": true}

// statusHidden tells a command whose exit status may not be its program's: a pipeline
// (the last filter's), a command followed by another after ; or a newline, or by || (the
// last one's). Commands joined with && stop at the first that fails.
func statusHidden(cmd string) bool {
	return strings.ContainsAny(cmd, "|;\n")
}

// scanned is the part of a command's output read for its outcome: where first errors and
// final summaries are, its head and its tail, so a huge output costs no more than a big one.
func scanned(text string) string {
	const part = 8 << 10
	if len(text) <= 2*part {
		return text
	}
	return strings.ToValidUTF8(text[:part], "") + "\n" + strings.ToValidUTF8(text[len(text)-part:], "")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Sections returns the sections of the messages added so far. Calls still waiting for
// their results have none recorded; Add may go on after it.
func (x *Extractor) Sections() Sections {
	f := x.found
	if len(x.queue) > 0 {
		// Apply the waiting calls to a copy, so a result that comes later still counts.
		f = found{read: slices.Clone(f.read), changed: slices.Clone(f.changed),
			seenRead: maps.Clone(f.seenRead), seenEdit: maps.Clone(f.seenEdit),
			commands: slices.Clone(f.commands), toolRuns: slices.Clone(f.toolRuns)}
		for i := range x.queue {
			f.apply(&x.queue[i])
		}
	}
	s := Sections{}
	for i, r := range x.requests {
		if i == 0 {
			s["Goal and user requests"] = []string{"Goal: " + quote(r)}
			continue
		}
		s["Goal and user requests"] = append(s["Goal and user requests"], quote(r))
	}
	s["Decisions"] = append(slices.Clip(x.decisions), f.refused...)
	s["Files read"] = slices.Clip(f.read)
	s["Files changed"] = slices.Clip(f.changed)
	for _, c := range f.commands {
		s["Commands and tests"] = append(s["Commands and tests"], fmt.Sprintf("`%s` → %s", c.cmd, c.outcome))
	}
	s["Errors"] = append(fixedSince(x.carried, f.commands, f.toolRuns), errorItems(f.commands, f.toolRuns)...)
	s["Pending tasks"] = slices.Clip(x.todos)
	// The current work, always: what the user asked last, the task in progress, the last
	// edit and command, what the assistant said last.
	var cut []string
	// The latest request is the last under "Goal and user requests": named, not quoted
	// again (a summary of a short conversation is mostly its requests).
	if len(x.requests) > 0 {
		state := "answered"
		if !x.lastRequestAnswered {
			state = "not answered yet"
		}
		cut = append(cut, "The user's latest request (the last under Goal and user requests): "+state)
	}
	if x.inProgress != "" {
		cut = append(cut, "Task in progress: "+x.inProgress)
	}
	if f.lastEdit != "" {
		cut = append(cut, "Last file changed: "+f.lastEdit)
	}
	if f.lastCmd != "" {
		cut = append(cut, "Last command: "+f.lastCmd)
	}
	if x.lastCall != "" && !x.lastCallRan {
		cut = append(cut, "Last tool call: "+x.lastCall)
	}
	if x.lastText != "" {
		cut = append(cut, "The assistant had just said: "+quote(x.lastText))
	}
	s["At the cut"] = cut
	switch {
	case len(x.requests) > 0 && !x.lastRequestAnswered:
		s["Next step"] = []string{"Answer the user's latest request, the last under Goal and user requests."}
	case x.inProgress != "":
		s["Next step"] = []string{"Carry on with the task in progress: " + x.inProgress}
	case len(x.todos) > 0:
		s["Next step"] = []string{"Continue with the first pending task: " + x.todos[0]}
	case x.nextText != "":
		s["Next step"] = []string{"Do what the assistant said it would do next: " + quote(x.nextText)}
	case len(x.requests) > 0:
		s["Next step"] = []string{"Carry on with the user's latest request (the last under Goal and user requests), checking the messages that follow for what is already done."}
	case x.lastCall != "":
		s["Next step"] = []string{"Read the result of the last tool call, " + x.lastCall + ", in the messages that follow and carry on from it."}
	default:
		s["Next step"] = []string{"Continue from the messages that follow this summary."}
	}
	return s
}

// CarryErrors takes the Errors of an earlier summary being folded into this one: an error
// it left unresolved that a call of the messages added later fixes is listed again, marked
// fixed, so that Fold replaces it.
func (x *Extractor) CarryErrors(items []string) {
	for _, it := range items {
		if strings.HasSuffix(it, " [unresolved]") {
			x.carried = append(x.carried, it)
		}
	}
}

// fixedSince is the carried errors that the commands and calls since fixed, marked so.
func fixedSince(carried []string, commands []command, runs []toolRun) []string {
	var out []string
	for _, it := range carried {
		text := strings.TrimSuffix(it, " [unresolved]")
		var failed []command
		var failedRuns []toolRun
		if cmd, rest, ok := strings.Cut(strings.TrimPrefix(text, "`"), "`: "); ok && strings.HasPrefix(text, "`") {
			failed = []command{{cmd: cmd, failed: true, errLine: rest, missing: missingProgram(cmd, rest)}}
		} else if call, _, ok := strings.Cut(text, ": "); ok {
			tool, arg, _ := strings.Cut(call, "(")
			failedRuns = []toolRun{{call: call, tool: strings.ToLower(tool), failed: true, file: strings.ContainsAny(arg, "/.")}}
		}
		var items []string
		switch {
		case len(failed) > 0:
			items = errorItems(append(failed, commands...), nil)
		case len(failedRuns) > 0:
			items = errorItems(nil, append(failedRuns, runs...))
		}
		if len(items) > 0 && strings.HasSuffix(items[0], " [fixed]") {
			out = append(out, text+" [fixed]")
		}
	}
	return out
}

// errorItems lists the failed commands and calls, each marked fixed when a later one
// did the job: for a command, fixedBy; for a call of a file tool, a later success on the
// same file; for another tool (a lookup, a fetch, an API), a later success of the same
// tool, the retry with the argument that worked.
func errorItems(commands []command, runs []toolRun) []string {
	var items []string
	for i, c := range commands {
		if !c.failed {
			continue
		}
		state := "[unresolved]"
		for _, d := range commands[i+1:] {
			if !d.failed && d.outcome != "refused by the user" && d.outcome != "no result recorded" && fixedBy(c, d) {
				state = "[fixed]"
				break
			}
		}
		items = append(items, fmt.Sprintf("`%s`: %s %s", c.cmd, c.errLine, state))
	}
	for i, r := range runs {
		if !r.failed {
			continue
		}
		state := "[unresolved]"
		for _, q := range runs[i+1:] {
			if !q.failed && (q.call == r.call || !r.file && q.tool == r.tool) {
				state = "[fixed]"
				break
			}
		}
		items = append(items, fmt.Sprintf("%s: %s %s", r.call, r.errLine, state))
	}
	return items
}

// refusal tells a result that says the user refused the call (Claude Code, Cline, Codex
// write it as an error result) and what the user said with it. Its text is an instruction
// to the model that refused ("STOP what you are doing"): a resuming agent must not read it
// as an open error, so it becomes a decision.
func refusal(text string) (bool, string) {
	text = strings.TrimSpace(text)
	for _, p := range []string{"The user doesn't want to proceed with this tool use", "The user doesn't want to take this action",
		"The user denied this operation", "exec command rejected by user", "patch rejected by user"} {
		if !strings.HasPrefix(text, p) {
			continue
		}
		for _, lead := range []string{"the following reason for the rejection:", "The user provided the following feedback:"} {
			if i := strings.Index(text, lead); i >= 0 {
				reason := strings.TrimSpace(text[i+len(lead):])
				if words := userAnswer(reason); words != "" {
					reason = words
				}
				return true, shorten(reason, 600)
			}
		}
		return true, ""
	}
	return false, ""
}

// userAnswer is the user's words in a result that carries them (Cline's <feedback> and
// <answer>), "" when it has none.
func userAnswer(text string) string {
	for _, tag := range []string{"feedback", "answer", "user_message"} {
		if i := strings.Index(text, "<"+tag+">"); i >= 0 {
			if body, _, ok := element(text[i:], tag); ok {
				return strings.TrimSpace(body)
			}
		}
	}
	return ""
}

// noMatchIsOne reports whether a command's exit status 1 means an answer rather than a
// failure: a search that matched nothing, files that differ.
func noMatchIsOne(cmd string) bool {
	switch f := commandWords(cmd); {
	case len(f) == 0:
		return false
	case f[0] == "git" && len(f) > 1:
		return f[1] == "grep" || f[1] == "diff"
	default:
		switch f[0] {
		case "grep", "egrep", "fgrep", "rg", "ag", "diff", "cmp", "test", "[":
			return true
		}
	}
	return false
}

// commandWords are the words of a shell command from the program it runs: without a
// leading "cd DIR &&" and environment assignments.
func commandWords(cmd string) []string {
	cmd = strings.TrimSpace(cmd)
	for strings.HasPrefix(cmd, "cd ") {
		i := strings.Index(cmd, "&&")
		if i < 0 {
			break
		}
		cmd = strings.TrimSpace(cmd[i+2:])
	}
	f := strings.Fields(cmd)
	for len(f) > 0 && strings.Contains(f[0], "=") && !strings.HasPrefix(f[0], "-") {
		f = f[1:]
	}
	return f
}

// commandRun is what a shell command runs and on what: its program (the base name, so
// that .venv/bin/pytest is pytest; the module python -m runs; the program a wrapper such as
// uv run, npx or timeout starts; gradle for ./gradlew) and its first argument that names
// something (a subcommand, a file), skipping flags and redirections. Of several commands
// joined with && or ;, it is the last that does work (not cd, source, export, echo); of a
// pipeline, the first, which produces what the rest filter.
func commandRun(cmd string) (program, target string) {
	main := ""
	for _, seg := range commandSep.Split(cmd, -1) {
		f := strings.Fields(seg)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "cd", "source", ".", "export", "set", "echo", "mkdir", "sleep", "pushd", "popd", "true", "clear":
			continue
		}
		main = seg
	}
	if i := strings.IndexByte(main, '|'); i >= 0 {
		main = main[:i]
	}
	f := strings.Fields(main)
	for len(f) > 0 {
		switch w := f[0]; {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			f = f[1:]
		case w == "sudo" || w == "time" || w == "npx" || w == "bunx" || w == "exec" || w == "env" || w == "nohup":
			f = f[1:]
		case w == "timeout" && len(f) > 1:
			f = f[2:]
		case (w == "uv" || w == "poetry" || w == "pipenv" || w == "pdm" || w == "hatch") && len(f) > 1 && f[1] == "run",
			w == "bundle" && len(f) > 1 && f[1] == "exec":
			f = f[2:]
		default:
			goto found
		}
	}
found:
	if len(f) == 0 {
		return "", ""
	}
	program = path.Base(f[0])
	args := f[1:]
	if strings.HasPrefix(program, "python") {
		program = "python"
		if len(args) > 1 && args[0] == "-m" {
			program, args = args[1], args[2:]
		}
	}
	switch program {
	case "gradlew":
		program = "gradle"
	case "mvnw":
		program = "mvn"
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "<>") || !strings.ContainsFunc(a, unicode.IsLetter) {
			continue
		}
		return program, strings.Trim(a, `"'`)
	}
	return program, ""
}

var commandSep = regexp.MustCompile(`&&|\|\||;|\n`)

// lookedUp is the program a command looks up (which X, command -v X, type X), "" if it
// looks up none: its failure is fixed by running that program.
func lookedUp(cmd string) string {
	program, _ := commandRun(cmd)
	f := strings.Fields(cmd)
	switch {
	case program == "which" || program == "type" || program == "hash":
	case program == "command" && slices.Contains(f, "-v"):
	default:
		return ""
	}
	for i := len(f) - 1; i > 0; i-- {
		if !strings.HasPrefix(f[i], "-") && !strings.ContainsAny(f[i], "<>&|;") {
			return path.Base(f[i])
		}
	}
	return ""
}

// missingProgram is the program of a failed command when its output says it is not there
// ("pytest: command not found", python -m pytest's "No module named pytest"), "" when the
// output says no such thing of it (a module the program imports that is missing is the
// program's failure, fixed by running it again).
func missingProgram(cmd, text string) string {
	program, _ := commandRun(cmd)
	for _, m := range notFound.FindAllStringSubmatch(text, 8) {
		for _, g := range m[1:] {
			if g != "" && path.Base(strings.Trim(g, "'\"`")) == program {
				return program
			}
		}
	}
	return ""
}

var notFound = regexp.MustCompile(`(?m)(?:^|\s)(\S+): (?:command )?not found\b|command not found: (\S+)|No module named '?([\w.]+)`)

// sameTarget tells whether two targets name the same thing: equal, or one path the other
// with the directories before it (an absolute path and the same path from the project).
func sameTarget(a, b string) bool {
	if a == b {
		return true
	}
	a, b = strings.TrimPrefix(a, "./"), strings.TrimPrefix(b, "./")
	if len(a) > len(b) {
		a, b = b, a
	}
	return a != "" && strings.Contains(a, "/") && strings.HasSuffix(b, "/"+a)
}

// fixedBy tells whether a later command that ran without failing fixes a failed one: the
// same program on the same target (a retry with other flags, or by another path:
// .venv/bin/pytest, python -m pytest), or any run of the program the failed one looked up
// or did not find.
func fixedBy(failed, later command) bool {
	p, t := commandRun(failed.cmd)
	q, u := commandRun(later.cmd)
	if q == "" {
		return false
	}
	if missing := cmp.Or(lookedUp(failed.cmd), failed.missing); missing != "" {
		return q == missing
	}
	return p == q && sameTarget(t, u)
}

// traceback is a Python traceback's last frame and its error line, "" when the text has
// none: the frame says where it failed, the line what failed.
func traceback(text string) string {
	i := strings.LastIndex(text, "Traceback (most recent call last):")
	if i < 0 {
		return ""
	}
	var frame, errLine string
	lines := strings.Split(text[i:], "\n")
	for j := 1; j < len(lines); j++ {
		line := strings.TrimRight(lines[j], " \r")
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "File \""):
			frame = strings.TrimSpace(line)
			if j+1 < len(lines) && strings.HasPrefix(lines[j+1], "    ") {
				frame += ": " + strings.TrimSpace(lines[j+1])
			}
		case line != "" && !strings.HasPrefix(line, " ") && frame != "":
			errLine = strings.TrimSpace(line)
		}
		if errLine != "" {
			break
		}
	}
	if errLine == "" {
		return frame
	}
	return frame + " → " + errLine
}

// errorOf is the line that says what went wrong in a failed call's result: a traceback's
// last frame and error, else its first line.
func errorOf(text string) string {
	if tb := traceback(text); tb != "" {
		return shorten(tb, 400)
	}
	return shorten(firstLine(text), 240)
}

// reportsError tells a tool result that opens by saying the call failed.
func reportsError(text string) bool {
	text = strings.TrimSpace(text)
	return strings.HasPrefix(text, "Error:") || strings.HasPrefix(text, "ERROR:")
}

// isFileRead reports whether a tool's result is a file's text (a command that reads one,
// cat or head, shows it too, but its result is not known to be the whole file).
func isFileRead(tool string) bool {
	read, windowed, many := toolvocab.Read(tool)
	return read && !windowed && !many || toolvocab.Editor(tool)
}
