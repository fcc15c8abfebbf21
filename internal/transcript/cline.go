package transcript

import "strings"

// Cline and Roo Code keep a task's history in api_conversation_history.json: a bare array
// of Anthropic messages. The assistant's tool calls are tool_use blocks (or, in older
// versions and with models without native tools, XML in its text), but their results come
// back in the next user message as text, labelled with the call:
//
//	[read_file for 'src/x.ts'] Result:
//	<the file>
//
// Newer versions write the label and the result as one text (label, line break, result);
// older ones write the label alone in one text block and the result in the next. What
// the tool said may be a refusal ("The user denied this operation.") or an error ("The
// tool execution failed with the following error: ..."). User messages also carry an
// <environment_details> block the agent appends to every turn.
//
// Parsing reads the array as Anthropic, then markCline turns each labelled text into a
// ToolResult (Type "text", ToolName from the label, ToolID of the tool_use it answers when
// there is one) so that every tier treats it as the tool result it is, and marks the
// agent's own texts (labels, environment details) as Agent.

// clineLabelMax bounds the label search: a label quotes a parameter (a command, a
// question), which can be long but not a file's worth.
const clineLabelMax = 4096

// clineLabel parses the label a Cline tool result starts with, "[name]" or
// "[name for '...'] Result:", followed by a line break or nothing. It returns the tool's
// name and the length of the label with its line break (0 when text has no label).
func clineLabel(text string) (name string, n int) {
	if len(text) < len("[x] Result:") || text[0] != '[' {
		return "", 0
	}
	end := 1
	for end < len(text) && isToolNameByte(text[end]) {
		end++
	}
	if end == 1 || end >= len(text) || (text[end] != ']' && text[end] != ' ') {
		return "", 0
	}
	name = text[1:end]
	const tail = "] Result:"
	search := text[end:min(len(text), clineLabelMax)]
	for at := 0; ; {
		k := strings.Index(search[at:], tail)
		if k < 0 {
			return "", 0
		}
		stop := end + at + k + len(tail)
		switch {
		case stop == len(text):
			return name, stop
		case text[stop] == '\n':
			return name, stop + 1
		case text[stop] == '\r' && stop+1 < len(text) && text[stop+1] == '\n':
			return name, stop + 2
		}
		at += k + len(tail)
	}
}

func isToolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// clineUserTools are the tools whose result is what the user answered.
var clineUserTools = map[string]bool{
	"ask_followup_question": true, "attempt_completion": true, "plan_mode_respond": true, "new_task": true,
}

// clineAgentTags open texts the agent writes into user messages for the model, not the
// user's words.
var clineAgentTags = []string{"<environment_details>"}

// clineError reports whether a tool's text says it did not run as asked: the user
// refused it, or it failed.
func clineError(text string) bool {
	for _, p := range []string{"The user denied this operation", "The tool execution failed", "Error"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// markCline reads the tool results out of a Cline history parsed as Anthropic (see the
// comment at the top of this file).
func markCline(t *Transcript) {
	// Calls still waiting for their result, oldest first: a labelled text answers the
	// oldest one, as a tool_result would.
	var waiting []string
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Header {
			continue
		}
		if m.Role == "assistant" {
			// Results answer the message right before them: a call left unanswered
			// there (Cline runs one tool a message) answers nothing later.
			waiting = waiting[:0]
			for bi := range m.Blocks {
				if b := &m.Blocks[bi]; b.Kind == ToolCall && b.Type == "tool_use" {
					waiting = append(waiting, b.ToolID)
				}
			}
			continue
		}
		if m.Role != "user" {
			continue
		}
		for bi := 0; bi < len(m.Blocks); bi++ {
			b := &m.Blocks[bi]
			switch {
			case b.Kind == ToolResult:
				// A real tool_result (Cline writes them when it knows the call's id, with
				// the label in front of the text; so does ctx-repair).
				for k, id := range waiting {
					if id == b.ToolID {
						waiting = append(waiting[:k], waiting[k+1:]...)
						break
					}
				}
				if len(b.Parts) == 0 && !b.BodyJSON && !b.Body.IsZero() {
					if name, n := clineLabel(t.BodyText(b)); n > 0 {
						b.Head, b.User = n, clineUserTools[name]
						if b.ToolName == "" {
							b.ToolName = name
						}
					}
				}
				continue
			case b.Kind != Text || b.BodyJSON || b.Body.IsZero():
				continue
			}
			raw := t.Slice(b.Body)
			if len(raw) < 2 || raw[1] != '[' && raw[1] != '<' {
				continue
			}
			text := decodeString(raw)
			if agentText(text) {
				b.Agent = true
				continue
			}
			name, n := clineLabel(text)
			if n == 0 {
				continue
			}
			res := b
			if n == len(text) || strings.TrimSpace(text[n:]) == "" {
				// The label alone: the result is the next text block.
				if bi+1 >= len(m.Blocks) {
					continue
				}
				next := &m.Blocks[bi+1]
				if next.Kind != Text || next.BodyJSON {
					continue
				}
				text = t.BodyText(next)
				if _, k := clineLabel(text); k > 0 || agentText(text) {
					continue // no result text: the label stands alone
				}
				b.Agent = true
				bi++
				res = next
				res.Lead = b.Span
			} else {
				res.Head = n
				text = text[n:]
			}
			res.Kind, res.ToolName, res.IsError, res.User = ToolResult, name, clineError(text), clineUserTools[name]
			if len(waiting) > 0 {
				res.ToolID = waiting[0]
				waiting = waiting[1:]
			}
		}
	}
}

func agentText(text string) bool {
	for _, tag := range clineAgentTags {
		if strings.HasPrefix(text, tag) {
			return true
		}
	}
	return false
}

// clineSignal reports whether a user message's text block (a JSON string literal) is a
// Cline tool result: what tells a Cline history from a plain Anthropic one.
func clineSignal(raw string) bool {
	if len(raw) < 2 || raw[1] != '[' {
		return false
	}
	_, n := clineLabel(decodeString(raw[:min(len(raw), clineLabelMax)] + suffixQuote(raw)))
	return n > 0
}

// suffixQuote closes a literal cut short for clineSignal (decodeString needs the quote).
func suffixQuote(raw string) string {
	if len(raw) <= clineLabelMax {
		return ""
	}
	return `"`
}

// LabelOf is the label a result's body starts with (its first Head bytes), decoding no
// more of the body than that takes; "" when it has none.
func (t *Transcript) LabelOf(b *Block) string {
	if b.Head <= 0 || b.BodyJSON || b.Body.IsZero() {
		return ""
	}
	raw := t.Slice(b.Body)
	// An escape spells at most 4 decoded bytes in 12 (a surrogate pair), so 6 bytes of
	// literal a decoded byte are always enough; a cut escape only ends the decoding early.
	if lim := 6*b.Head + 1; lim < len(raw)-1 {
		raw = raw[:lim] + `"`
	}
	text := decodeString(raw)
	if len(text) < b.Head {
		return ""
	}
	return text[:b.Head]
}

// SplitLabel returns the label a tier keeps when it replaces a result's text (the first
// head bytes of text, the result's decoded body, where head is its Block.Head) and the
// rest, which it may replace; no label when head does not fit in text.
func SplitLabel(text string, head int) (label, rest string) {
	if head <= 0 || head > len(text) {
		return "", text
	}
	return text[:head], text[head:]
}
