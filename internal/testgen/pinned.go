package testgen

import "strings"

// Pinned context (Options.Pinned): the standing instructions a client sends among the
// messages, shaped and tagged as the current clients write them, in words of our own.
// Codex 0.171 opens a session with one developer message (its permissions and sandbox
// rules, then its skills, one input_text each) and one user message holding AGENTS.md
// ("# AGENTS.md instructions for DIR" ... "</INSTRUCTIONS>") and <environment_context>;
// its session_meta carries base_instructions. Claude Code 2.x puts CLAUDE.md and its other
// reminders, each a <system-reminder> text block, at the head of the first user message.

// pinned is what a session pins, made once per session when Options.Pinned is set.
type pinned struct {
	permissions, skills string // Codex's developer message
	agents, env         string // Codex's contextual user message
	claudeMd, reminder  string // Claude Code's first-message reminders
}

func (g *gen) makePinned() *pinned {
	r := &g.r
	p := &pinned{}
	p.permissions = "<permissions instructions>\n" +
		"The sandbox decides which files may be read or written. `sandbox_mode` is `workspace-write`: reading is allowed everywhere, writing only under `cwd` and the writable roots; writing elsewhere needs the user's approval. Network access is restricted.\n" +
		"# Asking for more\n" +
		"A command the sandbox blocks may be run again outside it once the user approves. To ask, set `sandbox_permissions` to `\"require_escalated\"` and say in `justification`, in one short question, why the command needs it. Ask only when the task cannot be done inside the sandbox; never try to get around an approval with another tool.\n" +
		" The writable root is `/repo`.\n" +
		"</permissions instructions>"
	var sk strings.Builder
	sk.WriteString("<skills_instructions>\n## Skills\nA skill is a folder of instructions for one kind of task. Open its SKILL.md when the task matches its description.\n")
	for _, name := range []string{"release-notes", "db-migration", "flaky-test"} {
		sk.WriteString("- " + name + ": ")
		sk.Write(r.sentence(nil))
		sk.WriteString(" (file: /home/dev/.codex/skills/" + name + "/SKILL.md)\n")
	}
	sk.WriteString("</skills_instructions>")
	p.skills = sk.String()

	// AGENTS.md: the repository's own rules, several KB as real ones are.
	var a []byte
	a = append(a, "# Repository guidelines\n\n"...)
	for _, section := range []string{"Layout", "Build and test", "Style", "Commits and pull requests", "Security"} {
		a = append(a, "## "+section+"\n\n"...)
		for i := r.between(6, 12); i > 0; i-- {
			a = append(a, "- "...)
			a = r.sentence(a)
			a = append(a, '\n')
		}
		a = append(a, '\n')
		a = r.paragraph(a, r.between(3, 6))
		a = append(a, "\n\n"...)
	}
	p.agents = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n" + strings.TrimSpace(string(a)) + "\n</INSTRUCTIONS>"
	p.env = "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n  <current_date>" + g.clock.Format("2006-01-02") +
		"</current_date>\n  <timezone>Europe/Berlin</timezone>\n  <filesystem><workspace_roots><root>/repo</root></workspace_roots></filesystem>\n</environment_context>"

	var c []byte
	c = append(c, "<system-reminder>\nUse the context below where it helps with the user's request:\n# claudeMd\nInstructions for this codebase and from the user follow. Follow them; they override the defaults.\n\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\n"...)
	for _, section := range []string{"Commands", "Architecture", "Conventions"} {
		c = append(c, "## "+section+"\n\n"...)
		for i := r.between(5, 10); i > 0; i-- {
			c = append(c, "- "...)
			c = r.sentence(c)
			c = append(c, '\n')
		}
		c = append(c, '\n')
	}
	c = append(c, "\nThis context may not matter for the task at hand; answer from it only where it does.\n</system-reminder>\n"...)
	p.claudeMd = string(c)
	p.reminder = "<system-reminder>\nToday's date is " + g.clock.Format("2006-01-02") + ". The todo list is empty; use TodoWrite when a task has several steps.\n</system-reminder>"
	return p
}

// appendDeveloperItem writes Codex's developer message as a Responses item.
func (p *pinned) appendDeveloperItem(b []byte) []byte {
	b = append(b, `{"type":"message","role":"developer","content":[{"type":"input_text",`...)
	b = append(appendKV(b, "text", p.permissions), `},{"type":"input_text",`...)
	return append(appendKV(b, "text", p.skills), "}]}"...)
}

// appendContextItem writes Codex's contextual user message as a Responses item.
func (p *pinned) appendContextItem(b []byte) []byte {
	b = append(b, `{"type":"message","role":"user","content":[{"type":"input_text",`...)
	b = append(appendKV(b, "text", p.agents), `},{"type":"input_text",`...)
	return append(appendKV(b, "text", p.env), "}]}"...)
}
