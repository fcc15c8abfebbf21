package count

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// ccPicture is a Claude Code session that reads a file, is compacted, reads it again,
// calls two MCP servers' tools and edits the file; every request records usage.
var ccPicture = strings.Join([]string{
	`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"fix the bug in main.go"}}`,
	ccTurn("a1", "u1", "m1", 1000, `{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/src/app/main.go"}}`),
	ccResults("r1", "a1", `{"type":"tool_result","tool_use_id":"t1","content":"package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"}`),
	`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"r1","content":"Conversation compacted"}`,
	`{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation. The user asked to fix main.go."}}`,
	ccTurn("a2", "s1", "m2", 500, `{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/src/app/main.go"}}`),
	ccResults("r2", "a2", `{"type":"tool_result","tool_use_id":"t2","content":"package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"}`),
	ccTurn("a3", "r2", "m3", 800, `{"type":"tool_use","id":"t3","name":"mcp__github__get_issue","input":{"owner":"me","repo":"app","number":7}}`),
	ccResults("r3", "a3", `{"type":"tool_result","tool_use_id":"t3","content":"Issue 7: main prints hello instead of hello, world."}`),
	ccTurn("a4", "r3", "m4", 1000, `{"type":"tool_use","id":"t4","name":"mcp__github__add_comment","input":{"issue":7,"body":"on it"}},{"type":"tool_use","id":"t5","name":"mcp__linear__search","input":{"q":"greeting"}}`),
	ccResults("r4", "a4", `{"type":"tool_result","tool_use_id":"t4","content":"ok"},{"type":"tool_result","tool_use_id":"t5","content":"no results"}`),
	ccTurn("a5", "r4", "m5", 1200, `{"type":"tool_use","id":"t6","name":"Edit","input":{"file_path":"/src/app/main.go","old_string":"hello","new_string":"hello, world"}}`),
	ccResults("r5", "a5", `{"type":"tool_result","tool_use_id":"t6","content":"The file /src/app/main.go has been updated."}`),
	ccTurn("a6", "r5", "m6", 1300, `{"type":"text","text":"Fixed: main now prints hello, world."}`),
}, "\n") + "\n"

func ccTurn(uuid, parent, id string, prompt int, content string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"message":{"id":%q,"role":"assistant","model":"claude-sonnet-4-5","content":[%s],"usage":{"input_tokens":10,"cache_read_input_tokens":%d,"cache_creation_input_tokens":0,"output_tokens":20}}}`,
		uuid, parent, id, content, prompt-10)
}

func ccResults(uuid, parent, content string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%q,"message":{"role":"user","content":[%s]}}`, uuid, parent, content)
}

// codexPicture is a Codex rollout whose shell reads a file with cat, is compacted, then
// reads it with sed -n and another with nl; token_count records each request.
var codexPicture = strings.Join([]string{
	`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/repo","instructions":"You are a coding agent."}}`,
	`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"look at the handler"}]}}`,
	codexShell("c1", `cat internal/handler.go`, "package handler\n\nfunc Handle() {}\n"),
	codexUsage(900),
	`{"timestamp":"2026-01-01T00:00:05Z","type":"compacted","payload":{"message":"summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Summary: the handler was read."}]}]}}`,
	codexShell("c2", `sed -n '1,40p' internal/handler.go`, "package handler\n\nfunc Handle() {}\n"),
	codexUsage(400),
	codexShell("c3", `nl -ba web/app.ts`, "     1\texport const app = 1;\n"),
	codexUsage(600),
	codexShell("c4", `go test ./...`, "ok\n"),
	codexUsage(700),
}, "\n") + "\n"

func codexShell(id, script, output string) string {
	args := fmt.Sprintf(`{"command":["bash","-lc",%q],"workdir":"/repo"}`, script)
	return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":%q,"call_id":%q}}`, args, id) + "\n" +
		fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":%q,"output":%q}}`, id, output)
}

func codexUsage(input int) string {
	return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":10,"total_tokens":%d},"model_context_window":258400}}}`, input, input+10)
}

func pictureReport(t *testing.T, doc string) Report {
	t.Helper()
	return Measure(parse(t, doc), Options{File: "x.jsonl", Counter: fixed{}, Window: testWindow})
}

