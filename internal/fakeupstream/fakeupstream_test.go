package fakeupstream

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func post(t *testing.T, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, b
}

// events returns the data lines of an SSE stream.
func events(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestAnthropicScriptedToolRoundTrip(t *testing.T) {
	u := New(Turn{Tool: "Bash", Input: `{"command": "echo hi"}`}, Turn{Text: "the command printed hi"})
	srv := u.Start(t)
	tools := `"tools":[{"name":"Bash","input_schema":{"type":"object"}}]`

	// A side request without tools gets a short text and does not move the script.
	_, side := post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"quota"}]}`)
	if gjson.GetBytes(side, "content.0.text").String() != "ok" {
		t.Errorf("side request: %s", side)
	}

	resp, b := post(t, srv.URL+"/v1/messages?beta=true", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"run it"}]}`,
		"X-Api-Key", "sk-secret", "Anthropic-Beta", "a,b")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var input string
	var kinds []string
	for _, d := range events(b) {
		e := gjson.Parse(d)
		kinds = append(kinds, e.Get("type").String())
		input += e.Get("delta.partial_json").String()
	}
	if want := "message_start content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"; strings.Join(kinds, " ") != want {
		t.Errorf("events %v, want %s", kinds, want)
	}
	if input != `{"command":"echo hi"}` {
		t.Errorf("tool input %q", input)
	}

	second := `{"model":"m",` + tools + `,"messages":[{"role":"user","content":"run it"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_fake_00","name":"Bash","input":{"command":"echo hi"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_fake_00","content":"hi"}]}]}`
	_, b = post(t, srv.URL+"/v1/messages", second)
	if got := gjson.GetBytes(b, "content.0.text").String(); got != "the command printed hi" {
		t.Errorf("final reply %s", b)
	}
	// A retry of the same request answers the same turn again.
	_, b2 := post(t, srv.URL+"/v1/messages", second)
	if !bytes.Equal(b, b2) {
		t.Errorf("retry answered differently:\n%s\n%s", b, b2)
	}

	reqs := u.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if steps := []int{reqs[0].Step, reqs[1].Step, reqs[2].Step, reqs[3].Step}; steps[0] != -1 || steps[1] != 0 || steps[2] != 1 || steps[3] != 1 {
		t.Errorf("steps %v", steps)
	}
	if reqs[1].Header.Get("X-Api-Key") != "REDACTED" || reqs[1].Header.Get("Anthropic-Beta") != "a,b" || reqs[1].Query != "beta=true" {
		t.Errorf("recorded headers %v query %q", reqs[1].Header, reqs[1].Query)
	}
	if !bytes.Equal(reqs[1].Response, func() []byte {
		_, b := post(t, srv.URL+"/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"run it"}]}`)
		return b
	}()) {
		t.Error("the recorded response is not the bytes sent, or the same request gave other bytes")
	}
	if v := u.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestResponsesScriptedToolRoundTrip(t *testing.T) {
	u := New(Turn{Tool: "shell", Input: `{"command":["echo","hi"]}`}, Turn{Text: "done"})
	u.Tools = map[string]string{"responses": "exec_command"}
	srv := u.Start(t)
	_, b := post(t, srv.URL+"/v1/responses", `{"model":"gpt","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":"x"}]}`)
	var names []string
	var done gjson.Result
	for _, d := range events(b) {
		e := gjson.Parse(d)
		names = append(names, e.Get("type").String())
		if e.Get("type").String() == "response.completed" {
			done = e
		}
	}
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %v", names)
	}
	item := done.Get("response.output.0")
	if item.Get("type").String() != "function_call" || item.Get("name").String() != "exec_command" || item.Get("call_id").String() != "call_fake_00" ||
		item.Get("arguments").String() != `{"command":["echo","hi"]}` || !done.Get("response.usage.total_tokens").Exists() {
		t.Errorf("completed: %s", done.Raw)
	}
	_, b = post(t, srv.URL+"/v1/responses", `{"model":"gpt","tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":"x"},
		{"type":"function_call","call_id":"call_fake_00","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"call_fake_00","output":"hi"}]}`)
	if gjson.GetBytes(b, "output.0.content.0.text").String() != "done" || gjson.GetBytes(b, "status").String() != "completed" {
		t.Errorf("final: %s", b)
	}

	// Codex's WebSocket attempt is refused at once.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("websocket upgrade answered %d", resp.StatusCode)
	}
}

