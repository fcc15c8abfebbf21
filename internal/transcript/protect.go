package transcript

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonlit"
)

// Pinned context is what a client sends among the messages as standing instructions rather
// than as history. No lossy tier may change it, drop it or fold it into a summary (DESIGN
// §4.6); it is recognised by each client's own tags, never by its size or place alone:
//
//   - the system prompt, wherever a format keeps it (a header, system messages), and the
//     tools (Transcript.Tools), in every format;
//   - Codex (codex rollouts, Responses requests, Chat Completions requests): developer
//     messages whole (the permissions and sandbox rules, collaboration mode, skills...), and
//     the user texts Codex writes for the model: "# AGENTS.md instructions for DIR" up to
//     "</INSTRUCTIONS>", <user_instructions> (older versions), <environment_context>;
//   - Claude Code (session JSONL, Anthropic requests): the <system-reminder> texts of the
//     first user message (CLAUDE.md under "# claudeMd", and the like). Reminders added to a
//     later message belong to that turn and go with it.
//
// A text is pinned when it opens with a tag's start and ends with its end (white space
// aside, ASCII case ignored, as Codex matches its own fragments); a message whose every
// block is pinned is pinned whole (Message.Pinned). Readers mark what they read (markPinned)
// and settlePinned keeps, where a format pins only in the first user message, that one's.

// pinTag is how a client marks a text it sends as context.
type pinTag struct{ open, close string }

var (
	codexPins = []pinTag{
		{"# AGENTS.md instructions for ", "</INSTRUCTIONS>"},
		{"<user_instructions>", "</user_instructions>"},
		{"<environment_context>", "</environment_context>"},
	}
	claudeCodePins = []pinTag{{"<system-reminder>", "</system-reminder>"}}
)

// pinsOf is the tags that pin a user text in a document of the format, and whether they
// pin only in the conversation's first user message.
func pinsOf(f Format) (tags []pinTag, firstOnly bool) {
	switch f {
	case Codex, Responses, OpenAI:
		return codexPins, false
	case ClaudeCode, Anthropic:
		return claudeCodePins, true
	}
	return nil, false
}

// markPinned marks the pinned texts of m, a message of a document of format f read from
// doc (whose first byte is at document offset base), and m itself when all of it is.
func markPinned(f Format, m *Message, doc string, base int) {
	tags, _ := pinsOf(f)
	if len(tags) == 0 || m.Role != "user" || m.Header || len(m.Blocks) == 0 {
		return
	}
	whole := true
	for i := range m.Blocks {
		b := &m.Blocks[i]
		if b.Kind == Text && !b.BodyJSON && !b.Body.IsZero() && pinnedLiteral(doc[b.Body.Start-base:b.Body.End-base], tags) {
			b.Pinned = true
		} else {
			whole = false
		}
	}
	m.Pinned = whole
}

// markPinnedMessages marks the pinned texts of a document read whole (a JSON document).
func markPinnedMessages(t *Transcript) {
	_, firstOnly := pinsOf(t.Format)
	for i := range t.Messages {
		m := &t.Messages[i]
		markPinned(t.Format, m, t.Doc, t.Base)
		if firstOnly && m.Role == "user" && !m.Header {
			break // (settlePinned would clear the others)
		}
	}
}

// markCodexItem marks the pinned texts of an item of a Codex rollout (raw is its record's
// line, at document offset base). The instructions a compaction carries in its replacement
// history (Codex puts its initial context there, ctx-summarize the pinned items) are not
// the history it stands for: they are no Summary.
func markCodexItem(m *Message, raw string, base int) {
	markPinned(Codex, m, raw, base)
	m.Summary = m.Summary && !m.Instructions()
}

// pinnedLiteral says whether a JSON string literal's text is one a tag pins. Only the
// start of the literal is decoded unless it opens with a tag.
func pinnedLiteral(raw string, tags []pinTag) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	head := raw[1:min(len(raw)-1, 256)]
	if strings.IndexByte(head, '\\') >= 0 {
		head = string(jsonlit.AppendDecoded(nil, head)) // an escape cut short at the end is left out
	}
	head = strings.TrimLeft(head, " \t\r\n")
	for _, tg := range tags {
		if len(head) < len(tg.open) || !strings.EqualFold(head[:len(tg.open)], tg.open) {
			continue
		}
		text := strings.TrimRight(decodeString(raw), " \t\r\n")
		if len(text) >= len(tg.close) && strings.EqualFold(text[len(text)-len(tg.close):], tg.close) {
			return true
		}
	}
	return false
}

// settlePinned keeps, in a format whose tags pin only in the first user message, the marks
// of that message alone.
func settlePinned(f Format, ms []Message) {
	if _, firstOnly := pinsOf(f); !firstOnly {
		return
	}
	first := true
	for i := range ms {
		m := &ms[i]
		if m.Header || m.Role != "user" {
			continue
		}
		if first {
			first = false
			continue
		}
		m.Pinned = false
		if !m.HoldsPinned() {
			continue
		}
		// A copy: the blocks are the record's as its reader read them, which Reparse
		// reuses where the message is the first user message of a later version.
		m.Blocks = slices.Clone(m.Blocks)
		for bi := range m.Blocks {
			m.Blocks[bi].Pinned = false
		}
	}
}

// Instructions reports whether m is instructions the client sends rather than
// conversation: the system prompt (a header), a system or developer message, or a message
// that is pinned context whole. No lossy tier alters one (Protected).
func (m *Message) Instructions() bool {
	return m.Header || m.Role == "system" || m.Role == "developer" || m.Pinned
}

// HoldsPinned reports whether any of m is pinned context (Message.Pinned, Block.Pinned).
func (m *Message) HoldsPinned() bool {
	if m.Pinned {
		return true
	}
	for i := range m.Blocks {
		if m.Blocks[i].Pinned {
			return true
		}
	}
	return false
}

// Protected returns the messages no lossy tier may alter (DESIGN §4.6): system prompts
// and instructions, messages that are pinned context whole, the newest user message and
// the newest assistant message. A summary (or ctx-trim's note) stands for history, not for
// what the user asks now: it is the newest user message only when there is no other.
// Pinned texts inside a message that is not pinned whole (Claude Code's first message) are
// the blocks a tier leaves alone or carries over (HoldsPinned).
func (t *Transcript) Protected() map[int]bool {
	p := map[int]bool{}
	user, summary, assistant := -1, -1, -1
	for i, m := range t.Messages {
		switch {
		case m.Instructions():
			p[i] = true
		case m.Role == "user" && m.Summary:
			summary = i
		case m.Role == "user":
			user = i
		case m.Role == "assistant":
			assistant = i
		}
	}
	if user < 0 {
		user = summary
	}
	p[user], p[assistant] = true, true
	delete(p, -1)
	return p
}
