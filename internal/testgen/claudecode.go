package testgen

import "strconv"

// claudeCodeEmitter writes a Claude Code session log the way the CLI does: one record a line,
// every message record chained to the previous one by parentUuid, one assistant turn split
// into one line per content block sharing message.id, one user line per tool result with the
// tool's structured output in toolUseResult, and non-message records in between.
type claudeCodeEmitter struct {
	g      *gen
	b      []byte
	parent string // uuid of the previous chained record, "" for none
	next   string // uuid reserved for the first user record (the snapshot names it)
	users  int
	// Of a Version session: the version and model written, and the uuid of the newest
	// reply's first line (a compaction that keeps the last turn keeps it from there).
	version, model, turnHead string
}

const ccModel = "claude-sonnet-4-5-20250929"

func (e *claudeCodeEmitter) tail() int { return 1800 } // the closing summary line and turn_duration

// head starts a chained record up to and including its "type" field.
func (e *claudeCodeEmitter) head(typ string) []byte {
	b := e.b[:0]
	b = append(b, `{"parentUuid":`...)
	if e.parent == "" {
		b = append(b, "null"...)
	} else {
		b = appendStr(b, e.parent)
	}
	if e.g.o.sub {
		b = append(b, `,"isSidechain":true`...)
		if e.g.o.agentID != "" {
			b = appendKV(append(b, ','), "agentId", e.g.o.agentID)
		}
		b = append(b, `,"userType":"external","cwd":"/repo",`...)
	} else {
		b = append(b, `,"isSidechain":false,"userType":"external","cwd":"/repo",`...)
	}
	b = appendKV(b, "sessionId", e.g.sessionID)
	b = append(b, `,"version":"`+e.version+`","gitBranch":"main",`...)
	return appendKV(b, "type", typ)
}

// stamp appends uuid and timestamp and makes this record the parent of the next.
func (e *claudeCodeEmitter) stamp(b []byte, uuid string, lo, hi int) []byte {
	if uuid == "" {
		uuid = e.g.r.uuid()
	}
	b = appendKV(append(b, ','), "uuid", uuid)
	b = appendKV(append(b, ','), "timestamp", e.g.stamp(lo, hi))
	e.parent = uuid
	return b
}

func (e *claudeCodeEmitter) write(b []byte) {
	b = append(b, '}', '\n')
	e.b = b
	e.g.out.write(b)
}

func (e *claudeCodeEmitter) begin() {
	e.version, e.model = "2.0.14", ccModel
	if e.g.o.Compactions > 0 {
		e.version = "2.1.12" // (the version that writes compact_boundary records as below)
	}
	if e.g.f.on {
		e.version, e.model = "2.1.114", "claude-opus-4-7"
	}
	if e.g.o.sub {
		return // a subagent's log holds its messages only
	}
	b := append(e.b[:0], `{"type":"permission-mode","permissionMode":"default",`...)
	b = append(appendKV(b, "sessionId", e.g.sessionID), "}\n"...)
	e.g.out.write(b)
	if e.g.f.on {
		// The session's start hook, its output given to the model as context.
		e.attach(`{"type":"hook_success","hookName":"SessionStart:startup","hookEvent":"SessionStart","content":"","stdout":"","stderr":"","exitCode":0}`, "")
		e.attach(`{"type":"hook_additional_context","content":["repo: acme/widgets, branch main, 3 open PRs"],"hookName":"SessionStart","hookEvent":"SessionStart"}`, "repo: acme/widgets, branch main, 3 open PRs")
	}
	e.next = e.g.r.uuid()
	e.snapshot(e.next)
}

// attach writes an attachment record, chained like a message but not one; sent is the
// text it puts into the prompt ("" for none).
func (e *claudeCodeEmitter) attach(attachment, sent string) {
	if e.g.o.sub {
		return
	}
	b := e.head("attachment")
	b = append(append(b, `,"attachment":`...), attachment...)
	e.write(e.stamp(b, "", 5, 900))
	if sent != "" {
		e.g.f.attached(sent)
	}
}

