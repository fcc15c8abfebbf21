package summarize

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// Local is the offline summarizer: it extracts the sections from the messages themselves
// — user requests as written, the paths of files read and changed, the commands run and
// how they ended, error lines and whether a later run fixed them, the agent's todo list,
// what it was doing at the cut — so the result is the same every time.
func Local(t *transcript.Transcript, msgs []int) Sections {
	x := extractor{t: t, results: map[string]result{}}
	for _, mi := range msgs {
		x.index(mi)
	}
	for _, mi := range msgs {
		x.readMessage(mi)
	}
	return x.sections()
}

// result is a tool result, its text decoded only when a call needs it (most do not).
type result struct {
	t     *transcript.Transcript
	block *transcript.Block
}

func (r result) text() string  { return resultText(r.t, r.block) }
func (r result) isError() bool { return r.block.IsError }

type command struct {
	tool, cmd, outcome string
	failed             bool
	errLine            string
}

type extractor struct {
	t                   *transcript.Transcript
	results             map[string]result // by call id
	requests            []string
	decisions           []string
	read, changed       []string
	seenRead, seenEdit  map[string]bool
	commands            []command
	toolRuns            []toolRun
	todos               []string
	lastText, lastCall  string
	lastRequestAnswered bool
}

// index records every result by the id of its call, for the calls to find.
func (x *extractor) index(mi int) {
	m := &x.t.Messages[mi]
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		if b.Kind != transcript.ToolResult {
			continue
		}
		r := result{t: x.t, block: b}
		ids := b.ToolIDs
		if len(ids) == 0 {
			ids = []string{b.ToolID}
		}
		for _, id := range ids {
			x.results[id] = r
		}
	}
}

func resultText(t *transcript.Transcript, b *transcript.Block) string {
	if len(b.Parts) == 0 {
		return t.BodyText(b)
	}
	var parts []string
	for i := range b.Parts {
		if b.Parts[i].Kind == transcript.Text {
			parts = append(parts, t.BodyText(&b.Parts[i]))
		}
	}
	return strings.Join(parts, "\n")
}

func (x *extractor) readMessage(mi int) {
	m := &x.t.Messages[mi]
	if m.Summary {
		return // folded separately
	}
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		switch {
		case b.Kind == transcript.Text && m.Role == "user":
			if text := strings.TrimSpace(x.t.BodyText(b)); userWords(text) {
				x.requests = append(x.requests, quote(shorten(text, 600)))
				x.lastRequestAnswered = false
			}
		case b.Kind == transcript.Text && m.Role == "assistant":
			text := strings.TrimSpace(x.t.BodyText(b))
			if text == "" {
				continue
			}
			x.lastText = text
			x.lastRequestAnswered = true
			x.decisions = append(x.decisions, decisions(text)...)
		case b.Kind == transcript.ToolCall:
			x.call(b)
		}
	}
}

// userWords tells the user's own words from what agents put in user messages for the
// model: reminders, command echoes, interrupt markers.
func userWords(text string) bool {
	if text == "" {
		return false
	}
	for _, prefix := range []string{"<system-reminder>", "<command-name>", "<command-message>", "<local-command-stdout>", "Caveat: The messages below", "<environment_context>", "<user_instructions>"} {
		if strings.HasPrefix(text, prefix) {
			return false
		}
	}
	return !strings.HasPrefix(text, "[Request interrupted")
}

func quote(s string) string { return "“" + s + "”" }

var decisionWords = regexp.MustCompile(`(?i)\b(i'll|i will|let's|we'll|decided|decide to|instead of|because|the (?:fix|cause|problem|issue) (?:is|was)|root cause|the plan|going to|should be|chose|switch(?:ed)? to)\b`)

// decisions picks the sentences of an assistant text that say what it chose and why.
func decisions(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		for _, s := range sentences(para) {
			if len(out) == 2 {
				return out
			}
			if decisionWords.MatchString(s) && len(s) > 20 {
				out = append(out, shorten(s, 300))
			}
		}
	}
	return out
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

// editTools change files; their path argument is one of snip's path keys.
var editTools = map[string]bool{"edit": true, "multiedit": true, "write": true, "write_file": true, "edit_file": true,
	"create_file": true, "replace_in_file": true, "notebookedit": true, "insert_content": true, "search_replace": true, "apply_diff": true}

