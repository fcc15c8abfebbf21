package summarize

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/toolvocab"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// This file keeps the summarizer's extraction as it was before it became incremental
// (Extractor), verbatim but for the names, as the reference the tests compare Local with.
// The shared helpers (exitCode, userWords, decisions...) stay in local.go; the regular
// expressions with which outcome read error and summary lines before it used ctx-budget's
// classifier (issue 39) are the reference's own, at the end of this file. Since
// issue 17 changed what the summary says of requests, errors and the current work, the
// reference is held to Local only where the pairing of calls with results decides: the
// files read and changed and the commands run (pairedSections); and the paths of a patch
// are read from the patch inside a call's JSON arguments (patchText), which the extraction
// before missed.

// localReference is Local before the change: it indexes every result over msgs first, so
// a call whose id is reused finds the last result with that id.
func localReference(t *transcript.Transcript, msgs []int) Sections {
	x := refExtractor{t: t, results: map[string]refResult{}}
	for _, mi := range msgs {
		x.index(mi)
	}
	for _, mi := range msgs {
		x.readMessage(mi)
	}
	return x.sections()
}

// localReferencePaired is localReference with calls paired with results the way Extractor
// pairs them: a result answers the oldest call with its id still waiting for one, or the
// next call with its id. It is what Local should give when ids are reused, where the index
// gave every call with the id the last result.
func localReferencePaired(t *transcript.Transcript, msgs []int) Sections {
	x := refExtractor{t: t, results: map[string]refResult{}, paired: map[*transcript.Block]refResult{}}
	waiting := map[string][]*transcript.Block{}
	early := map[string][]refResult{}
	for _, mi := range msgs {
		m := &t.Messages[mi]
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			switch b.Kind {
			case transcript.ToolCall:
				if rs := early[b.ToolID]; len(rs) > 0 {
					x.paired[b], early[b.ToolID] = rs[0], rs[1:]
				} else {
					waiting[b.ToolID] = append(waiting[b.ToolID], b)
				}
			case transcript.ToolResult:
				ids := b.ToolIDs
				if len(ids) == 0 {
					ids = []string{b.ToolID}
				}
				for _, id := range ids {
					r := refResult{t: t, block: b}
					if cs := waiting[id]; len(cs) > 0 {
						x.paired[cs[0]], waiting[id] = r, cs[1:]
					} else {
						early[id] = append(early[id], r)
					}
				}
			}
		}
	}
	for _, mi := range msgs {
		x.readMessage(mi)
	}
	return x.sections()
}

type refResult struct {
	t     *transcript.Transcript
	block *transcript.Block
}

func (r refResult) text() string { return resultText(r.t, r.block) }

func (r refResult) isError() bool { return r.block.IsError }

type refCommand struct {
	tool, cmd, outcome string
	failed             bool
	errLine            string
}

type refExtractor struct {
	t                   *transcript.Transcript
	results             map[string]refResult // by call id
	paired              map[*transcript.Block]refResult
	requests            []string
	decisions           []string
	read, changed       []string
	seenRead, seenEdit  map[string]bool
	commands            []refCommand
	toolRuns            []refToolRun
	todos               []string
	lastText, lastCall  string
	lastRequestAnswered bool
}

func (x *refExtractor) index(mi int) {
	m := &x.t.Messages[mi]
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		if b.Kind != transcript.ToolResult {
			continue
		}
		r := refResult{t: x.t, block: b}
		ids := b.ToolIDs
		if len(ids) == 0 {
			ids = []string{b.ToolID}
		}
		for _, id := range ids {
			x.results[id] = r
		}
	}
}

func (x *refExtractor) readMessage(mi int) {
	m := &x.t.Messages[mi]
	if m.Summary {
		return // folded separately
	}
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		switch {
		case b.Agent:
			// the agent's own text in a user message: not a request
		case b.Kind == transcript.Text && m.Role == "user":
			if text := strings.TrimSpace(x.t.BodyText(b)); userWords(x.t.Format, text) != "" {
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

func (x *refExtractor) call(b *transcript.Block) {
	args := x.t.BodyText(b)
	c := snip.Classify(b.ToolName, args, snip.Tools{})
	x.lastCall = b.ToolName
	if c.Arg != "" {
		x.lastCall += "(" + shorten(c.Arg, 120) + ")"
	}
	lower := strings.ToLower(b.ToolName)
	res, answered := x.results[b.ToolID]
	if x.paired != nil {
		res, answered = x.paired[b]
	}
	// A call that failed or was refused read or changed nothing; it is listed under
	// Errors, with its path.
	failed := answered && res.isError()
	switch {
	case c.Class == snip.Read && c.File != "":
		if !failed {
			x.addRead(c.File)
		}
	case toolvocab.Edit(lower) || toolvocab.Editor(lower) && gjson.Get(args, "command").String() != toolvocab.EditorView:
		for _, key := range toolvocab.PathKeys {
			if p := gjson.Get(args, key).String(); p != "" {
				if !failed {
					x.addChanged(p)
				}
				break
			}
		}
	case lower == "apply_patch" || strings.Contains(args, "*** Begin Patch"):
		for _, m := range patchFile.FindAllStringSubmatch(patchText(args), -1) {
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
		cmd := refCommand{tool: b.ToolName, cmd: shorten(c.Arg, 200)}
		if answered {
			cmd.outcome, cmd.failed, cmd.errLine = refOutcome(res)
		} else {
			cmd.outcome = "no result recorded"
		}
		// A command that reads a file counts as a read too (snip classed it already).
		x.commands = append(x.commands, cmd)
		return
	}
	if answered {
		r := refToolRun{call: x.lastCall, failed: failed}
		if failed {
			r.errLine = shorten(firstLine(res.text()), 240)
		}
		x.toolRuns = append(x.toolRuns, r)
	}
}

type refToolRun struct {
	call, errLine string
	failed        bool
}

func (x *refExtractor) addRead(p string) {
	if x.seenRead == nil {
		x.seenRead = map[string]bool{}
	}
	if !x.seenRead[p] {
		x.seenRead[p] = true
		x.read = append(x.read, p)
	}
}

func (x *refExtractor) addChanged(p string) {
	if x.seenEdit == nil {
		x.seenEdit = map[string]bool{}
	}
	if !x.seenEdit[p] {
		x.seenEdit[p] = true
		x.changed = append(x.changed, p)
	}
}

func refOutcome(r refResult) (string, bool, string) {
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

func (x *refExtractor) sections() Sections {
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

// The reference's own reading of an output's lines, as outcome read them before it used
// ctx-budget's classifier (issue 39).
var (
	errorLine = regexp.MustCompile(`(?i)(^|\s)(error|fatal|panic|traceback|exception|fail|failed|failure|cannot|undefined|not found|no module named)\b|^E\s`)
	testLine  = regexp.MustCompile(`(?i)^(ok\s|FAIL\b|PASS\b|FAILED\b|=+ .*(passed|failed)|\d+ (passed|failed)|Tests?:\s|test result:)`)
)

// errorWords and testWords are cheap first looks before the regexps (which are slow on
// every line of long outputs).
func errorWords(lower string) bool {
	for _, w := range []string{"error", "fatal", "panic", "traceback", "exception", "fail", "cannot", "undefined", "not found", "no module named"} {
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