// snapshot writes the file-history-snapshot record Claude Code adds at each user prompt.
func (e *claudeCodeEmitter) snapshot(msgID string) {
	if e.g.o.sub {
		return
	}
	b := append(e.b[:0], `{"type":"file-history-snapshot",`...)
	b = appendKV(b, "messageId", msgID)
	b = append(b, `,"snapshot":{`...)
	b = appendKV(b, "messageId", msgID)
	b = append(b, `,"trackedFileBackups":{`...)
	seen := map[string]bool{}
	for i, p := range e.g.edited {
		if seen[p] {
			continue
		}
		if len(seen) > 0 {
			b = append(b, ',')
		}
		seen[p] = true
		b = appendKey(b, "/repo/"+p)
		b = append(b, '{')
		b = appendKV(b, "backupFileName", e.g.r.hex(8)+"@v"+strconv.Itoa(i+1))
		b = appendKI(append(b, ','), "version", i+1)
		b = appendKV(append(b, ','), "backupTime", e.g.clock.Format("2006-01-02T15:04:05.000Z"))
		b = append(b, '}')
	}
	b = append(b, "},"...)
	b = appendKV(b, "timestamp", e.g.clock.Format("2006-01-02T15:04:05.000Z"))
	b = append(b, `},"isSnapshotUpdate":`...)
	b = strconv.AppendBool(b, e.users > 0)
	b = append(b, "}\n"...)
	e.b = b
	e.g.out.write(b)
}

func (e *claudeCodeEmitter) user(m *userMsg) {
	id := ""
	if e.users == 0 {
		id = e.next
	} else {
		id = e.g.r.uuid()
		e.snapshot(id)
	}
	e.users++
	b := e.head("user")
	b = append(b, `,"message":{"role":"user","content":`...)
	b = appendUserContent(b, m)
	b = append(b, '}')
	e.write(e.stamp(b, id, 20000, 300000))
	if e.g.f.on {
		if e.users == 1 {
			var skills, lines []byte
			for i := 0; i < 24; i++ {
				skills = append(skills, "- "+e.g.r.pick(verbs)+"-"+e.g.r.pick(nouns)+": "...)
				skills = e.g.r.sentence(skills)
				skills = append(skills, '\n')
			}
			lines = append(lines, '[')
			for i, name := range []string{"AskUserQuestion", "EnterPlanMode", "NotebookEdit", "TaskCreate", "TaskList", "WebFetch", "WebSearch"} {
				if i > 0 {
					lines = append(lines, ',')
				}
				lines = appendStr(lines, name)
			}
			lines = append(lines, ']')
			e.attach(`{"type":"deferred_tools_delta","addedNames":`+string(lines)+`,"addedLines":`+string(lines)+`,"removedNames":[]}`, string(lines))
			e.attach(string(appendKV(append(appendKV([]byte(`{"type":"skill_listing",`), "content", string(skills)), ','), "skillCount", "24"))+`,"isInitial":true}`, string(skills))
		}
		e.attach(`{"type":"hook_success","hookName":"UserPromptSubmit","hookEvent":"UserPromptSubmit","content":"Status set to busy: /repo","stdout":"Status set to busy: /repo\n","stderr":"","exitCode":0}`, "Status set to busy: /repo")
	}
}

func (e *claudeCodeEmitter) assistant(t *turn) {
	g := e.g
	msgID := g.r.base62("msg_01", 22)
	reqID := g.r.base62("req_011C", 18)
	head := "" // the uuid of the turn's first line
	defer func() { e.turnHead = head }()
	line := func(block func(b []byte) []byte, lo, hi int) {
		b := e.head("assistant")
		b = append(b, `,"message":{`...)
		b = appendKV(b, "id", msgID)
		b = append(b, `,"type":"message","role":"assistant","model":"`+e.model+`","content":[`...)
		b = block(b)
		b = append(b, `],"stop_reason":null,"stop_sequence":null,"usage":{`...)
		b = appendKI(b, "input_tokens", t.usage.in)
		b = appendKI(append(b, ','), "cache_creation_input_tokens", t.usage.create)
		b = appendKI(append(b, ','), "cache_read_input_tokens", t.usage.read)
		b = appendKI(append(b, ','), "output_tokens", t.usage.out)
		b = append(b, `,"service_tier":"standard"}},`...)
		b = appendKV(b, "requestId", reqID)
		e.write(e.stamp(b, "", lo, hi))
		if head == "" {
			head = e.parent
		}
	}
	if t.thinking != "" {
		if g.f.on {
			sig := g.f.signature(t.think)
			line(func(b []byte) []byte {
				return append(appendKV(append(b, `{"type":"thinking","thinking":"",`...), "signature", sig), '}')
			}, 1500, 9000)
		} else {
			line(func(b []byte) []byte { return g.appendThinking(b, t.thinking) }, 1500, 9000)
		}
	}
	if t.text != "" {
		line(func(b []byte) []byte {
			b = append(b, `{"type":"text",`...)
			return append(appendKV(b, "text", t.text), '}')
		}, 300, 4000)
	}
	for _, c := range t.calls {
		line(func(b []byte) []byte { return appendToolUse(b, c) }, 200, 2500)
	}
	if len(t.calls) == 0 {
		e.system()
	}
}

