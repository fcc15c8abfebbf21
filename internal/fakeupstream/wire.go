package fakeupstream

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// q is s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// compact is the JSON object doc without insignificant space, as APIs send arguments.
func compact(doc string) string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return "{}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// chunks splits s into pieces of at most n bytes, so that deltas arrive in several events as
// they do from the real APIs.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// created is the fixed timestamp in replies: the same script gives the same bytes.
const created = 1700000000

// --- Anthropic Messages

type anthropicWire struct{}

func (anthropicWire) callID(k int) string { return fmt.Sprintf("toolu_fake_%02d", k) }

func (anthropicWire) offersTools(body []byte) bool {
	return len(gjson.GetBytes(body, "tools").Array()) > 0
}

func (anthropicWire) results(body []byte) []string {
	var ids []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			if b.Get("type").String() == "tool_result" {
				ids = append(ids, b.Get("tool_use_id").String())
			}
		}
	}
	return ids
}

func (anthropicWire) errorBody(status int) string {
	kind := map[int]string{400: "invalid_request_error", 401: "authentication_error",
		429: "rate_limit_error", 529: "overloaded_error"}[status]
	if kind == "" {
		kind = "api_error"
	}
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":"fakeupstream: scripted %d"}}`, kind, status)
}

func (a anthropicWire) reply(e *emitter, model string, k int, t Turn, stream bool) {
	id := fmt.Sprintf("msg_fake_%02d", k+1)
	stop := "end_turn"
	block := `{"type":"text","text":` + q(t.Text) + `}`
	if t.Tool != "" {
		stop = "tool_use"
		block = fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%s,"input":%s}`, a.callID(k), q(t.Tool), compact(t.Input))
	}
	usage := `{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}`
	if !stream {
		fmt.Fprintf(e.w, `{"id":%q,"type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":%s}`,
			id, q(model), block, stop, usage)
		return
	}
	e.event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, id, q(model)))
	if t.Tool != "" {
		e.event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":%q,"name":%s,"input":{}}}`, a.callID(k), q(t.Tool)))
		for _, c := range chunks(compact(t.Input), 16) {
			e.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+q(c)+`}}`)
		}
	} else {
		e.event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		e.event("ping", `{"type":"ping"}`)
		for _, c := range chunks(t.Text, 16) {
			e.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+q(c)+`}}`)
		}
	}
	e.event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	e.event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":5}}`, stop))
	e.event("message_stop", `{"type":"message_stop"}`)
}

// --- OpenAI Responses

type responsesWire struct{}

func (responsesWire) callID(k int) string { return fmt.Sprintf("call_fake_%02d", k) }

func (responsesWire) offersTools(body []byte) bool {
	return len(gjson.GetBytes(body, "tools").Array()) > 0
}

func (responsesWire) results(body []byte) []string {
	var ids []string
	for _, it := range gjson.GetBytes(body, "input").Array() {
		switch it.Get("type").String() {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			ids = append(ids, it.Get("call_id").String())
		}
	}
	return ids
}

func (responsesWire) errorBody(status int) string {
	return fmt.Sprintf(`{"error":{"message":"fakeupstream: scripted %d","type":"server_error","param":null,"code":null}}`, status)
}

