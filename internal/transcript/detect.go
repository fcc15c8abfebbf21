package transcript

import "strings"

// codexRecordTypes are the record types of a Codex rollout file.
var codexRecordTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

// recordFormat recognises a single JSON object that is one record of a JSONL transcript
// (a session log with one line so far).
func recordFormat(obj jval) Format {
	var f [5]jval
	obj.fields(f[:], "type", "payload", "uuid", "sessionId", "parentUuid")
	typ := f[0].str()
	if typ == "" {
		return ""
	}
	if codexRecordTypes[typ] && f[1].exists() {
		return Codex
	}
	if f[2].exists() || f[3].exists() || f[4].exists() ||
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
		if f := recordFormat(recordValue(doc[l.Span.Start:l.Span.End], l.Span.Start)); f != "" {
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

// rootFields are the top-level fields of a JSON document that reading it needs, found in
// one walk (a missing one is the zero jval; a document that is an array has none).
type rootFields struct {
	messages, input, history, instructions, system, tools, model jval
}

func readRoot(root jval) rootFields {
	var f [7]jval
	root.fields(f[:], "messages", "input", "history", "instructions", "system", "tools", "model")
	return rootFields{messages: f[0], input: f[1], history: f[2], instructions: f[3], system: f[4], tools: f[5], model: f[6]}
}

// detectJSON scores the evidence for each JSON format. It looks at the wrapper and at most
// the first 200 messages: a signal is any field or block type that only one format uses.
func detectJSON(root jval, rf *rootFields, arr jval) Format {
	var anth, oai, resp, cline int
	if root.isObject() {
		if rf.input.exists() || rf.instructions.exists() {
			resp += 3
		}
		if rf.system.exists() {
			anth += 3
		}
		if rf.history.exists() {
			oai += 3
		}
	}
	if arr.isString() {
		return Responses
	}
	n := 0
	arr.each(func(m jval) bool {
		n++
		var f [7]jval
		m.fields(f[:], "type", "role", "tool_calls", "tool_call_id", "tool_call_ids", "function_call", "content")
		if responsesItemTypes[f[0].str()] {
			resp += 2
		}
		switch f[1].str() {
		case "tool", "system", "developer", "function":
			oai++
		}
		if f[2].exists() || f[3].exists() || f[4].exists() || f[5].exists() {
			oai += 2
		}
		user := f[1].str() == "user"
		f[6].each(func(b jval) bool {
			var bf [4]jval
			b.fields(bf[:], "type", "source", "text", "content")
			switch bf[0].str() {
			case "text":
				if user && clineSignal(bf[2].raw) {
					cline++
				}
			case "tool_result":
				// Cline labels the results it writes as tool_result blocks too (and
				// ctx-repair writes them so): still a Cline history.
				anth += 2
				if clineSignal(bf[3].raw) {
					cline++
				}
			case "tool_use", "thinking", "redacted_thinking", "server_tool_use", "document":
				anth += 2
			case "image":
				if bf[1].exists() {
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
	case cline > 0 && anth >= oai:
		// Anthropic arrays whose tool results are user texts labelled with the call.
		return Cline
	case anth > oai:
		return Anthropic
	case oai > anth:
		return OpenAI
	}
	// Plain text chats read the same in both; the model name, if any, decides.
	model := strings.ToLower(rf.model.str())
	if strings.HasPrefix(model, "claude") {
		return Anthropic
	}
	return OpenAI
}