// system writes the turn_duration record that closes a turn; it is chained but no message.
func (e *claudeCodeEmitter) system() {
	if e.g.o.sub {
		return
	}
	b := e.head("system")
	b = append(b, `,"subtype":"turn_duration",`...)
	b = appendKI(b, "durationMs", e.g.r.between(4000, 400000))
	b = append(b, `,"isMeta":false`...)
	e.write(e.stamp(b, "", 1, 40))
}

func (e *claudeCodeEmitter) results(t *turn) {
	g := e.g
	for _, c := range t.calls {
		b := e.head("user")
		b = append(b, `,"message":{"role":"user","content":[{`...)
		b = appendKV(b, "tool_use_id", c.id)
		b = append(b, `,"type":"tool_result","content":`...)
		if c.img != nil {
			b = append(appendImageBlock(append(b, '['), c.img), ']')
		} else {
			b = appendStr(b, c.text)
		}
		b = append(appendKB(append(b, ','), "is_error", c.isError), "}]}"...)
		b = e.stamp(b, "", 50, int(c.dur*1000)+100)
		b = appendKey(append(b, ','), "toolUseResult")
		b = e.toolUseResult(b, c)
		e.write(b)
		switch {
		case g.f.on:
			g.f.result(g, c.text)
			e.attach(string(appendKV([]byte(`{"type":"hook_success",`), "hookName", "PostToolUse:"+c.name))+
				`,"hookEvent":"PostToolUse","content":"Status set to busy: /repo","stdout":"Status set to busy: /repo\n","stderr":"","exitCode":0}`, "")
		case g.r.chance(0.08):
			e.attachment(c)
		}
	}
	if g.f.on && g.step%12 == 11 {
		// The task list, reminded now and then.
		var tasks []byte
		tasks = append(tasks, '[')
		for i := 1; i <= 4; i++ {
			if i > 1 {
				tasks = append(tasks, ',')
			}
			tasks = append(appendKV(append(tasks, '{'), "id", strconv.Itoa(i)), ',')
			tasks = append(appendKV(tasks, "subject", title(g.r.pick(verbs))+" the "+g.r.pick(nouns)), ',')
			tasks = append(appendKV(tasks, "status", g.r.pick([]string{"pending", "in_progress", "completed"})), '}')
		}
		tasks = append(tasks, ']')
		e.attach(`{"type":"task_reminder","content":`+string(tasks)+`,"itemCount":4}`, string(tasks))
	}
}

