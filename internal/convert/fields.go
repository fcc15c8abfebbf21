package convert

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// carried lists, for each kind of object the readers take apart, the members they carry
// into the neutral form, plus members that mean nothing outside the one response they came
// from (a Responses item's server id and status, a streamed tool call's index, Claude
// Code's note of who made a call). Any other
// member of such an object is left out of the converted document, and fieldLosses reports
// it by name: nothing is dropped in silence. Objects kept whole as raw JSON (a thinking
// block, a Responses reasoning item, a server tool block) are not listed: when the target
// takes them they keep every member, and when it does not the whole object is a loss.
var carried = map[string][]string{
	"anthropic message":     {"role", "content"},
	"anthropic text":        {"type", "text"},
	"anthropic tool_use":    {"type", "id", "name", "input", "caller"},
	"anthropic tool_result": {"type", "tool_use_id", "content", "is_error"},
	"anthropic image":       {"type", "source"},

	"openai message":   {"role", "content", "tool_calls", "tool_call_id", "tool_call_ids", "reasoning_content", "function_call", "refusal"},
	"openai tool":      {"role", "content", "tool_call_id", "tool_call_ids", "name"},
	"openai call":      {"id", "type", "function", "custom", "index"},
	"openai text":      {"type", "text"},
	"openai refusal":   {"type", "refusal"},
	"openai image_url": {"type", "image_url"},

	"responses message":                 {"type", "role", "content", "id", "status"},
	"responses function_call":           {"type", "call_id", "name", "arguments", "id", "status"},
	"responses custom_tool_call":        {"type", "call_id", "name", "input", "id", "status"},
	"responses function_call_output":    {"type", "call_id", "output", "id", "status"},
	"responses custom_tool_call_output": {"type", "call_id", "output", "id", "status"},
	"responses input_text":              {"type", "text"},
	"responses output_text":             {"type", "text"},
	"responses refusal":                 {"type", "refusal"},
	"responses input_image":             {"type", "image_url", "detail", "file_id"},
}

// sweAgentOwn are the members SWE-agent adds to the messages of a trajectory's history for
// its own use (which agent spoke, its parsed thought and action, the kind of step); it
// sends the model role and content only, so leaving them out loses nothing the model saw.
var sweAgentOwn = []string{"agent", "thought", "action", "message_type", "is_demo"}

// fieldLosses adds to fieldNames the members of t's messages and content parts that the
// readers do not carry (see carried), each name once, in the order first seen, and counts
// each occurrence in fields. The members
// of a saved transcript's records around the message (Claude Code's uuid and usage, a Codex
// rollout's timestamp) are the agent's bookkeeping, not conversation, and are not looked at.
func (c *conversation) fieldLosses(t *transcript.Transcript) {
	fam := t.Format.Wire()
	prefix := map[transcript.Wire]string{transcript.MessagesWire: "anthropic ", transcript.ChatWire: "openai ", transcript.ResponsesWire: "responses "}[fam]
	if c.fieldSeen == nil {
		c.fieldSeen = map[string]bool{}
	}
	seen := c.fieldSeen
	check := func(kind, raw string) {
		keep, ok := carried[prefix+kind]
		if !ok || raw == "" || raw[0] != '{' {
			return
		}
		if t.ArrayPath == "history" && (kind == "message" || kind == "tool") {
			keep = append(slices.Clip(keep), sweAgentOwn...)
		}
		eachMember(raw, func(name string, empty bool) {
			if !slices.Contains(keep, name) && !empty {
				c.fields++
				if !seen[name] {
					seen[name] = true
					c.fieldNames = append(c.fieldNames, name)
				}
			}
		})
	}
	var blocks func(bs []transcript.Block)
	blocks = func(bs []transcript.Block) {
		for bi := range bs {
			b := &bs[bi]
			kind := b.Type
			switch {
			case fam == transcript.ChatWire && b.Kind == transcript.ToolCall && b.Type != "function_call":
				kind = "call"
			case fam == transcript.ChatWire && b.Kind == transcript.ToolResult:
				kind = "" // the message itself, checked as a tool message
			case fam == transcript.ResponsesWire && (b.Kind == transcript.ToolCall || b.Kind == transcript.ToolResult):
				kind = "" // the item itself, checked as an item
			}
			if kind != "" {
				check(kind, t.Slice(b.Span))
			}
			blocks(b.Parts)
		}
	}
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if !t.Format.JSONL() && !m.Header {
			raw := t.Slice(m.Span)
			switch fam {
			case transcript.MessagesWire:
				check("message", raw)
			case transcript.ChatWire:
				kind := "message"
				if m.Role == "tool" || m.Role == "function" {
					kind = "tool"
				}
				check(kind, raw)
			case transcript.ResponsesWire:
				typ := gjson.Get(raw, "type").String()
				if typ == "" && strings.HasPrefix(raw, "{") {
					typ = "message"
				}
				check(typ, raw)
			}
		} else if fam == transcript.ResponsesWire {
			// A Codex rollout's payload is a Responses item as the API returned it.
			raw := t.Slice(m.Span)
			check(gjson.Get(raw, "type").String(), raw)
		}
		blocks(m.Blocks)
	}
}

// eachMember calls fn with the name of each member of the JSON object raw, in order, and
// whether its value carries nothing (null, [] or {}), without decoding the values:
// gjson's ForEach decoded every string value (a text block's whole text, unescaped) only
// for its name to be looked at, which was most of the time fieldLosses took. raw is valid
// JSON (it was parsed); anything else ends the walk.
func eachMember(raw string, fn func(name string, empty bool)) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		if i >= len(raw) || raw[i] != '"' {
			return // the end of the object
		}
		end := stringEnd(raw, i)
		if end < 0 {
			return
		}
		name := raw[i+1 : end-1]
		if strings.IndexByte(name, '\\') >= 0 {
			name = gjson.Parse(raw[i:end]).String()
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		if vend < 0 {
			return
		}
		fn(name, empty(raw[i:vend]))
		i = vend
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at s[i] (a quote), or -1.
func stringEnd(s string, i int) int {
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote is escaped when an odd number of backslashes comes before it.
		n := 0
		for n < j-i-1 && s[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// valueEnd is the index just past the JSON value that starts at s[i], or -1.
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := stringEnd(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // a number, true, false or null
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != '\r' {
		j++
	}
	return j
}

// empty reports whether a member's value, as JSON text, carries nothing: null, [] or {}.
func empty(v string) bool {
	switch {
	case v == "null":
		return true
	case len(v) >= 2 && (v[0] == '[' || v[0] == '{'):
		return strings.TrimSpace(v[1:len(v)-1]) == ""
	}
	return false
}
