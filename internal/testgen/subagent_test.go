package testgen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A session with subagents is written as Claude Code writes one, in each layout: the
// subagents' logs hold only their user and assistant records, all isSidechain, naming
// the session and (2.0 on) their agent id; each starts with the prompt of a call of the
// session's, after it, and the call's result records the id (toolUseResult.agentId; in
// 2.1 the result's text too), and the subagent's last usage; inline (1.x), the lines sit
// in the session's log between the calls and their results, with no id anywhere. The same
// options give the same bytes.
func TestSessionWithSubagents(t *testing.T) {
	for _, layout := range []string{LayoutFolder, LayoutBeside, LayoutInline} {
		o := Options{Format: "claude-code", Size: 60_000, Seed: 3}
		session, subs, err := Session(o, 2, layout)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := Session(o, 2, layout)
		if !bytes.Equal(session, again) {
			t.Errorf("%s: not deterministic", layout)
		}
		id := gjson.GetBytes(session, "sessionId").String()
		calls := map[string]string{}   // prompt → call id
		results := map[string]string{} // call id → agent id recorded
		inline := 0
		for _, line := range bytes.Split(bytes.TrimSpace(session), []byte("\n")) {
			g := gjson.ParseBytes(line)
			if g.Get("isSidechain").Bool() {
				inline++
				continue
			}
			if c := g.Get(`message.content.#(type=="tool_use")`); c.Exists() && (c.Get("name").String() == "Task" || c.Get("name").String() == "Agent") {
				calls[c.Get("input.prompt").String()] = c.Get("id").String()
			}
			if r := g.Get("message.content.0.tool_use_id"); r.Exists() && g.Get("toolUseResult.totalTokens").Exists() {
				results[r.String()] = g.Get("toolUseResult.agentId").String()
				if text := g.Get("message.content.0.content.1.text").String(); layout == LayoutFolder && !strings.HasPrefix(text, "agentId: "+results[r.String()]+" ") {
					t.Errorf("%s: the result's text does not name the agent: %q", layout, text)
				}
			}
		}
		if len(calls) != 2 || len(results) != 2 {
			t.Fatalf("%s: %d calls, %d results", layout, len(calls), len(results))
		}
		if layout == LayoutInline {
			if len(subs) != 0 || inline == 0 || bytes.Contains(session, []byte("agentId")) {
				t.Errorf("inline: %d logs, %d sidechain lines, agentId named: %v", len(subs), inline, bytes.Contains(session, []byte("agentId")))
			}
			continue
		}
		if len(subs) != 2 || inline != 0 {
			t.Fatalf("%s: %d logs, %d sidechain lines in the session", layout, len(subs), inline)
		}
		for _, s := range subs {
			wantPath := "agent-" + s.ID + ".jsonl"
			if layout == LayoutFolder {
				wantPath = id + "/subagents/" + wantPath
			}
			if s.Path != wantPath || layout == LayoutFolder && len(s.ID) != 17 || layout == LayoutBeside && len(s.ID) != 8 {
				t.Errorf("%s: %s at %s", layout, s.ID, s.Path)
			}
			lines := bytes.Split(bytes.TrimSpace(s.Log), []byte("\n"))
			for _, l := range lines {
				g := gjson.ParseBytes(l)
				if typ := g.Get("type").String(); typ != "user" && typ != "assistant" || !g.Get("isSidechain").Bool() ||
					g.Get("agentId").String() != s.ID || g.Get("sessionId").String() != id {
					t.Fatalf("%s: a subagent's line: %s", layout, l)
				}
			}
			first := gjson.GetBytes(lines[0], "message.content").String()
			call, ok := calls[first]
			if !ok || results[call] != s.ID || gjson.GetBytes(lines[0], "parentUuid").Type != gjson.Null {
				t.Errorf("%s: %s starts with %.40q, which no call's prompt is, or its result names %q", layout, s.ID, first, results[call])
			}
		}
	}
}