var patchFile = regexp.MustCompile(`(?m)^\*\*\* (?:Update|Add|Delete) File: (.+)$`)

func (x *extractor) call(b *transcript.Block) {
	args := x.t.BodyText(b)
	c := snip.Classify(b.ToolName, args, snip.Tools{})
	x.lastCall = b.ToolName
	if c.Arg != "" {
		x.lastCall += "(" + shorten(c.Arg, 120) + ")"
	}
	lower := strings.ToLower(b.ToolName)
	res, answered := x.results[b.ToolID]
	// A call that failed or was refused read or changed nothing; it is listed under
	// Errors, with its path.
	failed := answered && res.isError()
	switch {
	case c.Class == snip.Read && c.File != "":
		if !failed {
			x.addRead(c.File)
		}
	case editTools[lower] || (lower == "str_replace_editor" || lower == "str_replace_based_edit_tool") && gjson.Get(args, "command").String() != "view":
		for _, key := range []string{"file_path", "path", "filename", "target_file", "notebook_path"} {
			if p := gjson.Get(args, key).String(); p != "" {
				if !failed {
					x.addChanged(p)
				}
				break
			}
		}
	case lower == "apply_patch" || strings.Contains(args, "*** Begin Patch"):
		for _, m := range patchFile.FindAllStringSubmatch(args, -1) {
			if !failed {
				x.addChanged(strings.TrimSpace(m[1]))
			}
		}
	case lower == "todowrite":
		x.todos = nil
		gjson.Get(args, "todos").ForEach(func(_, td gjson.Result) bool {
			if st := td.Get("status").String(); st != "completed" {
				x.todos = append(x.todos, fmt.Sprintf("%s (%s)", td.Get("content").String(), st))
			}
			return true
		})
		return
	case lower == "update_plan":
		x.todos = nil
		gjson.Get(args, "plan").ForEach(func(_, st gjson.Result) bool {
			if s := st.Get("status").String(); s != "completed" {
				x.todos = append(x.todos, fmt.Sprintf("%s (%s)", st.Get("step").String(), s))
			}
			return true
		})
		return
	}
	if c.Class != snip.Read && isShell(lower) && c.Arg != "" {
		cmd := command{tool: b.ToolName, cmd: shorten(c.Arg, 200)}
		if answered {
			cmd.outcome, cmd.failed, cmd.errLine = outcome(res)
		} else {
			cmd.outcome = "no result recorded"
		}
		// A command that reads a file counts as a read too (snip classed it already).
		x.commands = append(x.commands, cmd)
		return
	}
	if answered {
		r := toolRun{call: x.lastCall, failed: failed}
		if failed {
			r.errLine = shorten(firstLine(res.text()), 240)
		}
		x.toolRuns = append(x.toolRuns, r)
	}
}

// toolRun is how a call of a tool other than a shell ended, for the Errors section.
type toolRun struct {
	call, errLine string
	failed        bool
}

func isShell(lower string) bool {
	switch lower {
	case "bash", "shell", "local_shell", "container.exec", "execute_bash", "exec_command", "shell_command",
		"run_terminal_cmd", "execute_command", "run_shell_command", "terminal":
		return true
	}
	return false
}

func (x *extractor) addRead(p string) {
	if x.seenRead == nil {
		x.seenRead = map[string]bool{}
	}
	if !x.seenRead[p] {
		x.seenRead[p] = true
		x.read = append(x.read, p)
	}
}

func (x *extractor) addChanged(p string) {
	if x.seenEdit == nil {
		x.seenEdit = map[string]bool{}
	}
	if !x.seenEdit[p] {
		x.seenEdit[p] = true
		x.changed = append(x.changed, p)
	}
}

var (
	exitCode  = regexp.MustCompile(`(?i)(?:exit(?:ed)?(?: with)? (?:code|status)|exit_code"?\s*[:=])\s*:?\s*(-?\d+)`)
	errorLine = regexp.MustCompile(`(?i)(^|\s)(error|fatal|panic|traceback|exception|fail|failed|failure|cannot|undefined|not found)\b|^E\s`)
	testLine  = regexp.MustCompile(`(?i)^(ok\s|FAIL\b|PASS\b|FAILED\b|=+ .*(passed|failed)|\d+ (passed|failed)|Tests?:\s|test result:)`)
)