// TestFilesPerPath: each file's reads are counted apart, by the path their call names
// (Read and Edit; shell cat, sed -n and nl resolved against the working directory; a
// Cline result's label), with how many results of it there are.
func TestFilesPerPath(t *testing.T) {
	r := pictureReport(t, ccPicture)
	// The compaction leaves one Read in the live conversation; the Edit's result is the other.
	if len(r.ByFile) != 1 || r.ByFile[0].Path != "/src/app/main.go" || r.ByFile[0].Reads != 2 || r.ByFile[0].Tokens <= 0 {
		t.Errorf("claude-code: by_file %+v", r.ByFile)
	}

	r = pictureReport(t, codexPicture)
	got := map[string]FileCount{}
	for _, f := range r.ByFile {
		got[f.Path] = f
	}
	// (the cat is before the compaction: not in the conversation the model sees)
	if len(got) != 2 || got["/repo/internal/handler.go"].Reads != 1 || got["/repo/web/app.ts"].Reads != 1 {
		t.Errorf("codex: by_file %+v", r.ByFile)
	}
	if h, a := got["/repo/internal/handler.go"], got["/repo/web/app.ts"]; h.Tokens <= a.Tokens || r.ByFile[0] != h {
		t.Errorf("codex: not most expensive first: %+v", r.ByFile)
	}

	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cline.json"))
	if err != nil {
		t.Fatal(err)
	}
	r = pictureReport(t, string(data))
	if len(r.ByFile) == 0 || r.ByFile[0].Path != "internal/server/handler.go" || r.ByFile[0].Reads != 3 {
		t.Errorf("cline: by_file %+v", r.ByFile)
	}
	for _, f := range r.ByFile {
		if strings.ContainsAny(f.Path, " '") {
			t.Errorf("cline: a command or a search taken for a path: %q", f.Path)
		}
	}
}

// TestMCPByServer: mcp__SERVER__TOOL tools are summed per server, calls and results, the
// server's tools listed without the prefix, most expensive first.
func TestMCPByServer(t *testing.T) {
	r := pictureReport(t, ccPicture)
	if len(r.ByServer) != 2 {
		t.Fatalf("by_mcp_server %+v", r.ByServer)
	}
	gh, lin := r.ByServer[0], r.ByServer[1]
	if gh.Server != "github" || gh.Calls != 2 || len(gh.Tools) != 2 || gh.Tools[0].Name != "get_issue" || gh.Tools[1].Name != "add_comment" {
		t.Errorf("github: %+v", gh)
	}
	if gh.Tokens != gh.Tools[0].Tokens+gh.Tools[1].Tokens || gh.Tokens != gh.CallTokens+gh.ResultTokens {
		t.Errorf("github: the sums do not add up: %+v", gh)
	}
	if lin.Server != "linear" || lin.Calls != 1 || lin.Tools[0].Name != "search" {
		t.Errorf("linear: %+v", lin)
	}
	for _, name := range []string{"mcp__", "mcp__x", "mcp____tool", "Read"} {
		if _, _, ok := mcpServer(name); ok {
			t.Errorf("%q taken for an MCP tool", name)
		}
	}
	// A request that declares its tools: the definitions go to their servers, a server
	// declared but never called too.
	req := `{"model":"claude-sonnet-4-5","tools":[
	{"name":"mcp__github__get_issue","description":"Get an issue","input_schema":{"type":"object","properties":{"number":{"type":"integer"}}}},
	{"name":"mcp__slack__post","description":"Post a message to a channel","input_schema":{"type":"object"}},
	{"name":"Read","description":"Read a file","input_schema":{"type":"object"}}],
	"messages":[{"role":"user","content":"issue 7?"},
	{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__github__get_issue","input":{"number":7}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"prints hello"}]}]}`
	r = pictureReport(t, req)
	if len(r.ByServer) != 2 {
		t.Fatalf("request: by_mcp_server %+v", r.ByServer)
	}
	byName := map[string]ServerCount{}
	for _, s := range r.ByServer {
		byName[s.Server] = s
	}
	gh, slack := byName["github"], byName["slack"]
	if gh.Definitions != 1 || gh.DefinitionTokens <= 0 || gh.Calls != 1 || gh.Tokens != gh.CallTokens+gh.ResultTokens+gh.DefinitionTokens {
		t.Errorf("request: github %+v", gh)
	}
	if slack.Definitions != 1 || slack.Calls != 0 || slack.Tokens != slack.DefinitionTokens || len(slack.Tools) != 0 {
		t.Errorf("request: slack %+v", slack)
	}
	if gh.DefinitionTokens+slack.DefinitionTokens >= r.Categories.Tools {
		t.Errorf("request: MCP definitions %d of all tools' %d", gh.DefinitionTokens+slack.DefinitionTokens, r.Categories.Tools)
	}
	var b bytes.Buffer
	Render(&b, &r, false, 80)
	if !strings.Contains(b.String(), "21.4%  not called") {
		t.Errorf("request: the uncalled server is not said:\n%s", b.String())
	}

	if r := pictureReport(t, codexPicture); len(r.ByServer) != 0 {
		t.Errorf("no MCP tools, yet %+v", r.ByServer)
	}
}