// toolUseResult is the tool's structured output, which Claude Code stores beside the message;
// it repeats the content, so it is a large share of a real session's bytes.
func (e *claudeCodeEmitter) toolUseResult(b []byte, c *call) []byte {
	abs := "/repo/" + c.path
	switch {
	case c.isError && c.kind == kRead:
		return appendStr(b, "Error: File does not exist.")
	case c.isError:
		return appendStr(b, "Error: "+c.text)
	case c.img != nil:
		b = append(b, `{"type":"image","file":{`...)
		b = appendKV(b, "base64", c.img.b64)
		b = append(b, `,"type":"image/png",`...)
		return append(appendKI(b, "originalSize", c.img.raw), "}}"...)
	}
	switch c.kind {
	case kRead:
		b = append(b, `{"type":"text","file":{`...)
		b = appendKV(b, "filePath", abs)
		b = appendKV(append(b, ','), "content", c.raw)
		b = appendKI(append(b, ','), "numLines", c.numLines)
		b = append(b, `,"startLine":1,`...)
		return append(appendKI(b, "totalLines", c.numLines), "}}"...)
	case kBash:
		b = append(b, '{')
		b = appendKV(b, "stdout", c.raw)
		return append(b, `,"stderr":"","interrupted":false,"isImage":false}`...)
	case kGrep:
		b = append(b, `{"mode":"content","numFiles":0,"filenames":[],`...)
		b = appendKV(b, "content", c.raw)
		return append(appendKI(append(b, ','), "numLines", c.numLines), '}')
	default: // kEdit
		b = append(b, '{')
		b = appendKV(b, "filePath", abs)
		b = appendKV(append(b, ','), "oldString", c.edit.old)
		b = appendKV(append(b, ','), "newString", c.edit.new)
		b = appendKV(append(b, ','), "originalFile", c.edit.original)
		b = append(b, `,"structuredPatch":[{`...)
		b = appendKI(b, "oldStart", c.edit.line)
		b = append(b, `,"oldLines":1,`...)
		b = appendKI(b, "newStart", c.edit.line)
		b = append(b, `,"newLines":2,"lines":[`...)
		b = appendStr(b, "-"+c.edit.old)
		b = appendStr(append(b, ','), "+"+c.edit.old)
		b = appendStr(append(b, ','), "+"+c.edit.new[len(c.edit.old)+1:])
		return append(b, `]}],"userModified":false,"replaceAll":false}`...)
	}
}

// attachment writes a PostToolUse hook record, chained like a message but not one.
func (e *claudeCodeEmitter) attachment(c *call) {
	if e.g.o.sub {
		return
	}
	b := e.head("attachment")
	b = append(b, `,"attachment":{"type":"hook_success",`...)
	b = appendKV(b, "hookName", "PostToolUse:"+c.name)
	b = appendKV(append(b, ','), "toolUseID", c.id)
	b = append(b, `,"hookEvent":"PostToolUse","content":"","stdout":"","stderr":"","exitCode":0,"command":"$CLAUDE_PROJECT_DIR/.claude/hooks/format.sh",`...)
	b = append(appendKI(b, "durationMs", e.g.r.between(20, 900)), '}')
	e.write(e.stamp(b, "", 5, 900))
}

// compact writes what Claude Code 2.1 writes when it compacts: a boundary, a new root
// naming the last record as its logical parent, and the summary hanging off it. In the
// preserving form (Options.Preserve; half the time in a Version session) the boundary
// keeps the newest turn whole (compactMetadata.preservedSegment: its first and last
// record and the summary they now follow), and the conversation goes on from that turn's
// last record, as Claude Code writes it: its reader relinks the head to the summary.
func (e *claudeCodeEmitter) compact(summary string) {
	g := e.g
	preserve := g.o.Preserve
	preTokens := g.prevReq / 4
	if g.f.on {
		g.f.preserve = g.f.r.chance(0.5) || g.o.Preserve
		preserve, preTokens = g.f.preserve, g.f.tok
	}
	tail, summaryID := e.parent, g.r.uuid()
	b := append(e.b[:0], `{"parentUuid":null,`...)
	b = appendKV(b, "logicalParentUuid", tail)
	b = append(b, `,"isSidechain":false,"userType":"external","cwd":"/repo",`...)
	b = appendKV(b, "sessionId", g.sessionID)
	b = append(b, `,"version":"`+e.version+`","gitBranch":"main","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"level":"info","compactMetadata":{"trigger":"auto",`...)
	b = appendKI(b, "preTokens", preTokens)
	if preserve {
		b = append(b, `,"preservedSegment":{`...)
		b = appendKV(b, "headUuid", e.turnHead)
		b = appendKV(append(b, ','), "anchorUuid", summaryID)
		b = appendKV(append(b, ','), "tailUuid", tail)
		b = append(b, '}')
	}
	b = append(b, '}')
	e.write(e.stamp(b, "", 500, 20000))
	text := "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n" + summary
	b = e.head("user")
	b = append(b, `,"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"role":"user","content":`...)
	b = append(appendStr(b, text), '}')
	e.write(e.stamp(b, summaryID, 50, 500))
	if preserve {
		e.parent = tail
	}
	g.preserved = preserve
	if g.f.on {
		g.f.compacted(g, text)
	}
}

func (e *claudeCodeEmitter) end() {}