// errorWords and testWords are cheap first looks before the regexps (which are slow on
// every line of long outputs).
func errorWords(lower string) bool {
	for _, w := range []string{"error", "fatal", "panic", "traceback", "exception", "fail", "cannot", "undefined", "not found"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

func testWords(lower string) bool {
	for _, w := range []string{"ok", "fail", "pass", "test"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// outcome reads how a command ended from its result: the exit code when the output says
// it (Codex writes it in metadata), a test summary line, the first error line.
func outcome(r result) (string, bool, string) {
	text := r.text()
	code := -1
	if out := gjson.Parse(text); out.IsObject() && out.Get("output").Exists() {
		// Codex shell results: {"output": "...", "metadata": {"exit_code": N}}.
		if c := out.Get("metadata.exit_code"); c.Exists() {
			code = int(c.Int())
		}
		text = out.Get("output").String()
	}
	head := scanned(text)
	if code < 0 && (strings.Contains(head, "xit") || strings.Contains(head, "XIT")) {
		if m := exitCode.FindStringSubmatch(head); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
	}
	var summary, firstErr string
	for _, line := range strings.Split(head, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lower := strings.ToLower(line)
		if testWords(lower) && testLine.MatchString(line) {
			summary = line
		}
		if firstErr == "" && (errorWords(lower) || strings.HasPrefix(line, "E ")) && errorLine.MatchString(line) {
			firstErr = line
		}
	}
	failed := r.isError() || code > 0
	var parts []string
	switch {
	case code >= 0:
		parts = append(parts, fmt.Sprintf("exit %d", code))
	case r.isError():
		parts = append(parts, "failed")
	default:
		parts = append(parts, "ran")
	}
	if summary != "" {
		parts = append(parts, shorten(summary, 160))
	}
	if failed && firstErr != "" {
		parts = append(parts, shorten(firstErr, 240))
	}
	if !failed {
		firstErr = ""
	} else if firstErr == "" {
		firstErr = shorten(firstLine(text), 240)
	}
	return strings.Join(parts, ": "), failed, firstErr
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

func (x *extractor) sections() Sections {
	s := Sections{}
	if len(x.requests) > 0 {
		s["Goal and user requests"] = append([]string{"Goal: " + x.requests[0]}, x.requests[1:]...)
	}
	s["Decisions"] = x.decisions
	s["Files read"] = x.read
	s["Files changed"] = x.changed
	// A failed command is fixed when the same command later ran without failing.
	lastOK := map[string]int{}
	for i, c := range x.commands {
		if !c.failed {
			lastOK[c.cmd] = i
		}
	}
	for i, c := range x.commands {
		s["Commands and tests"] = append(s["Commands and tests"], fmt.Sprintf("`%s` → %s", c.cmd, c.outcome))
		if c.failed {
			state := "[unresolved]"
			if j, ok := lastOK[c.cmd]; ok && j > i {
				state = "[fixed]"
			}
			s["Errors"] = append(s["Errors"], fmt.Sprintf("`%s`: %s %s", c.cmd, c.errLine, state))
		}
	}
	// A failed call is fixed when the same call (tool and file or argument) later succeeded.
	lastRunOK := map[string]int{}
	for i, r := range x.toolRuns {
		if !r.failed {
			lastRunOK[r.call] = i
		}
	}
	for i, r := range x.toolRuns {
		if r.failed {
			state := "[unresolved]"
			if j, ok := lastRunOK[r.call]; ok && j > i {
				state = "[fixed]"
			}
			s["Errors"] = append(s["Errors"], fmt.Sprintf("%s: %s %s", r.call, r.errLine, state))
		}
	}
	s["Pending tasks"] = x.todos
	if x.lastText != "" {
		s["At the cut"] = append(s["At the cut"], "The assistant had just said: "+quote(shorten(x.lastText, 500)))
	}
	if x.lastCall != "" {
		s["At the cut"] = append(s["At the cut"], "Last tool call: "+x.lastCall)
	}
	switch {
	case len(x.requests) > 0 && !x.lastRequestAnswered:
		s["Next step"] = []string{"Answer the user's latest request: " + x.requests[len(x.requests)-1]}
	case len(x.todos) > 0:
		s["Next step"] = []string{"Continue with the first pending task: " + x.todos[0]}
	default:
		s["Next step"] = []string{"Continue from the messages that follow this summary."}
	}
	return s
}
