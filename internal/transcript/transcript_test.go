package transcript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, doc string, o Options) *Transcript {
	t.Helper()
	tr, err := Parse([]byte(doc), o)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tr
}

// shape describes a transcript compactly: role:kind,kind|role:kind...
func shape(tr *Transcript) string {
	var parts []string
	for _, m := range tr.Messages {
		var ks []string
		for _, b := range m.Blocks {
			ks = append(ks, b.Kind.String())
		}
		parts = append(parts, m.Role+":"+strings.Join(ks, ","))
	}
	return strings.Join(parts, "|")
}

func TestParseFormats(t *testing.T) {
	cases := []struct {
		name, doc string
		format    Format
		shape     string
	}{
		{"anthropic request", `{"model":"claude-sonnet-4-5","system":"be brief","messages":[
			{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}]}`,
			Anthropic, "system:text|user:text|assistant:thinking,tool_call|user:tool_result"},
		{"anthropic bare array", `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"redacted_thinking","data":"QUJD"},{"type":"text","text":"b"}]}]`,
			Anthropic, "user:text|assistant:thinking,text"},
		{"openai request", `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"out"}]}`,
			OpenAI, "system:text|user:text,image|assistant:tool_call|tool:tool_result"},
		{"swe-agent wrapper", `{"environment":"x","history":[{"role":"system","content":"s"},{"role":"assistant","content":"a","tool_calls":[{"id":"c","type":"function","function":{"name":"create","arguments":"{}"}}]},{"role":"tool","content":"r","tool_call_ids":["c"]}]}`,
			OpenAI, "system:text|assistant:text,tool_call|tool:tool_result"},
		{"responses request", `{"model":"gpt-5","instructions":"be good","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},
			{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAAA"},
			{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"command\":[\"ls\"]}"},
			{"type":"function_call_output","call_id":"c1","output":"a.go"},
			{"role":"assistant","content":"done"}]}`,
			Responses, "system:text|user:text|assistant:thinking,thinking|assistant:tool_call|tool:tool_result|assistant:text"},
		{"responses string input", `{"model":"gpt-5","input":"hello"}`, Responses, "user:text"},
		{"plain chat defaults to openai", `[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`, OpenAI, "user:text|assistant:text"},
		{"plain chat with claude model", `{"model":"claude-opus-4-1","messages":[{"role":"user","content":"hi"}]}`, Anthropic, "user:text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := mustParse(t, c.doc, Options{})
			if tr.Format != c.format {
				t.Errorf("format = %s, want %s", tr.Format, c.format)
			}
			if got := shape(tr); got != c.shape {
				t.Errorf("shape\n got %s\nwant %s", got, c.shape)
			}
			for _, m := range tr.Messages {
				if m.Span.End > len(tr.Doc) || m.Span.Start >= m.Span.End {
					t.Errorf("bad span %v", m.Span)
				}
			}
		})
	}
}

