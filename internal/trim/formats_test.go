package trim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestPlanReusedIDs: tau-bench and SWE-agent reuse a call id for a later, different call.
// Each call goes with its own result, so cutting between the two uses leaves both whole.
func TestPlanReusedIDs(t *testing.T) {
	call := func(name string) string {
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":"{}"}}]}`
	}
	// 0 system, 1 user, 2 call_1 f, 3 its result, 4 assistant, 5 user, 6 call_1 g (reused),
	// 7 its result, 8 assistant, 9 user, 10 assistant.
	doc := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"task"},` + call("f") + `,{"role":"tool","tool_call_id":"call_1","content":"r1"},` +
		`{"role":"assistant","content":"a"},{"role":"user","content":"again"},` + call("g") + `,{"role":"tool","tool_call_id":"call_1","content":"r2"},` +
		`{"role":"assistant","content":"b"},{"role":"user","content":"last"},{"role":"assistant","content":"done"}]}`
	for _, c := range []struct {
		max  int
		want string
	}{
		{1000, "[1]"},
		{800, "[1 2 3]"},
		{900, "[1 2 3]"}, // the call cannot go without its result
		{600, "[1 2 3 4 5]"},
		{500, "[1 2 3 4 5 6 7]"},
		{100, "[1 2 3 4 5 6 7 8]"},
	} {
		dropped, out, _ := planApply(t, doc, c.max, KeepLast)
		if fmt.Sprint(dropped) != c.want {
			t.Errorf("max %d: dropped %v, want %s", c.max, dropped, c.want)
		}
		if n := unpaired(t, out); n != 0 {
			t.Errorf("max %d: %d unpaired calls or results:\n%s", c.max, n, out)
		}
	}
	// The second use's result answers the second call: with the first pair gone, the
	// second is whole and still the g call's.
	_, out, _ := planApply(t, doc, 600, KeepLast)
	if !strings.Contains(out, call("g")+`,{"role":"tool","tool_call_id":"call_1","content":"r2"}`) || strings.Contains(out, `"r1"`) {
		t.Errorf("output:\n%s", out)
	}
}

// TestPlanParallelResults: an assistant message with several calls goes with all its
// results, also when Claude Code-style results arrive as separate user messages.
func TestPlanParallelResults(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"task"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{}},{"type":"tool_use","id":"b","name":"Read","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ra"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"rb"}]},` +
		`{"role":"assistant","content":"read both"},{"role":"user","content":"last"},{"role":"assistant","content":"done"}]}`
	dropped, out, _ := planApply(t, doc, 600, KeepLast)
	if fmt.Sprint(dropped) != "[0 1 2 3]" {
		t.Errorf("dropped %v, want [0 1 2 3]: the two-call message with both results", dropped)
	}
	if n := unpaired(t, out); n != 0 {
		t.Errorf("%d unpaired:\n%s", n, out)
	}
}

// TestPlanResponsesReasoning: a reasoning item stays with the call or message it leads
// to, and a call with its output.
func TestPlanResponsesReasoning(t *testing.T) {
	reasoning := `{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAAA"}`
	msg := func(role, text string) string {
		typ := "input_text"
		if role == "assistant" {
			typ = "output_text"
		}
		return `{"type":"message","role":"` + role + `","content":[{"type":"` + typ + `","text":"` + text + `"}]}`
	}
	// 0 user, 1 reasoning, 2 call, 3 output, 4 assistant, 5 user, 6 reasoning, 7 assistant,
	// 8 user, 9 assistant.
	doc := `{"instructions":"be brief","input":[` + msg("user", "task") + `,` + reasoning +
		`,{"type":"function_call","call_id":"c1","name":"ls","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"files"},` +
		msg("assistant", "listed") + `,` + msg("user", "more") + `,` + reasoning + `,` + msg("assistant", "thought") + `,` +
		msg("user", "last") + `,` + msg("assistant", "done") + `]}`
	for _, c := range []struct {
		max  int
		want string
	}{
		{1000, "[1]"},              // the header counts too: 11 messages
		{900, "[1 2 3 4]"},         // reasoning, call and output together
		{500, "[1 2 3 4 5 6]"},     //
		{400, "[1 2 3 4 5 6 7 8]"}, // the second reasoning with its message
	} {
		dropped, out, _ := planApply(t, doc, c.max, KeepLast)
		if fmt.Sprint(dropped) != c.want {
			t.Errorf("max %d: dropped %v, want %s", c.max, dropped, c.want)
		}
		if n := unpaired(t, out); n != 0 {
			t.Errorf("max %d: %d unpaired", c.max, n)
		}
		if !strings.HasPrefix(out, `{"instructions":"be brief","input":[`) {
			t.Errorf("max %d: the instructions moved:\n%s", c.max, out)
		}
	}
}

