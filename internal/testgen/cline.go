package testgen

import (
	"strconv"
	"strings"
)

// clineEmitter writes a Cline task history (api_conversation_history.json): a bare array
// of Anthropic messages, without the system prompt, whose assistant messages call tools
// with tool_use blocks and whose tool results come back as user text labelled with the
// call ("[read_file for 'x'] Result:" and the result on the next line), each user message
// ending with the <environment_details> block Cline appends to every turn. The first
// message wraps the request in <task>, follow-ups come as <feedback>.
type clineEmitter struct {
	g *gen
	l list
}

func (e *clineEmitter) tail() int { return 3 }

func (e *clineEmitter) begin() {
	e.l.g = e.g
	e.g.out.write([]byte{'['})
}

// environment is Cline's per-turn <environment_details> block.
func (e *clineEmitter) environment() string {
	g := e.g
	var b strings.Builder
	b.WriteString("<environment_details>\n# VSCode Visible Files\n")
	visible := "internal/server/handler.go"
	if n := len(g.readOrder); n > 0 {
		visible = g.readOrder[n-1]
	}
	b.WriteString(visible)
	b.WriteString("\n\n# VSCode Open Tabs\n")
	for i, p := range g.readOrder {
		if i == 6 {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
	}
	b.WriteString("\n\n# Current Time\n")
	b.WriteString(g.clock.Format("1/2/2006, 3:04:05 PM (UTC, UTC+0:00)"))
	b.WriteString("\n\n# Context Window Usage\n")
	b.WriteString(strconv.Itoa(g.ctx/3) + " / 200K tokens used (" + strconv.Itoa(min(99, g.ctx/3/2000)) + "%)")
	b.WriteString("\n\n# Current Mode\nACT MODE\n</environment_details>")
	return b.String()
}

func (e *clineEmitter) textBlock(b []byte, text string) []byte {
	b = append(b, `{"type":"text",`...)
	return append(appendKV(b, "text", text), '}')
}

func (e *clineEmitter) user(m *userMsg) {
	b := e.l.start()
	b = append(b, `{"role":"user","content":[`...)
	if e.l.count == 1 {
		b = e.textBlock(b, "<task>\n"+m.text+"\n</task>")
	} else {
		b = e.textBlock(b, "[attempt_completion] Result:\nThe user has provided feedback on the results. Consider their input to continue the task, and then attempt completion again.\n<feedback>\n"+m.text+"\n</feedback>")
	}
	for _, p := range m.imgs {
		b = appendImageBlock(append(b, ','), p)
	}
	b = e.textBlock(append(b, ','), e.environment())
	e.l.flush(append(b, "]}"...))
}

func (e *clineEmitter) assistant(t *turn) {
	b := e.l.start()
	b = append(b, `{"role":"assistant","content":[`...)
	n := 0
	if t.text != "" {
		b = e.textBlock(b, t.text)
		n++
	}
	for _, c := range t.calls {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendToolUse(b, c)
	}
	e.l.flush(append(b, "]}"...))
}

// label is the text Cline puts before a tool's result: the tool and its main parameter.
func clineLabel(c *call) string {
	param := c.path
	switch c.name {
	case "execute_command":
		param = c.cmd
	case "search_files":
		param = c.pattern + "' in '*.go"
	}
	return "[" + c.name + " for '" + param + "'] Result:"
}

func (e *clineEmitter) results(t *turn) {
	b := e.l.start()
	b = append(b, `{"role":"user","content":[`...)
	for i, c := range t.calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.textBlock(b, clineLabel(c)+"\n"+c.text)
		if c.img != nil {
			b = appendImageBlock(append(b, ','), c.img)
		}
	}
	b = e.textBlock(append(b, ','), e.environment())
	e.l.flush(append(b, "]}"...))
}

func (e *clineEmitter) compact(string) {}

func (e *clineEmitter) end() { e.g.out.write([]byte("]\n")) }

// renderCline gives a call Cline's tool names and result texts, and returns its input
// without the closing brace.
func (g *gen) renderCline(c *call) []byte {
	var in []byte
	switch c.kind {
	case kRead, kImage:
		c.name = "read_file"
		in = appendKV(append(in, '{'), "path", c.path)
		c.text = c.raw
		if c.isError {
			c.text = "The tool execution failed with the following error:\n<error>\nError reading file: ENOENT: no such file or directory, open '/repo/" + c.path + "'\n</error>"
		}
	case kBash:
		c.name = "execute_command"
		in = appendKV(append(in, '{'), "command", c.cmd)
		in = appendKB(append(in, ','), "requires_approval", false)
		c.text = "Command executed.\nOutput:\n" + c.raw
	case kGrep:
		c.name = "search_files"
		in = appendKV(append(in, '{'), "path", "internal")
		in = appendKV(append(in, ','), "regex", c.pattern)
		in = appendKV(append(in, ','), "file_pattern", "*.go")
		c.text = "Found " + strconv.Itoa(c.numLines) + " results.\n\n" + c.raw
	case kEdit:
		c.name = "replace_in_file"
		in = appendKV(append(in, '{'), "path", c.path)
		in = appendKV(append(in, ','), "diff", "------- SEARCH\n"+c.edit.old+"\n=======\n"+c.edit.new+"\n+++++++ REPLACE")
		if g.r.chance(0.15) {
			c.isError = true
			c.text = "The user denied this operation."
			break
		}
		c.text = "The content was successfully saved to " + c.path + ".\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path=\"" + c.path + "\">\n" + c.raw + "\n</final_file_content>\n"
	}
	return in
}
