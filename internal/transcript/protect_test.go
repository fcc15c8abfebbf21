package transcript

import (
	"reflect"
	"strings"
	"testing"
)

func TestProtected(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`
	got := mustParse(t, doc, Options{}).Protected()
	if want := map[int]bool{0: true, 4: true, 5: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Protected = %v, want %v", got, want)
	}
	if got := mustParse(t, `[{"role":"user","content":"only"}]`, Options{}).Protected(); !reflect.DeepEqual(got, map[int]bool{0: true}) {
		t.Errorf("one message: %v", got)
	}
}

// pinnedShape is which messages and blocks of a transcript are pinned: per message, "W"
// when it is pinned whole, else one letter per block (p pinned, . not), "|" between.
func pinnedShape(tr *Transcript) string {
	var parts []string
	for _, m := range tr.Messages {
		if m.Pinned {
			parts = append(parts, "W")
			continue
		}
		s := ""
		for _, b := range m.Blocks {
			if b.Pinned {
				s += "p"
			} else {
				s += "."
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "|")
}

func TestPinnedCodex(t *testing.T) {
	agents := `# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun go test before committing.\n</INSTRUCTIONS>`
	env := `<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>`
	rollout := strings.Join([]string{
		`{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"s","cwd":"/repo","cli_version":"0.171.0","base_instructions":{"text":"You are Codex."}}}`,
		`{"timestamp":"2026-03-01T10:00:00.001Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>\nsandbox\n</permissions instructions>"}]}}`,
		`{"timestamp":"2026-03-01T10:00:00.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + agents + `"},{"type":"input_text","text":"` + env + `"}]}}`,
		`{"timestamp":"2026-03-01T10:00:00.003Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the bug. <environment_context> is a tag."}]}}`,
		// older versions: one message each, and escaped as a Go encoder writes them
		`{"timestamp":"2026-03-01T10:00:00.004Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"\u003cuser_instructions\u003e\n\nbe brief\n\n\u003c/user_instructions\u003e\n"}]}}`,
		`{"timestamp":"2026-03-01T10:00:00.005Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + env + `"}]}}`,
		`{"timestamp":"2026-03-01T10:00:00.006Z","type":"compacted","payload":{"message":"s","replacement_history":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"d"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"` + env + `"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"summary"}]}]}}`,
	}, "\n") + "\n"
	whole := mustParse(t, strings.Join(strings.Split(rollout, "\n")[:6], "\n"), Options{})
	if got, want := pinnedShape(whole), ".|.|W|.|W|."; got != want {
		t.Errorf("rollout: pinned %q, want %q", got, want)
	}
	if p := whole.Protected(); !p[1] || !p[2] || !p[4] || !p[3] {
		t.Errorf("rollout: protected %v, want the developer, both pinned messages and the request", p)
	}
	compacted := mustParse(t, rollout, Options{})
	if got, want := pinnedShape(compacted), ".|.|W|."; got != want {
		t.Errorf("compacted: pinned %q, want %q", got, want)
	}
	for i, want := range []bool{false, false, false, true} {
		if compacted.Messages[i].Summary != want {
			t.Errorf("compacted: message %d Summary %v, want %v: the instructions it carries are not history", i, !want, want)
		}
	}
	// Streamed, the messages carry the same marks.
	outline, _, err := Stream(strings.NewReader(rollout), Options{}, func(int, *Transcript) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := outline.Conversation(nil); !got.Messages[2].Pinned || got.Messages[3].Pinned {
		t.Errorf("streamed: message marks %+v", got.Messages)
	}

	resp := `{"instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>x</permissions instructions>"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"` + agents + `"},{"type":"input_text","text":"` + env + `"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]}`
	if got, want := pinnedShape(mustParse(t, resp, Options{})), ".|.|W|."; got != want {
		t.Errorf("responses: pinned %q, want %q", got, want)
	}
	chat := `{"messages":[{"role":"developer","content":"d"},{"role":"user","content":"` + env + `"},{"role":"user","content":"go"}]}`
	if got, want := pinnedShape(mustParse(t, chat, Options{})), ".|W|."; got != want {
		t.Errorf("openai: pinned %q, want %q", got, want)
	}
}

func TestPinnedClaudeCode(t *testing.T) {
	claudeMd := `<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nUse tabs.\n</system-reminder>\n`
	later := `<system-reminder>\nThe todo list is empty.\n</system-reminder>`
	req := `{"system":[{"type":"text","text":"You are Claude Code."}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"` + claudeMd + `"},{"type":"text","text":"` + later + `"},{"type":"text","text":"Fix the bug.","cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":[{"type":"text","text":"` + later + `"},{"type":"text","text":"more"}]}]}`
	tr := mustParse(t, req, Options{})
	if got, want := pinnedShape(tr), ".|pp.|.|.."; got != want {
		t.Errorf("anthropic: pinned %q, want %q", got, want)
	}
	if p := tr.Protected(); p[1] {
		t.Errorf("anthropic: the first message is protected whole: its request is history")
	}
	if !tr.Messages[1].HoldsPinned() || tr.Messages[3].HoldsPinned() {
		t.Errorf("anthropic: HoldsPinned wrong")
	}
	session := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":[{"type":"text","text":"` + claudeMd + `"},{"type":"text","text":"Fix the bug."}]}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"` + later + `"}}`,
	}, "\n")
	if got, want := pinnedShape(mustParse(t, session, Options{})), "p.|.|."; got != want {
		t.Errorf("claude-code: pinned %q, want %q", got, want)
	}
}
