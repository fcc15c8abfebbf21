package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// The JSON ctxkit writes for programs — ctx-count's report and every tool's --stats
// line — is published as JSON Schemas in schema/. These tests validate real outputs,
// of the shipped samples and (when it is there) of the corpus, against them, with a
// maintained validator (santhosh-tekuri/jsonschema: draft 2020-12, pure Go), so a field
// the code adds or changes without the schema fails here.

// compileSchema compiles schema/name.
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.NewCompiler().Compile(filepath.Join("schema", name))
	if err != nil {
		t.Fatalf("schema/%s: %v", name, err)
	}
	return s
}

// validateLines validates each line of out against s and returns how many there were.
func validateLines(t *testing.T, s *jsonschema.Schema, what string, out []byte) int {
	t.Helper()
	n := 0
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		n++
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		if err != nil {
			t.Errorf("%s: line %d is not JSON: %v", what, n, err)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: line %d does not follow its schema: %v", what, n, err)
		}
	}
	return n
}

// statsLines is the lines of stderr that are JSON, without a tool's warnings.
func statsLines(stderr []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(stderr, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("{")) {
			out = append(out, l...)
		}
	}
	return out
}

// schemaVersion is the const of the schema's schema_version property.
func schemaVersion(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("schema", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			SchemaVersion struct {
				Const int `json:"const"`
			} `json:"schema_version"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Properties.SchemaVersion.Const
}

func TestSchemaVersions(t *testing.T) {
	if got := schemaVersion(t, "count-report.json"); got != count.SchemaVersion || got < 1 {
		t.Errorf("schema/count-report.json is version %d, ctx-count writes %d", got, count.SchemaVersion)
	}
	if got := schemaVersion(t, "sessions.json"); got != count.SessionsSchemaVersion || got < 1 {
		t.Errorf("schema/sessions.json is version %d, ctx-count --sessions writes %d", got, count.SessionsSchemaVersion)
	}
	for _, name := range []string{"count-comparison.json", "count-text.json"} {
		if got := schemaVersion(t, name); got != count.SchemaVersion {
			t.Errorf("schema/%s is version %d, ctx-count writes %d", name, got, count.SchemaVersion)
		}
	}
	if got := schemaVersion(t, "stats.json"); got != cli.StatsSchemaVersion || got < 1 {
		t.Errorf("schema/stats.json is version %d, --stats writes %d", got, cli.StatsSchemaVersion)
	}
}

// TestCountReportSchema: ctx-count's JSON report of every sample, with every optional part
// (--savings, --overhead, recorded usage, --tokenizer api, -p), and of every corpus file,
// follows schema/count-report.json.
func TestCountReportSchema(t *testing.T) {
	s := compileSchema(t, "count-report.json")
	samples, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if len(samples) == 0 {
		t.Fatal("no samples in testdata")
	}
	cache := t.TempDir()
	env := func(name string) string {
		if name == "CTX_CACHE_DIR" {
			return cache
		}
		return ""
	}
	run := func(args []string, getenv func(string) string, reportOn string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := runTool("ctx-count", args, &stdout, &stderr, getenv)
		out := stdout.Bytes()
		if reportOn == "stderr" {
			out = stderr.Bytes()
		} else if stderr.Len() > 0 {
			t.Errorf("ctx-count %v: stderr %q", args, stderr.String())
		}
		if code != cli.ExitOK {
			t.Fatalf("ctx-count %v: exit %d, stderr %q", args, code, stderr.String())
		}
		if n := validateLines(t, s, "ctx-count "+strings.Join(args, " "), out); n == 0 {
			t.Errorf("ctx-count %v wrote no report", args)
		}
	}
	for _, f := range samples {
		run([]string{"--json", f}, env, "stdout")
		run([]string{"--json", "--overhead", "12k", f}, env, "stdout")
	}
	run(append([]string{"--json", "--savings"}, samples[0]), env, "stdout")
	run([]string{"--json", "--savings", filepath.Join("testdata", "session.jsonl")}, env, "stdout")
	run([]string{"-p", "--json", filepath.Join("testdata", "anthropic.json")}, env, "stderr")
	// Several files at once: one line each.
	run(append([]string{"--json"}, samples...), env, "stdout")

	// The picture's parts: files read, MCP servers, the trend with a compaction.
	picture := filepath.Join(t.TempDir(), "picture.jsonl")
	if err := os.WriteFile(picture, []byte(pictureSession), 0o600); err != nil {
		t.Fatal(err)
	}
	run([]string{"--json", picture}, env, "stdout")
	// An API request that declares MCP tools: their definitions per server.
	request := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(request, []byte(`{"model":"claude-sonnet-4-5","tools":[{"name":"mcp__slack__post","description":"Post","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run([]string{"--json", request}, env, "stdout")
	// A session with subagents (2.1's layout): each one's own context and its call.
	withSubs, subs, err := testgen.Session(testgen.Options{Format: "claude-code", Size: 60_000, Seed: 4}, 2, testgen.LayoutFolder)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sessionFile := filepath.Join(dir, gjson.GetBytes(withSubs, "sessionId").String()+".jsonl")
	if err := os.WriteFile(sessionFile, withSubs, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sa := range subs {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, sa.Path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sa.Path), sa.Log, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run([]string{"--json", sessionFile}, env, "stdout")
	{
		var stdout, stderr bytes.Buffer
		runTool("ctx-count", []string{"--json", sessionFile}, &stdout, &stderr, env)
		if n := gjson.GetBytes(stdout.Bytes(), `session.subagents.#(task.linked_by=="agent id")#`).Array(); len(n) != 2 {
			t.Errorf("the generated session's 2 subagents are not in the report with their calls: %s", gjson.GetBytes(stdout.Bytes(), "session").Raw)
		}
	}
	var rep struct {
		ByFile   []any `json:"by_file"`
		ByServer []any `json:"by_mcp_server"`
		Trend    *struct {
			Points      []any `json:"points"`
			Compactions int   `json:"compactions"`
		} `json:"trend"`
	}
	var stdout, stderr bytes.Buffer
	runTool("ctx-count", []string{"--json", picture}, &stdout, &stderr, env)
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.ByFile) == 0 || len(rep.ByServer) == 0 || rep.Trend == nil || len(rep.Trend.Points) < 2 || rep.Trend.Compactions != 1 {
		t.Errorf("the picture's parts are not all in the report (%v): %s", err, stdout.String())
	}

	url, _ := fakeCountTokens(t, 7000, http.StatusOK)
	run([]string{"--json", "--tokenizer", "api", "--model", "claude-sonnet-4-5", filepath.Join("testdata", "anthropic.json")},
		apiEnv(url, cache, "test-key"), "stdout")

	corpus := filepath.Join("..", "shared", "corpus")
	if _, err := os.Stat(corpus); err != nil {
		t.Logf("no corpus at %s: samples only", corpus)
		return
	}
	files := conformanceFiles(t)[len(samples):]
	stdout.Reset()
	stderr.Reset()
	code := runTool("ctx-count", append([]string{"--json"}, files...), &stdout, &stderr, env)
	// A corpus file that is not a conversation gets an error line and exit 3; the others
	// are still reported.
	if code != cli.ExitOK && code != cli.ExitInput {
		t.Fatalf("ctx-count on the corpus: exit %d: %s", code, stderr.String())
	}
	n := validateLines(t, s, "ctx-count on the corpus", stdout.Bytes())
	t.Logf("%d corpus reports valid", n)
	if n == 0 {
		t.Error("no corpus report")
	}
}

// pictureSession is a Claude Code session with a file read, MCP tools of a server,
// recorded usage and a compaction: every optional part of the report's picture.
const pictureSession = `{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"fix main.go"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"looking"}],"usage":{"input_tokens":900,"output_tokens":5}}}
{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"a1","content":"Conversation compacted"}
{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued: fix main.go."}}
{"type":"assistant","uuid":"a2","parentUuid":"s1","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/src/main.go"}}],"usage":{"input_tokens":300,"output_tokens":5}}}
{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"package main"}]}}
{"type":"assistant","uuid":"a3","parentUuid":"r2","message":{"id":"m3","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t2","name":"mcp__github__get_issue","input":{"number":7}}],"usage":{"input_tokens":400,"output_tokens":5}}}
{"type":"user","uuid":"r3","parentUuid":"a3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"Issue 7: prints hello"}]}}
{"type":"assistant","uuid":"a4","parentUuid":"r3","message":{"id":"m4","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":500,"output_tokens":5}}}
`

// TestCountComparisonSchema: ctx-count --vs's line follows schema/count-comparison.json.
func TestCountComparisonSchema(t *testing.T) {
	s := compileSchema(t, "count-comparison.json")
	dir := t.TempDir()
	env := func(name string) string {
		if name == "CTX_CACHE_DIR" {
			return dir
		}
		return ""
	}
	session := filepath.Join("testdata", "session.jsonl")
	trimmed := filepath.Join(dir, "trimmed.jsonl")
	var stdout, stderr bytes.Buffer
	if code := runTool("ctx-trim", []string{"--max-tokens", "5k", "-o", trimmed, session}, &stdout, &stderr, env); code != cli.ExitOK {
		t.Fatalf("ctx-trim: exit %d: %s", code, stderr.String())
	}
	for _, other := range []string{session, trimmed} {
		stdout.Reset()
		stderr.Reset()
		if code := runTool("ctx-count", []string{"--json", session, "--vs", other}, &stdout, &stderr, env); code != cli.ExitOK {
			t.Fatalf("ctx-count --vs %s: exit %d: %s", other, code, stderr.String())
		}
		if n := validateLines(t, s, "ctx-count --vs "+other, stdout.Bytes()); n != 1 {
			t.Errorf("ctx-count --vs %s: %d lines", other, n)
		}
	}
}

// TestCountTextSchema: ctx-count --text --json's lines follow schema/count-text.json,
// with and without --model.
func TestCountTextSchema(t *testing.T) {
	s := compileSchema(t, "count-text.json")
	samples, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	for _, args := range [][]string{{"--text", "--json"}, {"--text", "--json", "--model", "claude-sonnet-4-5"}, {"--text", "--json", "--tokenizer", "cl100k"}} {
		var stdout, stderr bytes.Buffer
		if code := runTool("ctx-count", append(args, samples...), &stdout, &stderr, nil); code != cli.ExitOK {
			t.Fatalf("ctx-count %v: exit %d: %s", args, code, stderr.String())
		}
		if n := validateLines(t, s, "ctx-count "+strings.Join(args, " "), stdout.Bytes()); n != len(samples) {
			t.Errorf("ctx-count %v: %d lines for %d files", args, n, len(samples))
		}
	}
}

// TestStatsSchema: the --stats line of every tool, on every sample it takes, follows
// schema/stats.json, as does a line appended to --stats-file.
func TestStatsSchema(t *testing.T) {
	s := compileSchema(t, "stats.json")
	samples, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	names := make([]string, 0, len(mains))
	for name := range mains {
		names = append(names, name)
	}
	sort.Strings(names)
	dir := t.TempDir()
	env := func(name string) string {
		switch name {
		case "CTX_CACHE_DIR":
			return filepath.Join(dir, "cache")
		case "CTX_STORE":
			return filepath.Join(dir, "store")
		case "XDG_STATE_HOME":
			return filepath.Join(dir, "state")
		}
		return ""
	}
	for _, tool := range names {
		if tool == "ctx-proxy" || tool == "ctx-recall" {
			// A server, not a filter: it reads no document argument, and its line per
			// request is its --log, not the --stats line this schema describes. ctx-recall
			// reads the store, not documents, and writes no --stats line.
			continue
		}
		lines := 0
		for _, f := range samples {
			args := []string{"--stats", f}
			switch tool {
			case "ctx-summarize":
				args = append(args, "--force") // a line that says what it summarized
			case "ctx-convert":
				args = append(args, "--to", "openai") // an API request is converted only to another format
			case "ctx-replay":
				args = append(args, "--window", "20k") // requests the tiers act on
			}
			var stdout, stderr bytes.Buffer
			code := runTool(tool, args, &stdout, &stderr, env)
			if code != cli.ExitOK {
				t.Errorf("%s %v: exit %d: %s", tool, args, code, stderr.String())
				continue
			}
			lines += validateLines(t, s, tool+" "+strings.Join(args, " "), statsLines(stderr.Bytes()))
		}
		if lines < len(samples) {
			t.Errorf("%s: %d stats lines for %d samples", tool, lines, len(samples))
		}
	}
	// --stats-file, and the lines of ctx-persist --restore and the dry runs.
	file := filepath.Join(dir, "stats.jsonl")
	session := filepath.Join("testdata", "session.jsonl")
	for _, c := range [][]string{
		{"ctx-persist", "--threshold", "1KB", "-o", filepath.Join(dir, "p.jsonl"), session},
		{"ctx-persist", "--restore", filepath.Join(dir, "p.jsonl")},
		{"ctx-snip", "-n", "--idle", "0", session},
		{"ctx-trim", "-n", "--max-tokens", "5k", session},
		{"ctx-repair", "--check", session},
		{"ctx-budget", "--cap", "2000", session},
		// the repay judgements (repay, above_target, held_to_hard_cap)
		{"ctx-summarize", "--trigger", "50%", "--keep", "7000", "--window", "16.5k", "--reserve", "0", filepath.Join("testdata", "anthropic.json")},
		{"ctx-budget", "--window", "20k", "--reserve", "0", "--mid-cap", "600", session},
	} {
		var stdout, stderr bytes.Buffer
		if code := runTool(c[0], append([]string{"--stats-file", file}, c[1:]...), &stdout, &stderr, env); code != cli.ExitOK && code != cli.ExitCheck {
			t.Errorf("%v: exit %d: %s", c, code, stderr.String())
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := validateLines(t, s, "--stats-file", b); n != 8 {
		t.Errorf("--stats-file holds %d lines, want 8", n)
	}
	for _, key := range []string{`"above_target":true`, `"repay":{"saved":`, `"held_to_hard_cap":1`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("no stats line holds %s: the repay judgements are not validated", key)
		}
	}
}

// TestSchemasReject: the schemas are not vacuous: a report or a line without its
// schema_version, with a field of the wrong type, or (for the report) with a field the
// schema does not describe, is refused.
// TestSessionsSchema: the lines of ctx-count --sessions, of a Claude Code session and a
// Codex rollout in a made-up home, follow schema/sessions.json.
func TestSessionsSchema(t *testing.T) {
	s := compileSchema(t, "sessions.json")
	home := t.TempDir()
	copyTo := func(sample, dst string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", sample))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyTo("session.jsonl", filepath.Join(home, ".claude", "projects", "-src-app", "a.jsonl"))
	copyTo("codex.jsonl", filepath.Join(home, ".codex", "sessions", "2026", "11", "24", "rollout-a.jsonl"))
	env := func(name string) string {
		switch name {
		case "HOME":
			return home
		case "CTX_CACHE_DIR":
			return "off"
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	if code := runTool("ctx-count", []string{"--sessions", "--all-projects"}, &stdout, &stderr, env); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := validateLines(t, s, "ctx-count --sessions", stdout.Bytes()); n != 2 {
		t.Errorf("%d lines, want 2:\n%s", n, stdout.String())
	}
}

func TestSchemasReject(t *testing.T) {
	report := compileSchema(t, "count-report.json")
	stats := compileSchema(t, "stats.json")
	var stdout, stderr bytes.Buffer
	if code := runTool("ctx-count", []string{"--json", "--stats", filepath.Join("testdata", "openai.json")}, &stdout, &stderr, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, c := range []struct {
		s    *jsonschema.Schema
		line []byte
		edit func(m map[string]any)
	}{
		{report, stdout.Bytes(), func(m map[string]any) { delete(m, "schema_version") }},
		{report, stdout.Bytes(), func(m map[string]any) { m["schema_version"] = 2 }},
		{report, stdout.Bytes(), func(m map[string]any) { m["tokens"] = "many" }},
		{report, stdout.Bytes(), func(m map[string]any) { m["surprise"] = true }},
		{report, stdout.Bytes(), func(m map[string]any) { m["by_file"] = []any{map[string]any{"reads": 1, "tokens": 3}} }},
		{report, stdout.Bytes(), func(m map[string]any) { delete(m, "by_mcp_server") }},
		{report, stdout.Bytes(), func(m map[string]any) {
			m["trend"] = map[string]any{"source": "token_count", "points": []any{map[string]any{"message": 1, "tokens": -5}}, "compactions": 0, "compacted_at": []any{}}
		}},
		{stats, stderr.Bytes(), func(m map[string]any) { delete(m, "schema_version") }},
		{stats, stderr.Bytes(), func(m map[string]any) { m["tokens_after"] = -1 }},
		{stats, stderr.Bytes(), func(m map[string]any) { m["format"] = "auto" }},
	} {
		var m map[string]any
		if err := json.Unmarshal(c.line, &m); err != nil {
			t.Fatal(err)
		}
		if err := c.s.Validate(jsonNumbers(t, m)); err != nil {
			t.Fatalf("the unedited line is refused: %v", err)
		}
		c.edit(m)
		if c.s.Validate(jsonNumbers(t, m)) == nil {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			t.Errorf("an edited line is accepted: %v", keys)
		}
	}
}

// jsonNumbers round-trips v through jsonschema's decoder, which keeps numbers as
// json.Number (the validator's integer checks need that).
func jsonNumbers(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