// TestTrend: the recorded prompt of each request, in order, with the compactions the file
// records and the summary the live conversation starts with.
func TestTrend(t *testing.T) {
	r := pictureReport(t, ccPicture)
	tr := r.Trend
	if tr == nil || tr.Source != "message.usage" || tr.Compactions != 1 || len(tr.CompactedAt) != 1 || tr.CompactedAt[0] != 0 {
		t.Fatalf("claude-code: trend %+v", tr)
	}
	var got []int
	for _, p := range tr.Points {
		got = append(got, p.Tokens)
	}
	if fmt.Sprint(got) != "[500 800 1000 1200 1300]" {
		t.Errorf("claude-code: points %v", got)
	}

	// The whole session: the figure before the compaction too, and where it was.
	if fmt.Sprint(tr.Session, tr.SessionCompactedAfter) != "[1000 500 800 1000 1200 1300] [1]" {
		t.Errorf("claude-code: session %v, compacted after %v", tr.Session, tr.SessionCompactedAfter)
	}

	tr = pictureReport(t, codexPicture).Trend
	if tr == nil || tr.Source != "token_count" || tr.Compactions != 1 {
		t.Fatalf("codex: trend %+v", tr)
	}
	got = nil
	for _, p := range tr.Points {
		got = append(got, p.Tokens)
	}
	if fmt.Sprint(got) != "[400 600 700]" {
		t.Errorf("codex: points %v", got)
	}
	if fmt.Sprint(tr.Session, tr.SessionCompactedAfter) != "[900 400 600 700] [1]" {
		t.Errorf("codex: session %v, compacted after %v", tr.Session, tr.SessionCompactedAfter)
	}

	// Nothing recorded, nothing compacted: no trend.
	if r := pictureReport(t, `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`); r.Trend != nil {
		t.Errorf("trend %+v of a request that records nothing", r.Trend)
	}
}

// TestStreamedNotesMatchWhole: the files and compactions a streamed document's records
// give are those of the document read whole.
func TestStreamedNotesMatchWhole(t *testing.T) {
	for _, doc := range []string{ccPicture, codexPicture} {
		sameReport(t, "picture", []byte(doc), transcript.Options{}, fixed{})
	}
}

func TestSparkline(t *testing.T) {
	line, cellOf := sparkline([]int{0, 50, 100}, 100, 10)
	if string(line) != "▁▅█" || fmt.Sprint(cellOf) != "[0 1 2]" {
		t.Errorf("%q %v", string(line), cellOf)
	}
	// More values than cells: each cell shows the peak of its values.
	line, cellOf = sparkline([]int{10, 100, 10, 10}, 100, 2)
	if string(line) != "█▁" || fmt.Sprint(cellOf) != "[0 0 1 1]" {
		t.Errorf("%q %v", string(line), cellOf)
	}
}

