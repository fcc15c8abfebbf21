package transcript

import (
	"strings"

	"github.com/tidwall/gjson"
)

// codexRecordTypes are the record types of a Codex rollout file.
var codexRecordTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

// recordFormat recognises a single JSON object that is one record of a JSONL transcript
// (a session log with one line so far).
func recordFormat(obj gjson.Result) Format {
	typ := obj.Get("type").String()
	if typ == "" {
		return ""
	}
	if codexRecordTypes[typ] && obj.Get("payload").Exists() {
		return Codex
	}
	if obj.Get("uuid").Exists() || obj.Get("sessionId").Exists() || obj.Get("parentUuid").Exists() ||
		typ == "summary" || typ == "file-history-snapshot" || typ == "permission-mode" {
		return ClaudeCode
	}
	return ""
}

// detectJSONL decides between the two JSONL formats from the first records that tell.
func detectJSONL(doc string, lines []Record) Format {
	for i, l := range lines {
		if i > 200 {
			break
		}
		if f := recordFormat(gjson.Parse(doc[l.Span.Start:l.Span.End])); f != "" {
			return f
		}
	}
	return ""
}

// responsesItemTypes are Responses API item types that no other format uses.
var responsesItemTypes = map[string]bool{
	"function_call": true, "function_call_output": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "reasoning": true, "local_shell_call": true,
	"local_shell_call_output": true, "web_search_call": true, "file_search_call": true,
	"computer_call": true, "computer_call_output": true, "image_generation_call": true,
	"code_interpreter_call": true, "mcp_call": true, "mcp_list_tools": true, "item_reference": true,
}

// detectJSON scores the evidence for each JSON format. It looks at the wrapper and at most
// the first 200 messages: a signal is any field or block type that only one format uses.
func detectJSON(root, arr gjson.Result) Format {
	var anth, oai, resp int
	if root.IsObject() {
		if root.Get("input").Exists() || root.Get("instructions").Exists() {
			resp += 3
		}
		if root.Get("system").Exists() {
			anth += 3
		}
		if root.Get("history").Exists() {
			oai += 3
		}
	}
	if arr.Type == gjson.String {
		return Responses
	}
	n := 0
	arr.ForEach(func(_, m gjson.Result) bool {
		n++
		typ := m.Get("type").String()
		if responsesItemTypes[typ] {
			resp += 2
		}
		switch m.Get("role").String() {
		case "tool", "system", "developer", "function":
			oai++
		}
		if m.Get("tool_calls").Exists() || m.Get("tool_call_id").Exists() || m.Get("tool_call_ids").Exists() || m.Get("function_call").Exists() {
			oai += 2
		}
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "document":
				anth += 2
			case "image":
				if b.Get("source").Exists() {
					anth += 2
				}
			case "input_text", "output_text", "input_image", "input_file", "refusal":
				resp += 2
			case "image_url", "input_audio":
				oai += 2
			}
			return true
		})
		return n < 200
	})
	switch {
	case resp > anth && resp > oai:
		return Responses
	case anth > oai:
		return Anthropic
	case oai > anth:
		return OpenAI
	}
	// Plain text chats read the same in both; the model name, if any, decides.
	model := strings.ToLower(root.Get("model").String())
	if strings.HasPrefix(model, "claude") {
		return Anthropic
	}
	return OpenAI
}