func TestSpansAndText(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"line one\nline \"two\""},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}]}`
	tr := mustParse(t, doc, Options{})
	if got := tr.BodyText(&tr.Messages[0].Blocks[0]); got != "line one\nline \"two\"" {
		t.Errorf("text = %q", got)
	}
	call := &tr.Messages[1].Blocks[0]
	if got := tr.BodyText(call); got != `{"command":"ls"}` {
		t.Errorf("tool input = %q", got)
	}
	if got := tr.Slice(tr.Messages[1].Span); !strings.HasPrefix(got, `{"role":"assistant"`) || !strings.HasSuffix(got, "]}") {
		t.Errorf("message span = %q", got)
	}
	if call.ToolID != "t" || call.ToolName != "Bash" {
		t.Errorf("call = %+v", call)
	}
}

func TestPath(t *testing.T) {
	doc := `{"run":{"log":[{"role":"user","content":"a"}]}}`
	tr := mustParse(t, doc, Options{Path: "run.log"})
	if len(tr.Messages) != 1 || tr.ArrayPath != "run.log" {
		t.Fatalf("got %d messages at %q", len(tr.Messages), tr.ArrayPath)
	}
	if _, err := Parse([]byte(doc), Options{}); err == nil || !strings.Contains(err.Error(), "--path") {
		t.Errorf("want a hint about --path, got %v", err)
	}
	if _, err := Parse([]byte(doc), Options{Path: "run"}); err == nil || !strings.Contains(err.Error(), "not an array") {
		t.Errorf("want not an array, got %v", err)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"invalid json", `{"messages": [}`, "byte 14: invalid JSON"},
		{"truncated json", `{"messages": [{"role":"user"`, "truncated"},
		{"scalar", `42`, "expected a JSON object or array"},
		{"text", "hello there", "expected a JSON object or array"},
		{"binary", "\x00\x01\x02garbage", "binary data"},
		{"wrong shape", `{"foo": 1}`, "expected a conversation"},
		{"truncated jsonl", "{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"assistant\",\"uuid\":\"b\",\"mess", "line 2: truncated record"},
		{"bad jsonl middle", "{\"type\":\"user\",\"uuid\":\"a\"}\nnot json\n{\"type\":\"user\",\"uuid\":\"b\"}\n", "line 2: invalid JSON"},
		{"jsonl of arrays", "{\"type\":\"user\",\"uuid\":\"a\"}\n[1,2]\n", "line 2: expected a JSON object"},
		{"unknown jsonl", "{\"a\":1}\n{\"b\":2}\n", "unknown kind"},
		{"trailing garbage", `[{"role":"user","content":"a"}] xyz`, "invalid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), Options{})
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// TestEmptyInput holds the one rule for an input of nothing but white space: an empty
// conversation whatever the input is called (a file or stdin), unless --format names a
// format that must be one JSON value.
func TestEmptyInput(t *testing.T) {
	for _, doc := range []string{"", " \n\t\r\n"} {
		for _, name := range []string{"", "-", "session.jsonl", "request.json"} {
			for _, f := range []Format{"", ClaudeCode, Codex} {
				tr, err := Parse([]byte(doc), Options{Name: name, Format: f})
				want := f
				if want == "" {
					want = ClaudeCode
				}
				if err != nil || tr.Format != want || len(tr.Messages) != 0 || tr.Doc != doc {
					t.Errorf("%q named %q, --format %q: %v %+v", doc, name, f, err, tr)
				}
			}
			for _, f := range []Format{Anthropic, OpenAI, Responses} {
				if _, err := Parse([]byte(doc), Options{Name: name, Format: f}); err == nil || !strings.Contains(err.Error(), "empty input: --format "+string(f)) {
					t.Errorf("%q named %q, --format %s: %v", doc, name, f, err)
				}
			}
		}
	}
}

func TestForcedFormatMismatch(t *testing.T) {
	jsonl := "{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"user\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n"
	if _, err := Parse([]byte(jsonl), Options{Format: Anthropic}); err == nil {
		t.Error("JSONL forced to anthropic should fail")
	}
	if _, err := Parse([]byte(`{"messages":[]}`), Options{Format: Codex}); err == nil {
		t.Error("JSON forced to codex should fail")
	}
}

func ccLineJSON(typ, uuid, parent, body string, extra string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"parentUuid":` + p + `,"isSidechain":false` + extra + `,"type":"` + typ + `","message":` + body + `,"uuid":"` + uuid + `","timestamp":"2026-01-01T00:00:0` + uuid[len(uuid)-1:] + `Z"}`
}

func TestClaudeCodeLiveBranchAndSplitTurns(t *testing.T) {
	lines := []string{
		`{"type":"permission-mode","permissionMode":"default","sessionId":"s"}`,
		ccLineJSON("user", "u1", "", `{"role":"user","content":"first prompt"}`, ""),
		// A rewound branch: this answer and its follow-up are dead.
		ccLineJSON("assistant", "a2", "u1", `{"id":"m_dead","role":"assistant","content":[{"type":"text","text":"dead answer"}]}`, ""),
		ccLineJSON("user", "u3", "a2", `{"role":"user","content":"dead follow-up"}`, ""),
		// The live answer, streamed over three lines, with two parallel tool calls whose
		// results hang off their own call lines.
		ccLineJSON("assistant", "a4", "u1", `{"id":"m1","role":"assistant","content":[{"type":"text","text":"reading"}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}`, ""),
		ccLineJSON("assistant", "a5", "a4", `{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tA","name":"Read","input":{"file_path":"/a"}}]}`, ""),
		ccLineJSON("assistant", "a6", "a5", `{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tB","name":"Read","input":{"file_path":"/b"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":40}}`, ""),
		`{"parentUuid":"a6","type":"attachment","attachment":{"type":"x"},"uuid":"x7"}`,
		ccLineJSON("user", "u8", "a6", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tB","content":"B"}]}`, ""),
		ccLineJSON("user", "u9", "a5", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tA","content":"A"}]}`, ""),
		ccLineJSON("assistant", "b1", "u9", `{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}`, ""),
		// A subagent line.
		ccLineJSON("user", "s1", "", `{"role":"user","content":"subagent task"}`, ""),
	}
	lines[len(lines)-1] = strings.Replace(lines[len(lines)-1], `"isSidechain":false`, `"isSidechain":true`, 1)
	doc := strings.Join(lines, "\n") + "\n"
	tr := mustParse(t, doc, Options{})
	if tr.Format != ClaudeCode {
		t.Fatalf("format %s", tr.Format)
	}
	if got, want := shape(tr), "user:text|assistant:text,tool_call,tool_call|user:tool_result|user:tool_result|assistant:text"; got != want {
		t.Errorf("shape\n got %s\nwant %s", got, want)
	}
	if n := len(tr.Messages[1].Lines); n != 3 {
		t.Errorf("merged turn has %d lines, want 3", n)
	}
	for _, p := range tr.Pairs() {
		if p.Call == None || p.Result == None {
			t.Errorf("unpaired %+v", p)
		}
	}
	u, ok := tr.LastUsage()
	if !ok || u.Input != 115 || u.Output != 40 || u.After != 1 {
		t.Errorf("usage = %+v %v", u, ok)
	}
	if tr.Records[0].Message != -1 || tr.Records[2].Message != -1 {
		t.Errorf("metadata and dead lines must not map to messages: %+v", tr.Records[:3])
	}
	all := mustParse(t, doc, Options{AllThreads: true})
	if len(all.Messages) != len(tr.Messages)+1 {
		t.Errorf("every thread: %d messages, want %d", len(all.Messages), len(tr.Messages)+1)
	}
	// --sidechains reads the subagent's conversation, the session's lines left out.
	side := mustParse(t, doc, Options{Sidechains: true})
	if got := shape(side); got != "user:text" || side.Records[len(side.Records)-1].Message != 0 {
		t.Errorf("--sidechains: %s", got)
	}
	for i, r := range side.Records[:len(side.Records)-1] {
		if r.Message >= 0 || r.Left == Read || r.Left == Sidechain {
			t.Errorf("--sidechains: record %d of the session's read as %v", i, r.Left)
		}
	}
}

// --sidechains on a log that holds two subagents' lines among the session's (Claude Code
// 1.x): the newest subagent's conversation, each of its lines where it is, the other
// subagent's named a sidechain and the session's the main thread; without a subagent
// line, the session's conversation as without the flag.
func TestSidechainsReadsTheNewestSubagent(t *testing.T) {
	side := func(s string) string { return strings.Replace(s, `"isSidechain":false`, `"isSidechain":true`, 1) }
	lines := []string{
		ccLineJSON("user", "u1", "", `{"role":"user","content":"go"}`, ""),
		ccLineJSON("assistant", "a1", "u1", `{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Task","input":{"prompt":"one"}},{"type":"tool_use","id":"t2","name":"Task","input":{"prompt":"two"}}]}`, ""),
		side(ccLineJSON("user", "s1", "", `{"role":"user","content":"one"}`, "")),
		side(ccLineJSON("user", "p1", "", `{"role":"user","content":"two"}`, "")),
		side(ccLineJSON("assistant", "s2", "s1", `{"id":"ms2","role":"assistant","content":[{"type":"tool_use","id":"x1","name":"Bash","input":{"command":"ls"}}]}`, "")),
		side(ccLineJSON("assistant", "p2", "p1", `{"id":"mp2","role":"assistant","content":[{"type":"text","text":"two done"}]}`, "")),
		side(ccLineJSON("user", "s3", "s2", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"x1","content":"a b"}]}`, "")),
		side(ccLineJSON("assistant", "s4", "s3", `{"id":"ms4","role":"assistant","content":[{"type":"text","text":"one done"}]}`, "")),
		ccLineJSON("user", "u2", "a1", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one done"},{"type":"tool_result","tool_use_id":"t2","content":"two done"}]}`, ""),
		ccLineJSON("assistant", "a2", "u2", `{"id":"m2","role":"assistant","content":[{"type":"text","text":"both done"}]}`, ""),
	}
	doc := strings.Join(lines, "\n") + "\n"
	for _, o := range []Options{{Sidechains: true}} {
		tr := mustParse(t, doc, o)
		if got := shape(tr); got != "user:text|assistant:tool_call|user:tool_result|assistant:text" {
			t.Errorf("shape %s", got)
		}
		var left []string
		for _, r := range tr.Records {
			left = append(left, r.Left.String())
		}
		if got := strings.Join(left, ","); got != "main thread,main thread,read,sidechain,read,sidechain,read,read,main thread,main thread" {
			t.Errorf("records %s", got)
		}
		var streamed [][]Message
		outline, _, err := Stream(strings.NewReader(doc), o, func(_ int, rec *Transcript) error {
			streamed = append(streamed, rec.Messages)
			return nil
		})
		if err != nil || len(outline.Messages) != 4 {
			t.Errorf("streamed: %v, %d messages", err, len(outline.Messages))
		}
	}
	// The subagents such a log holds, by their first line; one of them read by name.
	if got := strings.Join(mustParse(t, doc, Options{}).Sidechains(), " "); got != "s1 p1" {
		t.Errorf("sidechains %q", got)
	}
	if len(mustParse(t, doc, Options{Sidechains: true}).Sidechains()) != 0 {
		t.Errorf("a subagent's conversation lists subagents")
	}
	two := mustParse(t, doc, Options{Sidechains: true, Subagent: "p1"})
	if got := shape(two); got != "user:text|assistant:text" || two.Records[3].Message != 0 || two.Records[5].Message != 1 {
		t.Errorf("the subagent p1: %s", got)
	}
	plain := strings.ReplaceAll(doc, `"isSidechain":true`, `"isSidechain":false`)
	plain = strings.Join(strings.Split(plain, "\n")[:2], "\n") + "\n"
	if a, b := shape(mustParse(t, plain, Options{Sidechains: true})), shape(mustParse(t, plain, Options{})); a != b || a == "" {
		t.Errorf("no subagent line: %q with --sidechains, %q without", a, b)
	}
}

func TestClaudeCodeSubagentFileIsItsOwnConversation(t *testing.T) {
	doc := strings.ReplaceAll(ccLineJSON("user", "u1", "", `{"role":"user","content":"task"}`, "")+"\n"+
		ccLineJSON("assistant", "a2", "u1", `{"id":"m","role":"assistant","content":"ok"}`, "")+"\n", `"isSidechain":false`, `"isSidechain":true`)
	tr := mustParse(t, doc, Options{})
	if len(tr.Messages) != 2 {
		t.Errorf("subagent log: %d messages, want 2", len(tr.Messages))
	}
}

func TestSingleLineSession(t *testing.T) {
	tr := mustParse(t, ccLineJSON("user", "u1", "", `{"role":"user","content":"only"}`, "")+"\n", Options{})
	if tr.Format != ClaudeCode || len(tr.Messages) != 1 {
		t.Errorf("format %s, %d messages", tr.Format, len(tr.Messages))
	}
}

func TestCodex(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/r","instructions":"be careful"}}`,
		`{"timestamp":"2026-01-01T00:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`,
		`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}`,
		`{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}`,
		`{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"a\",\"metadata\":{\"exit_code\":0}}"}}`,
		`{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":800,"output_tokens":50,"total_tokens":950},"model_context_window":272000}}}`,
		`{"timestamp":"2026-01-01T00:00:06Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
	}
	doc := strings.Join(lines, "\n") + "\n"
	tr := mustParse(t, doc, Options{})
	if tr.Format != Codex || tr.Model != "gpt-5-codex" {
		t.Fatalf("format %s model %s", tr.Format, tr.Model)
	}
	if got, want := shape(tr), "system:text|user:text|assistant:tool_call|tool:tool_result|assistant:text"; got != want {
		t.Errorf("shape\n got %s\nwant %s", got, want)
	}
	u, ok := tr.LastUsage()
	if !ok || u.Context() != 950 || u.Window != 272000 || u.After != 3 {
		t.Errorf("usage %+v", u)
	}

	compacted := `{"timestamp":"2026-01-01T00:00:07Z","type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"summary of work"}]}]}}`
	tr = mustParse(t, doc+compacted+"\n"+lines[6]+"\n", Options{})
	if got, want := shape(tr), "system:text|user:text|user:text|assistant:text"; got != want {
		t.Errorf("after compaction\n got %s\nwant %s", got, want)
	}
	if len(tr.Usage) != 0 {
		t.Errorf("usage from before a compaction must be dropped: %+v", tr.Usage)
	}
	if tr.Records[2].Message != -1 {
		t.Errorf("compacted-away line still maps to message %d", tr.Records[2].Message)
	}
}

func TestPairsReusedIDs(t *testing.T) {
	doc := `[{"role":"user","content":"go"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"first"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"b","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"second"},
	{"role":"tool","tool_call_id":"call_9","content":"orphan"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"c","arguments":"{}"}}]}]`
	tr := mustParse(t, doc, Options{})
	pairs := tr.Pairs()
	want := []Pair{
		{ID: "call_1", Call: Ref{1, 0}, Result: Ref{2, 0}},
		{ID: "call_1", Call: Ref{3, 0}, Result: Ref{4, 0}},
		{ID: "call_2", Call: Ref{6, 0}, Result: None},
		{ID: "call_9", Call: None, Result: Ref{5, 0}},
	}
	if len(pairs) != len(want) {
		t.Fatalf("pairs = %+v", pairs)
	}
	for i := range want {
		if pairs[i] != want[i] {
			t.Errorf("pair %d = %+v, want %+v", i, pairs[i], want[i])
		}
	}
}

// corpusFiles lists the conversation files of the shared corpus, or skips the test.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found at %s: %v", root, err)
	}
	var files []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".traj"),
			strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".meta.json"):
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCorpusParses(t *testing.T) {
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Parse(data, Options{Name: f})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		want := map[string]Format{"claude-code": ClaudeCode, "tau-bench": OpenAI, "swe-agent": OpenAI}
		for dir, format := range want {
			if strings.Contains(f, string(filepath.Separator)+dir+string(filepath.Separator)) && tr.Format != format {
				t.Errorf("%s: format %s, want %s", f, tr.Format, format)
			}
		}
		if strings.Contains(string(data), `"message":{`) && len(tr.Messages) == 0 {
			t.Errorf("%s: no messages", f)
		}
		for _, p := range tr.Pairs() {
			if p.Call == None {
				t.Errorf("%s: result %q has no call", f, p.ID)
			}
		}
	}
}

func TestSummaryTagMarksMessage(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"<ctxkit-summary messages=\"4\">\nGoal: x\n</ctxkit-summary>"},{"role":"assistant","content":[{"type":"text","text":"ok <ctxkit-summary"}]},{"role":"user","content":"go on"}]}`
	tr, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{}
	for _, m := range tr.Messages {
		got = append(got, m.Summary)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Summary = %v, want %v", got, want)
	}
}

// TestForcedFormatTrusted: --format claude-code on records that name no format at all (no
// uuid, no sessionId) is taken at its word; on records of another format it is an error.
func TestForcedFormatTrusted(t *testing.T) {
	plain := "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":\"yo\"}}\n"
	tr, err := Parse([]byte(plain), Options{Format: ClaudeCode})
	if err != nil || tr.Format != ClaudeCode {
		t.Fatalf("plain records with --format claude-code: %v", err)
	}
	codex := "{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"x\"}}\n{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"y\"}}\n"
	if _, err := Parse([]byte(codex), Options{Format: ClaudeCode}); err == nil || !strings.Contains(err.Error(), "codex records") {
		t.Errorf("codex records with --format claude-code: %v", err)
	}
}

// TestNotMessages: an element of the message array that is not a message is bad input,
// named, with the --path of a conversation when the elements hold one; items and
// messages that break the rules in other ways are still read.
func TestNotMessages(t *testing.T) {
	bad := []struct{ name, doc, want, hint string }{
		{"record", `[{"id":1,"title":"x"}]`, `byte 1: element 0 of the message array is not a message: an object with no "role"`, ""},
		{"number", `[1,2,3]`, "element 0 of the message array is not a message: a number", ""},
		{"string", `[{"role":"user","content":"a"},"b"]`, "element 1 of the message array is not a message: a string", ""},
		{"null", `{"messages":[null]}`, "element 0 of the message array is not a message: null", ""},
		{"nested", `[[{"role":"user","content":"a"}]]`, "element 0 of the message array is not a message: an array", "select one with --path 0"},
		{"runs", `[{"reward":1,"tr.aj":[{"role":"user","content":"a"}]}]`, "an object with no \"role\"", `select one with --path 0.tr\.aj`},
		{"wrapped runs", `{"history":[{"traj":[{"role":"user","content":"a"}]}]}`, "element 0", "select one with --path history.0.traj"},
		{"number content", `[{"role":"user","content":5}]`, "byte 26: message 0: content is a number", ""},
		{"object content", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":{"text":"b"}}]}`, "message 1: content is an object", ""},
		{"responses nested", `{"input":[{"role":"user","content":"a"},[{"role":"user","content":"b"}]]}`, `element 1 of the message array is not a message: an array`, "--path input.1"},
		{"responses content", `{"input":[{"type":"message","role":"user","content":true}]}`, "message 0: content is a boolean", ""},
	}
	for _, c := range bad {
		_, err := Parse([]byte(c.doc), Options{})
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Error(), c.want) || !strings.Contains(e.Hint, c.hint) || (c.hint == "") != (e.Hint == "") {
			t.Errorf("%s: got %v (hint %q), want %q (hint %q)", c.name, err, e.Hint, c.want, c.hint)
		}
	}
	good := []string{
		`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"}]`,
		`{"input":[{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"},{"type":"message","content":"no role"},{"type":"item_reference","id":"r"},"a string",{"note":1},7]}`,
		`{"system":"s","messages":[{"role":"user"},{"role":"assistant","content":[]}]}`,
		`[]`,
	}
	for _, doc := range good {
		if _, err := Parse([]byte(doc), Options{}); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// TestDuplicateKeys: a key the readers read, given twice in one object, is refused with
// the key and the offset of the second value, by Parse, Stream and Sniff alike; other keys
// may repeat.
func TestDuplicateKeys(t *testing.T) {
	bad := []struct{ doc, key string }{
		{`{"messages":[{"role":"user","content":"a","content":"b"}]}`, "content"},
		{`[{"role":"user","content":[{"type":"text","text":"a","type":"image"}]}]`, "type"},
		{`{"messages":[],"messages":[{"role":"user","content":"b"}]}`, "messages"},
		{`[{"role":"assistant","tool_calls":[{"id":"a","id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "id"},
		{`{"input":[{"type":"function_call_output","call_id":"a","output":"x","call_id":"b"}]}`, "call_id"},
		{"{\"type\":\"user\",\"uuid\":\"a\",\"uuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n", "uuid"},
		{"{\"type\":\"user\",\"uuid\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"user\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"parentUuid\":\"z\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}\n", "parentUuid"},
	}
	for _, c := range bad {
		want := `key "` + c.key + `" is given twice in one object`
		_, err := Parse([]byte(c.doc), Options{})
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, want) || e.Hint == "" {
			t.Errorf("Parse %s: %v, want %q", c.doc, err, want)
			continue
		}
		second := strings.LastIndex(c.doc, `"`+c.key+`":`) + len(c.key) + 3
		if e.Offset != int64(second) {
			t.Errorf("Parse %s: offset %d, want %d", c.doc, e.Offset, second)
		}
		if _, data, err := Stream(strings.NewReader(c.doc), Options{}, func(int, *Transcript) error { return nil }); data == nil && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Stream %s: %v, want %q", c.doc, err, want)
		}
	}
	if _, _, err := Sniff(strings.NewReader("{\"type\":\"user\",\"type\":\"x\",\"uuid\":\"a\"}\n"), Options{}); err == nil || !strings.Contains(err.Error(), `key "type"`) {
		t.Errorf("Sniff: %v", err)
	}
	for _, doc := range []string{
		`{"messages":[{"role":"user","content":"a","x":1,"x":2}],"metadata":{},"metadata":{}}`,
		`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1,"a":2}}]}]`,
	} {
		if _, err := Parse([]byte(doc), Options{}); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// Codex 0.101 and 0.114 write each token_count event twice, the second after the tool
// outputs: the same totals are the same request, read once, at the first event (the reply
// ends there, not after the outputs). RecordUsage names both alike, so a reader of
// records counts the request once too.
func TestCodexRepeatedTokenCount(t *testing.T) {
	count := func(in, out, total int) string {
		return fmt.Sprintf(`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d},"last_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"total_tokens":%d},"model_context_window":272000}}}`,
			total-out, out, total, in, out, in+out)
	}
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"s","instructions":"be careful"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}`,
		count(900, 50, 950),
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a long output"}}`,
		count(900, 50, 950), // the same request again, after the outputs
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
		count(1000, 20, 1970),
		count(1000, 20, 1970),
	}
	tr := mustParse(t, strings.Join(lines, "\n")+"\n", Options{})
	if len(tr.Usage) != 2 {
		t.Fatalf("%d usage figures, want 2 (one a request): %+v", len(tr.Usage), tr.Usage)
	}
	if u := tr.Usage[0]; u.After != 2 || u.Input != 900 {
		t.Errorf("first request %+v: want the figure at the call (message 2), not after its output", u)
	}
	if u := tr.Usage[1]; u.After != 4 || u.Input != 1000 {
		t.Errorf("second request %+v", u)
	}
	var turns []string
	for _, l := range lines {
		if _, turn, ok := RecordUsage(Codex, l); ok {
			turns = append(turns, turn)
		}
	}
	if len(turns) != 4 || turns[0] != turns[1] || turns[2] != turns[3] || turns[0] == turns[2] || turns[0] == "" {
		t.Errorf("RecordUsage names the events %q: want a repeat named as the event it repeats", turns)
	}
}
