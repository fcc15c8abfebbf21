package transcript

import (
	"bytes"
	"strings"
	"testing"
)

// ccAttachment is a Claude Code attachment record hanging off parent.
func ccAttach(uuid, parent, attachment string) string {
	return `{"parentUuid":"` + parent + `","isSidechain":false,"attachment":` + attachment + `,"type":"attachment","uuid":"` + uuid + `","timestamp":"2026-01-01T00:00:00Z"}`
}

// Attachment records that Claude Code sends are read, with the message they come before;
// those it does not send (a hook's success after a tool call, permission decisions) and
// those on a dead branch are not. Stream hands each to its record's transcript and finds
// the same ones.
func TestClaudeCodeAttachments(t *testing.T) {
	lines := []string{
		ccLineJSON("user", "u1", "", `{"role":"user","content":"fix it"}`, ""),
		ccAttach("x1", "u1", `{"type":"hook_success","hookName":"UserPromptSubmit","hookEvent":"UserPromptSubmit","content":"Status set to busy","stdout":"Status set to busy\n","exitCode":0}`),
		ccAttach("x2", "x1", `{"type":"skill_listing","content":"- update-config: configure the harness","skillCount":1,"isInitial":true}`),
		ccAttach("x3", "x2", `{"type":"deferred_tools_delta","addedNames":["WebFetch"],"addedLines":["WebFetch"],"removedNames":[]}`),
		ccLineJSON("assistant", "a1", "x3", `{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"","signature":"`+strings.Repeat("A", 2000)+`"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.go"}}]}`, ""),
		ccLineJSON("user", "u2", "a1", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"package a"}]}`, ""),
		ccAttach("x4", "u2", `{"type":"hook_success","hookName":"PostToolUse:Read","hookEvent":"PostToolUse","content":"formatted","exitCode":0}`),
		ccAttach("x5", "x4", `{"type":"command_permissions","allowedTools":["Read"]}`),
		ccAttach("x6", "x5", `{"type":"file","filename":"b.go","content":{"type":"text","file":{"filePath":"/r/b.go","content":"package b\n","numLines":1}}}`),
		ccAttach("x7", "x6", `{"type":"hook_additional_context","content":["remember the tests"],"hookName":"PostToolUse","hookEvent":"PostToolUse"}`),
		// A rewound branch, with an attachment on it.
		ccLineJSON("user", "u9", "x7", `{"role":"user","content":"dead prompt"}`, ""),
		ccAttach("x9", "u9", `{"type":"hook_additional_context","content":["dead context"],"hookName":"UserPromptSubmit","hookEvent":"UserPromptSubmit"}`),
		ccLineJSON("assistant", "a2", "x7", `{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}`, ""),
	}
	doc := strings.Join(lines, "\n") + "\n"
	tr := mustParse(t, doc, Options{})
	type want struct {
		typ    string
		before int
		body   string
	}
	wants := []want{
		{"hook_success", 1, "Status set to busy"},
		{"skill_listing", 1, "- update-config: configure the harness"},
		{"deferred_tools_delta", 1, `["WebFetch"]`},
		{"file", 3, "package b\n"},
		{"hook_additional_context", 3, "remember the tests"},
	}
	if len(tr.Attachments) != len(wants) {
		t.Fatalf("%d attachments, want %d: %+v", len(tr.Attachments), len(wants), tr.Attachments)
	}
	for i, w := range wants {
		a := &tr.Attachments[i]
		if a.Type != w.typ || a.Before != w.before || tr.BodyText(&a.Block) != w.body {
			t.Errorf("attachment %d: %s before %d, %q; want %+v", i, a.Type, a.Before, tr.BodyText(&a.Block), w)
		}
		if r := tr.Records[a.Record]; r.Type != "attachment" || r.Message != -1 || r.Left != NotMessage {
			t.Errorf("attachment %d: record %+v", i, r)
		}
	}
	if b := &tr.Messages[1].Blocks[0]; b.Kind != Thinking || b.Signature != 2000 {
		t.Errorf("thinking stored empty: %+v, want its signature's 2000 bytes", b)
	}

	// Stream: each attachment comes with its record, and the outline has the same.
	var seen []string
	o, _, err := Stream(bytes.NewReader([]byte(doc)), Options{}, func(seq int, rec *Transcript) error {
		for _, a := range rec.Attachments {
			if a.Record != seq || a.Before != -1 {
				t.Errorf("record %d: attachment %+v", seq, a)
			}
			seen = append(seen, a.Type)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, ","); got != "hook_success,skill_listing,deferred_tools_delta,file,hook_additional_context,hook_additional_context" {
		t.Errorf("records with attachments: %s (the dead branch's too: which are live is the outline's)", got)
	}
	if len(o.Attachments) != len(tr.Attachments) {
		t.Fatalf("outline: %d attachments, parse %d", len(o.Attachments), len(tr.Attachments))
	}
	for i := range o.Attachments {
		if o.Attachments[i].Type != tr.Attachments[i].Type || o.Attachments[i].Before != tr.Attachments[i].Before || o.Attachments[i].Record != tr.Attachments[i].Record {
			t.Errorf("outline attachment %d %+v, parse %+v", i, o.Attachments[i], tr.Attachments[i])
		}
	}
}

// A thinking block keeps its signature's size only when its text is not there.
func TestThinkingSignature(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"c2lnbmF0dXJl"},{"type":"thinking","thinking":"Let me see.","signature":"c2ln"},{"type":"text","text":"hello"}]}]}`
	tr := mustParse(t, doc, Options{})
	bs := tr.Messages[1].Blocks
	if bs[0].Signature != 12 || bs[1].Signature != 0 {
		t.Errorf("signatures %d, %d: want 12 for the block stored empty, 0 for the one with its text", bs[0].Signature, bs[1].Signature)
	}
}