func (r responsesWire) reply(e *emitter, model string, k int, t Turn, stream bool) {
	rid := fmt.Sprintf("resp_fake_%02d", k+1)
	var item, added string
	if t.Tool != "" {
		args := compact(t.Input)
		item = fmt.Sprintf(`{"id":"fc_fake_%02d","type":"function_call","status":"completed","arguments":%s,"call_id":%q,"name":%s}`, k+1, q(args), r.callID(k), q(t.Tool))
		added = fmt.Sprintf(`{"id":"fc_fake_%02d","type":"function_call","status":"in_progress","arguments":"","call_id":%q,"name":%s}`, k+1, r.callID(k), q(t.Tool))
	} else {
		item = fmt.Sprintf(`{"id":"msg_fake_%02d","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}`, k+1, q(t.Text))
		added = fmt.Sprintf(`{"id":"msg_fake_%02d","type":"message","status":"in_progress","role":"assistant","content":[]}`, k+1)
	}
	usage := `{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}`
	resp := func(status, output, usage string) string {
		return fmt.Sprintf(`{"id":%q,"object":"response","created_at":%d,"status":%q,"model":%s,"output":[%s],"usage":%s}`, rid, created, status, q(model), output, usage)
	}
	if !stream {
		fmt.Fprint(e.w, resp("completed", item, usage))
		return
	}
	seq := 0
	ev := func(name, rest string) {
		e.event(name, fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, name, seq, rest))
		seq++
	}
	ev("response.created", `"response":`+resp("in_progress", "", "null"))
	ev("response.in_progress", `"response":`+resp("in_progress", "", "null"))
	ev("response.output_item.added", `"output_index":0,"item":`+added)
	itemID := gjson.Get(added, "id").String()
	if t.Tool != "" {
		args := compact(t.Input)
		for _, c := range chunks(args, 16) {
			ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":%q,"output_index":0,"delta":%s`, itemID, q(c)))
		}
		ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":%q,"output_index":0,"arguments":%s`, itemID, q(args)))
	} else {
		ev("response.content_part.added", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`, itemID))
		for _, c := range chunks(t.Text, 16) {
			ev("response.output_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"delta":%s`, itemID, q(c)))
		}
		ev("response.output_text.done", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"text":%s`, itemID, q(t.Text)))
		ev("response.content_part.done", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"part":{"type":"output_text","text":%s,"annotations":[]}`, itemID, q(t.Text)))
	}
	ev("response.output_item.done", `"output_index":0,"item":`+item)
	ev("response.completed", `"response":`+resp("completed", item, usage))
}

// --- OpenAI Chat Completions

type chatWire struct{}

func (chatWire) callID(k int) string { return fmt.Sprintf("call_fake_%02d", k) }

func (chatWire) offersTools(body []byte) bool {
	return len(gjson.GetBytes(body, "tools").Array()) > 0
}

func (chatWire) results(body []byte) []string {
	var ids []string
	for _, m := range gjson.GetBytes(body, "messages").Array() {
		if m.Get("role").String() == "tool" {
			ids = append(ids, m.Get("tool_call_id").String())
		}
	}
	return ids
}

func (chatWire) errorBody(status int) string { return responsesWire{}.errorBody(status) }

func (c chatWire) reply(e *emitter, model string, k int, t Turn, stream bool) {
	id := fmt.Sprintf("chatcmpl-fake-%02d", k+1)
	finish := "stop"
	if t.Tool != "" {
		finish = "tool_calls"
	}
	usage := `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`
	if !stream {
		msg := `{"role":"assistant","content":` + q(t.Text) + `}`
		if t.Tool != "" {
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%s,"arguments":%s}}]}`, c.callID(k), q(t.Tool), q(compact(t.Input)))
		}
		fmt.Fprintf(e.w, `{"id":%q,"object":"chat.completion","created":%d,"model":%s,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":%s}`,
			id, created, q(model), msg, finish, usage)
		return
	}
	chunk := func(choices string) {
		e.event("", fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%s,"choices":%s}`, id, created, q(model), choices))
	}
	if t.Tool != "" {
		chunk(fmt.Sprintf(`[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%s,"arguments":""}}]},"finish_reason":null}]`, c.callID(k), q(t.Tool)))
		for _, a := range chunks(compact(t.Input), 16) {
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + q(a) + `}}]},"finish_reason":null}]`)
		}
	} else {
		chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`)
		for _, s := range chunks(t.Text, 16) {
			chunk(`[{"index":0,"delta":{"content":` + q(s) + `},"finish_reason":null}]`)
		}
	}
	chunk(fmt.Sprintf(`[{"index":0,"delta":{},"finish_reason":%q}]`, finish))
	e.event("", fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%s,"choices":[],"usage":%s}`, id, created, q(model), usage))
	e.event("", "[DONE]")
}