// TestPlanClaudeCode: the record lines of dropped messages go, the first kept message is
// hung off the last kept message before it (or made a root), and records that are not
// messages of the live branch stay where they are.
func TestPlanClaudeCode(t *testing.T) {
	rec := func(typ, uuid, parent, msg string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"parentUuid":` + p + `,"isSidechain":false,"type":"` + typ + `","message":` + msg + `,"uuid":"` + uuid + `","timestamp":"2026-03-04T05:20:12Z"}`
	}
	asst := func(id, content string) string {
		return `{"id":"` + id + `","role":"assistant","content":[` + content + `]}`
	}
	in := []string{
		`{"type":"summary","summary":"an older session","leafUuid":"u0"}`,                                                 // 0 not a message
		rec("user", "u1", "", `{"role":"user","content":"the task"}`),                                                     // 1 message 0
		rec("assistant", "a1", "u1", asst("m1", `{"type":"text","text":"looking"}`)),                                      // 2 message 1
		rec("assistant", "a2", "a1", asst("m1", `{"type":"tool_use","id":"t1","name":"Read","input":{}}`)),                // 3 message 1
		rec("user", "r1", "a2", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"text"}]}`), // 4 message 2
		`{"parentUuid":"r1","isSidechain":false,"type":"attachment","attachment":{"type":"todo"},"uuid":"x1"}`,            // 5 in the chain, not a message
		rec("assistant", "a3", "x1", asst("m2", `{"type":"text","text":"read it"}`)),                                      // 6 message 3
		rec("user", "d1", "a3", `{"role":"user","content":"a rewound prompt"}`),                                           // 7 dead branch
		rec("user", "u2", "a3", `{"role":"user","content":"next"}`),                                                       // 8 message 4
		rec("assistant", "a4", "u2", asst("m3", `{"type":"text","text":"done"}`)),                                         // 9 message 5
	}
	doc := strings.Join(in, "\n") + "\n"
	if n := len(parse(t, doc).Messages); n != 6 {
		t.Fatalf("the session reads as %d messages, want 6", n)
	}
	keep := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, in[i])
		}
		return out
	}
	chained := func(line, from, to string) string {
		return strings.Replace(line, `"parentUuid":`+from, `"parentUuid":`+to, 1)
	}
	cases := []struct {
		max      int
		strategy string
		dropped  string
		want     []string
	}{
		// The task goes: the assistant turn after it becomes the root.
		{500, KeepLast, "[0]", append(keep(0), chained(in[2], `"u1"`, "null"), in[3], in[4], in[5], in[6], in[7], in[8], in[9])},
		// The task, the call and its result go: the next message's parent, through the
		// attachment, was the result, so it becomes the root; the attachment stays.
		{300, KeepLast, "[0 1 2]", append(keep(0, 5), chained(in[6], `"x1"`, "null"), in[7], in[8], in[9])},
		// All that may go: the newest exchange is left; its parent is gone.
		{100, KeepLast, "[0 1 2 3]", append(keep(0, 5, 7), chained(in[8], `"a3"`, "null"), in[9])},
		// --strategy first keeps the task: what follows it hangs off it.
		{300, KeepFirst, "[1 2 3]", append(keep(0, 1, 5, 7), chained(in[8], `"a3"`, `"u1"`), in[9])},
	}
	for _, c := range cases {
		dropped, out, _ := planApply(t, doc, c.max, c.strategy)
		if fmt.Sprint(dropped) != c.dropped {
			t.Errorf("max %d %s: dropped %v, want %s", c.max, c.strategy, dropped, c.dropped)
			continue
		}
		if got, want := lines(out), c.want; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("max %d %s: got\n%s\nwant\n%s", c.max, c.strategy, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// The live branch is the kept messages, in order.
		after := parse(t, out)
		if got, want := len(after.Messages), 6-len(dropped); got != want {
			t.Errorf("max %d %s: the trimmed session reads as %d messages, want %d", c.max, c.strategy, got, want)
		}
		if n := unpaired(t, out); n != 0 {
			t.Errorf("max %d %s: %d unpaired", c.max, c.strategy, n)
		}
	}
}

