package fakeupstream

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// The checks below are what the real APIs refuse with a 400 and what a proxy that rewrites
// histories could break: tool calls and results that lose their partner, roles out of place,
// more cache_control markers than Anthropic accepts. They are deliberately minimal: a
// violation here is a bug in whoever built the body.

// maxCacheControl is the number of cache_control breakpoints the Messages API accepts.
const maxCacheControl = 4

// checkAnthropic checks a Messages body; betas is the request's anthropic-beta header, since
// a beta can make legal what the base API refuses.
func checkAnthropic(body []byte, betas string) []string {
	if !gjson.ValidBytes(body) {
		return []string{"body is not JSON"}
	}
	var v []string
	doc := gjson.ParseBytes(body)
	markers := 0
	count := func(r gjson.Result) {
		if r.Get("cache_control").Exists() {
			markers++
		}
	}
	doc.Get("system").ForEach(func(_, b gjson.Result) bool { count(b); return true })
	doc.Get("tools").ForEach(func(_, b gjson.Result) bool { count(b); return true })

	msgs := doc.Get("messages").Array()
	if len(msgs) == 0 {
		v = append(v, "messages is empty")
	}
	// Claude Code 2.1 puts role "system" messages between turns under this beta; they stand
	// outside the user/assistant alternation and the tool pairing.
	midSystem := strings.Contains(betas, "mid-conversation-system")
	var open []string // tool_use ids of the previous assistant message awaiting results
	for i, m := range msgs {
		role := m.Get("role").String()
		if role == "system" && midSystem && i > 0 {
			continue
		}
		if role != "user" && role != "assistant" {
			v = append(v, fmt.Sprintf("messages.%d: role %q", i, role))
		}
		if i == 0 && role != "user" {
			v = append(v, "messages.0: the first message is not from the user")
		}
		var uses, results []string
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			count(b)
			switch b.Get("type").String() {
			case "tool_use", "server_tool_use":
				if b.Get("type").String() == "tool_use" {
					uses = append(uses, b.Get("id").String())
				}
			case "tool_result":
				results = append(results, b.Get("tool_use_id").String())
				b.Get("content").ForEach(func(_, c gjson.Result) bool { count(c); return true })
			}
			return true
		})
		if len(open) > 0 {
			if role != "user" {
				v = append(v, fmt.Sprintf("messages.%d: tool_use %v not followed by a user message with its tool_result", i-1, open))
			} else {
				got := set(results)
				for _, id := range open {
					if !got[id] {
						v = append(v, fmt.Sprintf("messages.%d: no tool_result for tool_use %q of the message before", i, id))
					}
				}
			}
		}
		if len(results) > 0 {
			want := set(open)
			for _, id := range results {
				if !want[id] {
					v = append(v, fmt.Sprintf("messages.%d: tool_result %q has no tool_use in the message before", i, id))
				}
			}
		}
		open = nil
		if role == "assistant" {
			open = uses
		}
	}
	if len(open) > 0 {
		v = append(v, fmt.Sprintf("messages.%d: tool_use %v has no tool_result", len(msgs)-1, open))
	}
	if markers > maxCacheControl {
		v = append(v, fmt.Sprintf("%d cache_control markers (at most %d)", markers, maxCacheControl))
	}
	return v
}

func checkChat(body []byte) []string {
	if !gjson.ValidBytes(body) {
		return []string{"body is not JSON"}
	}
	var v []string
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 {
		v = append(v, "messages is empty")
	}
	open := map[string]bool{} // calls of the latest assistant message still awaiting a tool message
	for i, m := range msgs {
		role := m.Get("role").String()
		switch role {
		case "tool":
			id := m.Get("tool_call_id").String()
			if !open[id] {
				v = append(v, fmt.Sprintf("messages.%d: tool message %q answers no pending tool call", i, id))
			}
			delete(open, id)
			continue
		case "system", "developer", "user", "assistant":
		default:
			v = append(v, fmt.Sprintf("messages.%d: role %q", i, role))
		}
		for id := range open {
			v = append(v, fmt.Sprintf("messages.%d: tool call %q has no tool message before it", i, id))
		}
		open = map[string]bool{}
		if role == "assistant" {
			m.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
				open[c.Get("id").String()] = true
				return true
			})
		}
	}
	for id := range open {
		v = append(v, fmt.Sprintf("tool call %q has no tool message", id))
	}
	return v
}

func checkResponses(body []byte) []string {
	if !gjson.ValidBytes(body) {
		return []string{"body is not JSON"}
	}
	var v []string
	input := gjson.GetBytes(body, "input")
	if input.Type == gjson.String {
		return nil
	}
	calls, outputs := map[string]bool{}, map[string]bool{}
	var order []string
	for i, it := range input.Array() {
		id := it.Get("call_id").String()
		switch it.Get("type").String() {
		case "function_call", "custom_tool_call", "local_shell_call":
			calls[id] = true
			order = append(order, id)
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			if !calls[id] {
				v = append(v, fmt.Sprintf("input.%d: output for call %q with no call before it", i, id))
			}
			outputs[id] = true
		}
	}
	for _, id := range order {
		if !outputs[id] {
			v = append(v, fmt.Sprintf("call %q has no output", id))
		}
	}
	return v
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