func TestChatCompletionsStreamedToolCall(t *testing.T) {
	u := New(Turn{Tool: "get_weather", Input: `{"city":"Paris"}`}, Turn{Text: "sunny"})
	srv := u.Start(t)
	_, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"gpt","stream":true,"tools":[{"type":"function","function":{"name":"get_weather"}}],"messages":[{"role":"user","content":"weather?"}]}`)
	ev := events(b)
	if ev[len(ev)-1] != "[DONE]" {
		t.Errorf("last event %q", ev[len(ev)-1])
	}
	var args string
	for _, d := range ev[:len(ev)-1] {
		args += gjson.Get(d, "choices.0.delta.tool_calls.0.function.arguments").String()
	}
	if args != `{"city":"Paris"}` || gjson.Get(ev[0], "choices.0.delta.tool_calls.0.id").String() != "call_fake_00" {
		t.Errorf("tool call args %q in %v", args, ev)
	}
	_, b = post(t, srv.URL+"/v1/chat/completions", `{"model":"gpt","tools":[{"type":"function","function":{"name":"get_weather"}}],"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_fake_00","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_fake_00","content":"20C"}]}`)
	if gjson.GetBytes(b, "choices.0.message.content").String() != "sunny" {
		t.Errorf("final: %s", b)
	}
}

func TestViolations(t *testing.T) {
	cc := `{"type":"ephemeral"}`
	tests := []struct {
		name, api, body, want string
	}{
		{"tool_use without result", "anthropic", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"B","input":{}}]},{"role":"user","content":"y"}]}`, `no tool_result for tool_use "a"`},
		{"orphan tool_result", "anthropic", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"z","content":"r"}]}]}`, `tool_result "z" has no tool_use`},
		{"first from assistant", "anthropic", `{"messages":[{"role":"assistant","content":"x"}]}`, "not from the user"},
		{"five markers", "anthropic", `{"system":[{"type":"text","text":"s","cache_control":` + cc + `}],"tools":[{"name":"t","cache_control":` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":` + cc + `},{"type":"text","text":"b","cache_control":` + cc + `},{"type":"text","text":"c","cache_control":` + cc + `}]}]}`, "5 cache_control markers"},
		{"chat tool without call", "chat", `{"messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"q","content":"r"}]}`, `tool message "q" answers no pending`},
		{"chat call without tool", "chat", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"q"}]},{"role":"user","content":"y"}]}`, `tool call "q" has no tool message`},
		{"responses output without call", "responses", `{"input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`, `output for call "c" with no call`},
		{"responses call without output", "responses", `{"input":[{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}]}`, `call "c" has no output`},
	}
	check := map[string]func([]byte) []string{"anthropic": func(b []byte) []string { return checkAnthropic(b, "") }, "chat": checkChat, "responses": checkResponses}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := check[tt.api]([]byte(tt.body))
			if len(v) == 0 || !strings.Contains(strings.Join(v, "; "), tt.want) {
				t.Errorf("violations %q, want one containing %q", v, tt.want)
			}
		})
	}
	// A system message between turns is refused, unless under Claude Code's beta, where it
	// does not break the tool pairing either.
	mid := `{"messages":[{"role":"user","content":"x"},{"role":"system","content":"s"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"B","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`
	if v := checkAnthropic([]byte(mid), ""); len(v) != 1 || !strings.Contains(v[0], `role "system"`) {
		t.Errorf("mid-conversation system without the beta: %v", v)
	}
	if v := checkAnthropic([]byte(mid), "claude-code-20250219,mid-conversation-system-2026-04-07"); len(v) != 0 {
		t.Errorf("mid-conversation system under the beta: %v", v)
	}
	// Four markers are fine.
	if v := checkAnthropic([]byte(`{"system":[{"type":"text","text":"s","cache_control":`+cc+`}],"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":`+cc+`},{"type":"text","text":"b","cache_control":`+cc+`},{"type":"text","text":"c","cache_control":`+cc+`}]}]}`), ""); len(v) != 0 {
		t.Errorf("four markers: %v", v)
	}
}

func TestErrorsAndCutStreams(t *testing.T) {
	u := New(Turn{Text: "x", Status: 529})
	srv := u.Start(t)
	resp, b := post(t, srv.URL+"/v1/messages", `{"tools":[{"name":"t"}],"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 529 || gjson.GetBytes(b, "error.type").String() != "overloaded_error" {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}

	u.Script = []Turn{{Text: "a long text cut short", Cut: 3}}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(`{"stream":true,"tools":[{"name":"t"}],"messages":[{"role":"user","content":"x"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("a cut stream read to its end: %s", got)
	}
	if n := len(events(got)); n != 3 {
		t.Errorf("%d events before the cut, want 3", n)
	}
}