// TestRenderPicture: the trend, the files and the MCP servers are drawn under the window's
// figures, fitted to 60, 80 and 120 columns, and the window bar stays at the top.
func TestRenderPicture(t *testing.T) {
	r := Measure(parse(t, ccPicture), Options{File: "x.jsonl", Counter: estimateCounter(t), Window: testWindow})
	for _, width := range []int{60, 80, 120} {
		var b bytes.Buffer
		Render(&b, &r, false, width)
		out := b.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !strings.HasPrefix(lines[1], "  [") {
			t.Errorf("%d columns: the bar is not the second line: %q", width, lines[1])
		}
		for _, line := range lines {
			if n := visibleWidth(line); n > width {
				t.Errorf("%d columns: a line of %d: %q", width, n, line)
			}
		}
		for _, want := range []string{"Trend: 1,000 → 1,300 tokens over 6 requests", "  ▇▄▅▇██\n   ┃ compaction\n", "compacted",
			"Files read\n  /src/app/main.go ", " 2 reads ", "MCP servers\n  github ", "\n  linear "} {
			if !strings.Contains(out, want) {
				t.Errorf("%d columns: no %q in\n%s", width, want, out)
			}
		}
		if trend, files := strings.Index(out, "Trend"), strings.Index(out, "Files read"); trend < strings.Index(out, "reserved for the reply") || files < trend {
			t.Errorf("%d columns: sections out of order:\n%s", width, out)
		}
		if width >= 80 && !strings.Contains(out, "  get_issue, add_") || width == 120 && !strings.Contains(out, "get_issue, add_comment\n") {
			t.Errorf("%d columns: the server's tools are not named:\n%s", width, out)
		}
	}

	// A document with no reads, no MCP tools and no recorded usage draws none of it.
	r = pictureReport(t, `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`)
	var b bytes.Buffer
	Render(&b, &r, false, 80)
	for _, no := range []string{"Trend", "Files read", "MCP servers"} {
		if strings.Contains(b.String(), no) {
			t.Errorf("%q drawn for a document without it:\n%s", no, b.String())
		}
	}
}

// TestPictureCorpus: on the real Claude Code sessions, the files' tokens are part of the
// tool results', and a session that records usage has its trend.
func TestPictureCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found at %s", root)
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skip("no sessions in the corpus")
	}
	withFiles := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{})
		if err != nil {
			continue
		}
		r := Measure(tr, Options{File: f, Counter: estimateCounter(t), Window: testWindow})
		sum := 0
		for _, fc := range r.ByFile {
			sum += fc.Tokens
			if fc.Path == "" || fc.Reads < 1 {
				t.Errorf("%s: %+v", f, fc)
			}
		}
		if sum > r.Categories.ToolResults {
			t.Errorf("%s: files %d tokens, all tool results %d", f, sum, r.Categories.ToolResults)
		}
		if len(r.ByFile) > 0 {
			withFiles++
		}
		if len(tr.Usage) > 0 && (r.Trend == nil || len(r.Trend.Points) != len(tr.Usage)) {
			t.Errorf("%s: %d usage figures, trend %+v", f, len(tr.Usage), r.Trend)
		}
	}
	if withFiles == 0 {
		t.Error("no corpus session reads a file")
	}
	t.Logf("%d of %d sessions read files", withFiles, len(files))
}

// TestRenderTrendMarksCompaction: a summary inside the series (a ctxkit summary the agent
// went on from) is marked under the first request after it; more requests than cells
// are drawn in the bar's width.
func TestRenderTrendMarksCompaction(t *testing.T) {
	r := Report{EffectiveWindow: 1000, Trend: &Trend{Source: "message.usage", Compactions: 1, CompactedAt: []int{6}}}
	for i := range 300 {
		tokens := 100 + i*2
		if i >= 3 {
			tokens = 50 + i
		}
		r.Trend.Points = append(r.Trend.Points, TrendPoint{Message: 2*i + 1, Tokens: tokens})
	}
	for _, width := range []int{60, 80, 120} {
		var b bytes.Buffer
		renderTrend(&b, &r, func(_, s string) string { return s }, width)
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		// (the heading may wrap: the chart is the line before the marks, which come last)
		if len(lines) < 4 {
			t.Fatalf("%d columns: %q", width, lines)
		}
		chart, marks := []rune(strings.TrimPrefix(lines[len(lines)-2], "  ")), lines[len(lines)-1]
		if len(chart) != barWidth(width) {
			t.Errorf("%d columns: a chart of %d cells", width, len(chart))
		}
		// (the first request after the summary is the 4th of 300: its cell)
		if want := "  " + strings.Repeat(" ", 3*barWidth(width)/300) + "┃ compaction"; marks != want {
			t.Errorf("%d columns: marks %q", width, marks)
		}
		for _, line := range lines {
			if visibleWidth(line) > width {
				t.Errorf("%d columns: %q", width, line)
			}
		}
	}
}
