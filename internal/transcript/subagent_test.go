package transcript

import (
	"strings"
	"testing"
	"time"
)

// The calls that start a subagent are read from a parent's log with what their results
// record (toolUseResult.agentId, else the result's "agentId: " line, else nothing, as in
// 1.x), record by record as from a whole document; and each subagent's log is tied to its
// call by the agent id, else by its prompt, the call made last before the log started.
func TestSubagentCallsAndLinks(t *testing.T) {
	parent := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"go"}}`,
		// 2.0: the id in toolUseResult
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T10:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"description":"look","subagent_type":"Explore","prompt":"Look around."}}]}}`,
		`{"type":"user","uuid":"r1","parentUuid":"a1","timestamp":"2026-01-01T10:01:00Z","toolUseResult":{"status":"completed","agentId":"c8d9b115"},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"Found it."}]}]}}`,
		// 2.1: the id in the result's text as well; the toolUseResult left out here
		`{"type":"assistant","uuid":"a2","parentUuid":"r1","timestamp":"2026-01-01T10:02:00Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"more"},{"type":"tool_use","id":"t2","name":"Agent","input":{"description":"fix","prompt":"Fix it."}}]}}`,
		`{"type":"user","uuid":"r2","parentUuid":"a2","timestamp":"2026-01-01T10:03:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"Fixed."},{"type":"text","text":"agentId: a2271d1 (for resuming to continue this agent's work if needed)"}]}]}}`,
		// 1.x: two calls with the same prompt, no id anywhere
		`{"type":"assistant","uuid":"a3","parentUuid":"r2","timestamp":"2026-01-01T10:04:00Z","message":{"id":"m3","role":"assistant","content":[{"type":"tool_use","id":"t3","name":"Task","input":{"prompt":"Check."}}]}}`,
		`{"type":"user","uuid":"r3","parentUuid":"a3","timestamp":"2026-01-01T10:05:00Z","toolUseResult":{"totalTokens":10},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"ok"}]}}`,
		`{"type":"assistant","uuid":"a4","parentUuid":"r3","timestamp":"2026-01-01T10:06:00Z","message":{"id":"m4","role":"assistant","content":[{"type":"tool_use","id":"t4","name":"Task","input":{"prompt":"Check."}}]}}`,
		// Another tool's result that records an agent id is no subagent's.
		`{"type":"user","uuid":"r4","parentUuid":"a4","timestamp":"2026-01-01T10:07:00Z","toolUseResult":{"agentId":"zzz"},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}}`,
	}, "\n") + "\n"
	whole, err := Parse([]byte(parent), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fromWhole, fromRecords SubagentCalls
	fromWhole.Add(whole)
	if _, _, err := Stream(strings.NewReader(parent), Options{Format: ClaudeCode}, func(_ int, rec *Transcript) error {
		fromRecords.Add(rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, calls := range [][]SubagentCall{fromWhole.Calls, fromRecords.Calls} {
		var got []string
		for _, c := range calls {
			got = append(got, c.ID+" "+c.Tool+" "+c.AgentID+" "+c.Description+" "+c.Type+" "+c.Prompt+" "+c.At.Format("15:04:05")+" "+c.Answered.Format("15:04"))
		}
		want := []string{
			"t1 Task c8d9b115 look Explore Look around. 10:00:01 10:01",
			"t2 Agent a2271d1 fix  Fix it. 10:02:00 10:03",
			"t3 Task    Check. 10:04:00 10:05",
			"t4 Task    Check. 10:06:00 00:00",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	logs := []SubagentLog{
		{AgentID: "a2271d1", Prompt: "Fix it.", Start: at("2026-01-01T10:02:01Z")},
		{AgentID: "c8d9b115", Prompt: "", Start: at("2026-01-01T10:00:02Z")}, // starts with its reply
		{AgentID: "x2", Prompt: "Check.", Start: at("2026-01-01T10:06:01Z")}, // the second Check.
		{AgentID: "x1", Prompt: "Check.", Start: at("2026-01-01T10:04:01Z")}, // the first
		{AgentID: "w1", Prompt: "Warmup", Start: at("2026-01-01T09:59:00Z")},
		{AgentID: "x3", Prompt: "Look around.", Start: at("2026-01-01T10:00:02Z")}, // t1 is c8d9b115's
	}
	call, by := LinkSubagents(fromWhole.Calls, logs)
	got := ""
	for i := range logs {
		got += logs[i].AgentID + "="
		if call[i] >= 0 {
			got += fromWhole.Calls[call[i]].ID + "/" + by[i]
		}
		got += " "
	}
	if want := "a2271d1=t2/agent id c8d9b115=t1/agent id x2=t4/prompt x1=t3/prompt w1= x3= "; got != want {
		t.Errorf("links %q\nwant  %q", got, want)
	}
}

// A subagent's log says who it is: the agentId of its lines, else its file's name, and
// its first message.
func TestSubagentOf(t *testing.T) {
	log := `{"type":"user","uuid":"s1","parentUuid":null,"isSidechain":true,"agentId":"a2271d1","timestamp":"2026-01-23T17:34:46.972Z","message":{"role":"user","content":"Give me an overview."}}
{"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"agentId":"a2271d1","timestamp":"2026-01-23T17:34:50Z","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"Sure."}]}}
`
	tr, err := Parse([]byte(log), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := SubagentOf(tr, "/p/x/subagents/agent-ffff.jsonl"); got.AgentID != "a2271d1" || got.Prompt != "Give me an overview." || got.Start.Format(time.RFC3339Nano) != "2026-01-23T17:34:46.972Z" {
		t.Errorf("%+v", got)
	}
	unnamed, err := Parse([]byte(strings.ReplaceAll(log, `"agentId":"a2271d1",`, "")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := SubagentOf(unnamed, `/p/agent-3ea04571.jsonl`); got.AgentID != "3ea04571" {
		t.Errorf("from the file name: %+v", got)
	}
}