// TestPlanCodex: a rollout's response_item lines go; the session's instructions, the
// compacted history that stands for what came before, and the records that are not
// items (turn context, events, the items a compaction replaced) stay.
func TestPlanCodex(t *testing.T) {
	item := func(payload string) string {
		return `{"timestamp":"2026-03-04T05:20:12.601Z","type":"response_item","payload":` + payload + `}`
	}
	user := func(text string) string {
		return item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}`)
	}
	asst := func(text string) string {
		return item(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + text + `"}]}`)
	}
	in := []string{
		`{"timestamp":"2026-03-04T05:20:12.601Z","type":"session_meta","payload":{"id":"s1","instructions":"Be careful."}}`, // message 0 (header)
		user("an old task"), // replaced by the compaction: not live
		`{"timestamp":"2026-03-04T05:21:00.000Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"summary of the old task"}]}]}}`, // message 1 (summary)
		`{"timestamp":"2026-03-04T05:21:00.000Z","type":"turn_context","payload":{"cwd":"/repo","model":"gpt-5"}}`,
		user("the task"), // message 2
		item(`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}`), // message 3
		item(`{"type":"function_call_output","call_id":"c1","output":"a.go"}`),                              // message 4
		`{"timestamp":"2026-03-04T05:21:01.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
		asst("listed"),     // message 5
		user("now fix it"), // message 6
		asst("fixed"),      // message 7
	}
	doc := strings.Join(in, "\n") + "\n"
	tr := parse(t, doc)
	if tr.Format != transcript.Codex || len(tr.Messages) != 8 || !tr.Messages[1].Summary {
		t.Fatalf("the rollout reads as %s with %d messages", tr.Format, len(tr.Messages))
	}
	for _, c := range []struct {
		max     int
		dropped string
		kept    []int
	}{
		{700, "[2]", []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 10}},
		{600, "[2 3 4]", []int{0, 1, 2, 3, 7, 8, 9, 10}},
		{100, "[2 3 4 5]", []int{0, 1, 2, 3, 7, 9, 10}},
	} {
		dropped, out, st := planApply(t, doc, c.max, KeepLast)
		if fmt.Sprint(dropped) != c.dropped {
			t.Errorf("max %d: dropped %v, want %s", c.max, dropped, c.dropped)
			continue
		}
		var want []string
		for _, i := range c.kept {
			want = append(want, in[i])
		}
		if got := lines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("max %d: got\n%s\nwant lines %v", c.max, out, c.kept)
		}
		if c.max == 100 && st.Fits {
			t.Errorf("max 100: the instructions, summary and newest exchange are 400 tokens, yet it fits")
		}
		after := parse(t, out)
		if len(after.Messages) != 8-len(dropped) || !after.Messages[1].Summary || !after.Messages[0].Header {
			t.Errorf("max %d: the trimmed rollout reads as %d messages", c.max, len(after.Messages))
		}
	}
}
