package snip

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// rules are the defaults without the test of what a firing is worth: the tests of which
// results each rule clears.
func rules() Options {
	o := Defaults()
	o.MinShare, o.Repay = 0, 0
	return o
}

func estimate() tokens.Counter {
	c, _ := tokens.New("estimate")
	return c
}

// step is one tool call and its result.
type step struct {
	tool, input, result string
	isError             bool
}

func big(s string) string { return strings.Repeat(s+" ", 1000) }

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// anthropicDoc makes a Messages request: a user request, one assistant turn and one user
// turn per step, then a final answer and a user follow-up (the protected newest messages).
func anthropicDoc(steps ...step) string {
	var ms []string
	ms = append(ms, `{"role":"user","content":"fix the bug"}`)
	for i, s := range steps {
		id := fmt.Sprintf("toolu_%02d", i)
		ms = append(ms, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]}`, id, s.tool, s.input))
		errField := ""
		if s.isError {
			errField = `,"is_error":true`
		}
		ms = append(ms, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s%s}]}`, id, q(s.result), errField))
	}
	ms = append(ms, `{"role":"assistant","content":"done"}`, `{"role":"user","content":"thanks"}`)
	return `{"model":"claude-sonnet-4-5","system":"You are helpful.","messages":[` + strings.Join(ms, ",") + `]}`
}

// openaiDoc is the same conversation as Chat Completions messages.
func openaiDoc(steps ...step) string {
	var ms []string
	ms = append(ms, `{"role":"system","content":"You are helpful."}`, `{"role":"user","content":"fix the bug"}`)
	for i, s := range steps {
		id := fmt.Sprintf("call_%02d", i)
		ms = append(ms, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, id, s.tool, q(s.input)))
		ms = append(ms, fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%s}`, id, q(s.result)))
	}
	ms = append(ms, `{"role":"assistant","content":"done"}`, `{"role":"user","content":"thanks"}`)
	return `{"model":"gpt-4o","messages":[` + strings.Join(ms, ",") + `]}`
}

// run plans doc at utilization util (the effective window is set to make it so) and
// applies the edits. It checks that the tier's token figures match count.Total.
func snipAt(t *testing.T, doc string, util float64, o Options) (string, Stats) {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	o.Counter = estimate()
	o.Tokens = measure.Total(tr, o.Counter)
	o.Effective = int(math.Ceil(float64(o.Tokens) / util))
	edits, _, st := Plan(tr, o)
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	after, err := transcript.Parse(out, transcript.Options{})
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	if got := measure.Total(after, o.Counter); got != o.Tokens+st.TokensDelta {
		t.Errorf("tokens after = %d, the tier said %d%+d", got, o.Tokens, st.TokensDelta)
	}
	return string(out), st
}

// outcome lists each tool result's fate in order: its reason, or "-" when kept.
func outcome(t *testing.T, doc string, st Stats) string {
	tr, _ := transcript.Parse([]byte(doc), transcript.Options{})
	why := map[[2]int]Reason{}
	for _, it := range st.Items {
		why[[2]int{it.Message, it.Block}] = it.Reason
	}
	var out []string
	for mi, m := range tr.Messages {
		for bi, b := range m.Blocks {
			if b.Kind == transcript.ToolResult {
				r := string(why[[2]int{mi, bi}])
				if r == "" {
					r = "-"
				}
				out = append(out, r)
			}
		}
	}
	return strings.Join(out, " ")
}

func read(path, extra string) step {
	return step{tool: "Read", input: `{"file_path":"` + path + `"` + extra + `}`, result: big("contents of " + path)}
}

func grep(pattern string) step {
	return step{tool: "Grep", input: `{"pattern":"` + pattern + `"}`, result: big("match " + pattern)}
}

func bash(cmd string) step {
	return step{tool: "Bash", input: `{"command":` + q(cmd) + `}`, result: big("output of " + cmd)}
}

func TestRules(t *testing.T) {
	// Keep 0 and a target at the trigger leave old results alone unless the stale rules
	// fire, so each case shows one rule; util 0.7 is above the default trigger.
	stale := rules()
	stale.Target = stale.Trigger
	tests := []struct {
		name  string
		steps []step
		o     Options
		util  float64
		want  string
	}{
		{"below trigger", []step{read("/a", ""), read("/a", "")}, rules(), 0.5, "- -"},
		{"at trigger", []step{read("/a", ""), read("/a", "")}, rules(), 0.6, "- -"},
		{"reread", []step{read("/a", ""), read("/b", ""), read("/a", "")}, stale, 0.7, "reread - -"},
		{"reread twice", []step{read("/a", ""), read("/a", ""), read("/a", "")}, stale, 0.7, "reread reread -"},
		{"whole supersedes range", []step{read("/a", `,"offset":10`), read("/a", "")}, stale, 0.7, "reread -"},
		{"range does not supersede whole", []step{read("/a", ""), read("/a", `,"offset":10`)}, stale, 0.7, "- -"},
		{"same range supersedes", []step{read("/a", `,"offset":10`), read("/a", `,"offset":10`)}, stale, 0.7, "reread -"},
		{"other range does not", []step{read("/a", `,"offset":10`), read("/a", `,"offset":90`)}, stale, 0.7, "- -"},
		{"cat then Read", []step{bash("cat /a"), read("/a", "")}, stale, 0.7, "reread -"},
		{"cd cat then Read", []step{bash("cd /r && cat a"), read("/r/a", "")}, stale, 0.7, "reread -"},
		{"error read superseded", []step{{tool: "Read", input: `{"file_path":"/a"}`, result: big("Error: EACCES"), isError: true}, read("/a", "")}, stale, 0.7, "reread -"},
		{"superseded by an error", []step{read("/a", ""), {tool: "Read", input: `{"file_path":"/a"}`, result: "File does not exist.", isError: true}}, stale, 0.7, "reread -"},
		{"repeated search", []step{grep("x"), grep("y"), grep("x")}, stale, 0.7, "repeated-search - -"},
		{"repeated shell search", []step{bash("rg -n foo"), bash("go test ./..."), bash("rg -n foo")}, stale, 0.7, "repeated-search - -"},
		{"repeated command is not a search", []step{bash("go test ./..."), bash("go test ./...")}, stale, 0.7, "- -"},
		{"max searches", []step{grep("a"), grep("b"), grep("c"), grep("d"), read("/a", "")}, func() Options { o := stale; o.MaxSearches = 2; return o }(), 0.7, "max-searches max-searches - - -"},
		{"max searches per tool", []step{grep("a"), bash("rg a"), grep("b"), bash("rg b")}, func() Options { o := stale; o.MaxSearches = 1; o.Keep = 0; return o }(), 0.7, "max-searches max-searches - -"},
		{"max searches spare the newest", []step{grep("a"), bash("rg a"), grep("b"), bash("rg b")}, func() Options { o := stale; o.MaxSearches = 1; return o }(), 0.7, "max-searches - - -"},
		{"max searches off", []step{grep("a"), grep("b"), grep("c")}, func() Options { o := stale; o.MaxSearches = 0; return o }(), 0.7, "- - -"},
		{"old down to target", []step{bash("make a"), bash("make b"), bash("make c"), bash("make d"), bash("make e")}, func() Options { o := rules(); o.Keep = 1; o.Target = 0.6; return o }(), 0.7, "old - - - -"},
		{"old all when target 0", []step{bash("make a"), bash("make b"), bash("make c"), bash("make d"), bash("make e")}, func() Options { o := rules(); o.Target = 0; return o }(), 0.7, "old old - - -"},
		{"keep more than results", []step{bash("make a"), bash("make b")}, func() Options { o := rules(); o.Keep = 9; o.Target = 0; return o }(), 0.9, "- -"},
		{"stale within keep", []step{read("/a", ""), read("/a", "")}, func() Options { o := rules(); o.Keep = 5; return o }(), 0.7, "reread -"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := anthropicDoc(tc.steps...)
			out, st := snipAt(t, doc, tc.util, tc.o)
			if got := outcome(t, doc, st); got != tc.want {
				t.Errorf("results: %s, want %s", got, tc.want)
			}
			if tc.want == strings.Repeat("- ", len(tc.steps))[:2*len(tc.steps)-1] && out != doc {
				t.Errorf("nothing cleared, but the document changed")
			}
			// The same rules on the same conversation in Chat Completions.
			odoc := openaiDoc(tc.steps...)
			_, ost := snipAt(t, odoc, tc.util, tc.o)
			if got := outcome(t, odoc, ost); got != tc.want {
				t.Errorf("openai results: %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlaceholder(t *testing.T) {
	doc := anthropicDoc(read("/repo/main.go", ""), read("/repo/main.go", ""), bash("go test ./..."), grep("x"), grep("y"), grep("z"))
	o := rules()
	o.Keep, o.MaxSearches, o.Target = 1, 1, 0
	out, st := snipAt(t, doc, 0.7, o)
	texts := resultTexts(t, out)
	want := []string{
		`[ctx-snip: result of Read("/repo/main.go") cleared (%s tokens); the file was read again later — re-run the call to see it]`,
		`[ctx-snip: result of Read("/repo/main.go") cleared (%s tokens); an older result, cleared to free context — re-run the call to see it]`,
		`[ctx-snip: result of Bash("go test ./...") cleared (%s tokens); an older result, cleared to free context — re-run the call to see it]`,
		`[ctx-snip: result of Grep("x") cleared (%s tokens); only the newest 1 Grep results are kept — re-run the call to see it]`,
		`[ctx-snip: result of Grep("y") cleared (%s tokens); only the newest 1 Grep results are kept — re-run the call to see it]`,
		"",
	}
	for i, w := range want {
		if w == "" {
			if strings.HasPrefix(texts[i], Marker) {
				t.Errorf("result %d cleared: %s", i, texts[i])
			}
			continue
		}
		w = fmt.Sprintf(w, human.Thousands(st.Items[i].Tokens))
		if texts[i] != w {
			t.Errorf("result %d:\n got %s\nwant %s", i, texts[i], w)
		}
	}
	if st.Items[0].Tokens < 1000 {
		t.Errorf("tokens = %d, want the size of a 5 KB result", st.Items[0].Tokens)
	}
}

// resultTexts decodes each tool result's content.
func resultTexts(t *testing.T, doc string) []string {
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range tr.Messages {
		for i := range m.Blocks {
			if b := &m.Blocks[i]; b.Kind == transcript.ToolResult {
				out = append(out, tr.BodyText(b))
			}
		}
	}
	return out
}

func TestIdempotentAndNeverTwice(t *testing.T) {
	doc := anthropicDoc(read("/a", ""), bash("make"), read("/a", ""), grep("x"), grep("x"), bash("make 2"))
	o := rules()
	o.Keep, o.Target = 1, 0
	once, st := snipAt(t, doc, 0.9, o)
	if len(st.Items) == 0 {
		t.Fatal("nothing cleared")
	}
	// Still above the trigger afterwards (a tiny window): nothing is cleared twice.
	tr, _ := transcript.Parse([]byte(once), transcript.Options{})
	o.Counter = estimate()
	o.Tokens = measure.Total(tr, o.Counter)
	o.Effective = o.Tokens / 2
	edits, _, st2 := Plan(tr, o)
	if len(edits) != 0 || len(st2.Items) != 0 {
		t.Errorf("second run changed %d spans: %+v", len(edits), st2.Items)
	}
	if !st2.Acted || st2.Already != len(st.Items) {
		t.Errorf("second run: acted %v, already %d; want true, %d", st2.Acted, st2.Already, len(st.Items))
	}
}

func TestProtectedMessages(t *testing.T) {
	// The newest user message holds the last results: never cleared, even with keep 0.
	doc := `{"system":"s","messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/repo/internal/server/handler.go"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":` + q(big("old")) + `}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Read","input":{"file_path":"/repo/internal/server/handler.go"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":` + q(big("new")) + `}]}]}`
	o := rules()
	o.Keep, o.Target, o.ClearInputs = 0, 0, true
	out, st := snipAt(t, doc, 0.9, o)
	if got := outcome(t, doc, st); got != "reread -" {
		t.Errorf("results: %s, want reread -", got)
	}
	// The first call's input is cleared; the second call is in the newest assistant
	// message and keeps it.
	if !strings.Contains(out, `"input":{"ctx_snip":"cleared 12 tokens"}`) || !strings.Contains(out, `"id":"b","name":"Read","input":{"file_path":"/repo/internal/server/handler.go"}`) {
		t.Errorf("inputs: %s", out)
	}
}

func TestClearInputsNotInProtectedCall(t *testing.T) {
	// Chat Completions: the newest assistant message makes the call and its result is a
	// tool message, which no rule protects. With keep 0 the result goes, but the call's
	// arguments stay: the newest assistant message is never altered.
	args := q(`{"path":"/repo/internal/server/handler.go"}`)
	doc := `{"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":` + args + `}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":` + q(big("file")) + `}]}`
	o := rules()
	o.Keep, o.Target, o.ClearInputs = 0, 0, true
	out, st := snipAt(t, doc, 0.9, o)
	if len(st.Items) != 1 || st.Inputs != 0 || !strings.Contains(out, `"arguments":`+args) {
		t.Errorf("items %d, inputs %d:\n%s", len(st.Items), st.Inputs, out)
	}
}

func TestClearInputs(t *testing.T) {
	const long = "/repo/internal/server/handler.go"
	steps := []step{read(long, ""), read(long, "")}
	o := rules()
	o.ClearInputs = true
	out, st := snipAt(t, anthropicDoc(steps...), 0.7, o)
	if st.Inputs != 1 || !st.Items[0].InputCleared {
		t.Errorf("inputs cleared: %d, item %+v", st.Inputs, st.Items)
	}
	if got := gjson.Get(out, "messages.1.content.0.input").Raw; !strings.HasPrefix(got, stubJSONStart) || !strings.HasSuffix(got, ` tokens"}`) {
		t.Errorf("anthropic input = %s, want %s (N tokens)", got, stubJSONStart)
	}
	if got := gjson.Get(out, "messages.3.content.0.input").Raw; got != `{"file_path":"`+long+`"}` {
		t.Errorf("kept call's input = %s", got)
	}

	out, _ = snipAt(t, openaiDoc(steps...), 0.7, o)
	args := gjson.Get(out, "messages.2.tool_calls.0.function.arguments")
	if args.Type != gjson.String || !strings.HasPrefix(args.Str, stubJSONStart) {
		t.Errorf("openai arguments = %s, want a string holding %s", args.Raw, stubJSONStart)
	}

	// A free-form input (a custom tool) gets a text stub.
	doc := `{"input":[` +
		`{"type":"message","role":"user","content":"go"},` +
		`{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":` + q(big("*** Begin Patch")) + `},` +
		`{"type":"custom_tool_call_output","call_id":"c1","output":` + q(big("Done")) + `},` +
		`{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"x"},` +
		`{"type":"custom_tool_call_output","call_id":"c2","output":"ok"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}]}`
	o.Keep, o.Target = 0, 0
	out, st = snipAt(t, doc, 0.9, o)
	if got := gjson.Get(out, "input.1.input").Str; !strings.HasPrefix(got, stubTextStart) {
		t.Errorf("custom input = %q, want %q (items %+v)", got, stubTextStart, st.Items)
	}
	// Not cleared: the stub would not be smaller than "x", nor the placeholder than "ok".
	if got := gjson.Get(out, "input.3.input").Str; got != "x" {
		t.Errorf("small input = %q", got)
	}
	if got := gjson.Get(out, "input.4.output").Str; got != "ok" {
		t.Errorf("small output = %q", got)
	}

	// A second run with --clear-inputs also stubs the inputs of results cleared before.
	first, _ := snipAt(t, anthropicDoc(steps...), 0.7, rules())
	o = rules()
	o.ClearInputs = true
	second, st2 := snipAt(t, first, 0.7, o)
	if st2.Inputs != 1 || len(st2.Items) != 0 || !strings.HasPrefix(gjson.Get(second, "messages.1.content.0.input").Raw, stubJSONStart) {
		t.Errorf("second run: inputs %d, items %d", st2.Inputs, len(st2.Items))
	}
}

func TestListContent(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	doc := `{"messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/shot.png"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":` + q(big("caption")) + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Read","input":{"file_path":"/shot.png"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"new"}]},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"ok"}]}`
	out, st := snipAt(t, doc, 0.7, rules())
	if len(st.Items) != 1 {
		t.Fatalf("items = %+v", st.Items)
	}
	c := gjson.Get(out, "messages.2.content.0.content")
	if c.Type != gjson.String || !strings.HasPrefix(c.Str, Marker) {
		t.Errorf("list content became %s", c.Raw)
	}
}

func TestServerToolResultsStay(t *testing.T) {
	doc := `{"messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{"query":"x"}}]},` +
		`{"role":"assistant","content":[{"type":"web_search_tool_result","tool_use_id":"s","content":[{"type":"web_search_result","url":"u","title":` + q(big("t")) + `}]}]},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"ok"}]}`
	o := rules()
	o.Keep, o.Target = 0, 0
	out, st := snipAt(t, doc, 0.9, o)
	if out != doc || len(st.Items) != 0 {
		t.Errorf("a server tool result was changed: %+v", st.Items)
	}
}

// ccDoc is a Claude Code session whose newest message is at the given time.
func ccDoc(last time.Time, results int) string {
	var lines []string
	parent := "null"
	at := last.Add(-time.Duration(2*results+2) * time.Second)
	add := func(typ, uuid, msg string, extra string) {
		at = at.Add(time.Second)
		p := parent
		if p != "null" {
			p = `"` + p + `"`
		}
		lines = append(lines, fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"uuid":%q,"timestamp":%q,"message":%s%s}`,
			p, typ, uuid, at.UTC().Format(time.RFC3339Nano), msg, extra))
		parent = uuid
	}
	add("user", "u0", `{"role":"user","content":"go"}`, "")
	for i := 0; i < results; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		add("assistant", fmt.Sprintf("a%d", i), fmt.Sprintf(`{"id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"make %d"}}]}`, i, id, i), "")
		out := big(fmt.Sprintf("build %d", i))
		add("user", fmt.Sprintf("r%d", i), fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s}]}`, id, q(out)),
			`,"toolUseResult":{"stdout":`+q(out)+`}`)
	}
	add("assistant", "end", `{"id":"msg_end","role":"assistant","content":[{"type":"text","text":"done"}]}`, "")
	return strings.Join(lines, "\n") + "\n"
}

func TestMicrocompact(t *testing.T) {
	last := time.Date(2026, 3, 4, 5, 20, 0, 0, time.UTC)
	doc := ccDoc(last, 6)
	o := rules()
	o.Now = last.Add(10 * time.Minute)
	// Cold cache: all but the newest 3 go, whatever the utilization.
	out, st := snipAt(t, doc, 0.01, o)
	if got := outcome(t, doc, st); got != "idle idle idle - - -" {
		t.Errorf("cold: %s", got)
	}
	if st.Trigger != "idle 10m" {
		t.Errorf("trigger = %q", st.Trigger)
	}
	// toolUseResult, Claude Code's own copy, is not what the model sees: left alone.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if r := gjson.Get(line, "toolUseResult.stdout"); r.Exists() && strings.HasPrefix(r.Str, Marker) {
			t.Errorf("toolUseResult changed: %s", line)
		}
	}
	if !strings.Contains(out, `"content":"[ctx-snip: result of Bash(\"make 0\") cleared`) {
		t.Errorf("no placeholder in the message content")
	}
	// Warm cache: identity.
	o.Now = last.Add(4 * time.Minute)
	if out, st := snipAt(t, doc, 0.01, o); out != doc || st.Acted {
		t.Errorf("warm cache changed the document (trigger %q)", st.Trigger)
	}
	// --idle 0 turns it off; so does a zero clock.
	o.Now, o.Idle = last.Add(time.Hour), 0
	if out, _ := snipAt(t, doc, 0.01, o); out != doc {
		t.Errorf("--idle 0 changed the document")
	}
	o.Now, o.Idle = time.Time{}, 5*time.Minute
	if out, _ := snipAt(t, doc, 0.01, o); out != doc {
		t.Errorf("no clock changed the document")
	}
	// A document without timestamps is never idle.
	plain := anthropicDoc(bash("a"), bash("b"), bash("c"), bash("d"), bash("e"))
	o.Now = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	if out, _ := snipAt(t, plain, 0.01, o); out != plain {
		t.Errorf("a document without timestamps was taken for idle")
	}
}

func TestNothingToDoAboveTrigger(t *testing.T) {
	// Above the trigger with nothing stale and every result among the newest N: the tier
	// acts but changes nothing.
	doc := anthropicDoc(bash("a"), bash("b"))
	out, st := snipAt(t, doc, 0.95, rules())
	if out != doc || !st.Acted || len(st.Items) != 0 {
		t.Errorf("acted %v, items %d, changed %v", st.Acted, len(st.Items), out != doc)
	}
}

func TestStatsTrigger(t *testing.T) {
	doc := anthropicDoc(read("/a", ""), read("/a", ""))
	if _, st := snipAt(t, doc, 0.5, rules()); st.Trigger != "below 60% of window" {
		t.Errorf("below: %q", st.Trigger)
	}
	if _, st := snipAt(t, doc, 0.734, rules()); st.Trigger != "utilization 73%" {
		t.Errorf("above: %q", st.Trigger)
	}
}

func TestCodexShell(t *testing.T) {
	mk := func(i int, cmd string) string {
		args := q(fmt.Sprintf(`{"command":["bash","-lc",%s],"workdir":"/repo"}`, q(cmd)))
		return fmt.Sprintf(`{"timestamp":"2026-03-04T05:20:%02d.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":%s,"call_id":"c%d"}}`, i, args, i) + "\n" +
			fmt.Sprintf(`{"timestamp":"2026-03-04T05:20:%02d.500Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":%s}}`, i, i, q(big("out "+cmd))) + "\n"
	}
	doc := `{"timestamp":"2026-03-04T05:20:00.000Z","type":"session_meta","payload":{"id":"x","cwd":"/repo","instructions":"be good"}}` + "\n" +
		`{"timestamp":"2026-03-04T05:20:00.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n" +
		mk(1, "sed -n '1,200p' internal/a.go") + mk(2, "cat /repo/internal/a.go") + mk(3, "rg -n foo") + mk(4, "rg -n foo") +
		`{"timestamp":"2026-03-04T05:20:59.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}` + "\n"
	o := rules()
	_, st := snipAt(t, doc, 0.7, o)
	if got := outcome(t, doc, st); got != "reread - repeated-search -" {
		t.Errorf("codex: %s", got)
	}
}

// With a warm cache a firing must repay the prompt cache it breaks: every token from the
// first cleared result on is written again.
func TestWorthTheCache(t *testing.T) {
	bulk := func(s string) step {
		return step{tool: "Bash", input: `{"command":` + q(s) + `}`, result: strings.Repeat(s+" ", 4000)}
	}
	o := Defaults()
	o.MinShare = 0

	// One old result ahead of three big kept ones: clearing it saves a fifth of what it
	// takes out of the cache.
	doc := anthropicDoc(bash("old"), bulk("k1"), bulk("k2"), bulk("k3"))
	out, st := snipAt(t, doc, 0.62, o)
	if out != doc || st.Acted || !strings.Contains(st.Trigger, "--repay") {
		t.Errorf("not worth it: acted %v, changed %v, trigger %q", st.Acted, out != doc, st.Trigger)
	}
	o.Repay = 0
	if _, st := snipAt(t, doc, 0.62, o); outcome(t, doc, st) != "old - - -" {
		t.Errorf("--repay 0: %s", outcome(t, doc, st))
	}

	// Down to the target is not worth it, all the old results are: it clears them all.
	o.Repay = 10
	doc = anthropicDoc(bulk("o1"), bulk("o2"), bulk("o3"), bulk("o4"), bulk("k1"), bulk("k2"), bulk("k3"))
	if _, st := snipAt(t, doc, 0.62, o); outcome(t, doc, st) != "old old old old - - -" {
		t.Errorf("extended: %s (%s)", outcome(t, doc, st), st.Trigger)
	}

	// A saving below --clear-at-least does not fire.
	o.MinShare = 0.5
	if out, st := snipAt(t, doc, 0.62, o); out != doc || !strings.Contains(st.Trigger, "--clear-at-least") {
		t.Errorf("below --clear-at-least: changed %v, trigger %q", out != doc, st.Trigger)
	}

	// A cold cache costs nothing to break: microcompact clears whatever it saves.
	last := time.Date(2026, 3, 4, 5, 20, 0, 0, time.UTC)
	o = Defaults()
	o.Now = last.Add(10 * time.Minute)
	cc := ccDoc(last, 6)
	if _, st := snipAt(t, cc, 0.01, o); outcome(t, cc, st) != "idle idle idle - - -" {
		t.Errorf("cold cache with the defaults: %s (%s)", outcome(t, cc, st), st.Trigger)
	}
}

// Clearing a result an earlier tier cut states what the result first held, so that the
// count (which learns the part the file does not hold from what markers say was removed)
// stays right after edits upon edits.
func TestPlaceholderStatesTheOriginalSize(t *testing.T) {
	cut := "head of the log\n[ctx-budget: cut 90,000 of 100,000 characters here (originally 25,000 tokens); re-run the call to see it all]\ntail of the log"
	doc := anthropicDoc(step{tool: "Bash", input: `{"command":"make"}`, result: cut}, bash("a"), bash("b"), bash("c"))
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := rules()
	o.Target = 0
	o.Counter = estimate()
	counts := measure.Of(tr, o.Counter, false).Counts()
	o.Tokens, o.Blocks, o.PerMessage, o.Was = counts.Total, counts.Blocks, counts.PerMessage, counts.Was
	o.Effective = o.Tokens
	edits, _, st := Plan(tr, o)
	if len(st.Items) != 1 {
		t.Fatalf("cleared %d results, want the cut one", len(st.Items))
	}
	out, _ := tr.Apply(edits)
	if !strings.Contains(string(out), "cleared (25,000 tokens)") {
		t.Errorf("the placeholder does not state the 25,000 tokens the result first held:\n%s", out)
	}
}

// TestMicrocompactFromCachedAt: an API request carries no times; the proxy says when the
// conversation's previous request was answered (CachedAt), and idleness counts from then.
// A cache lifetime the request asked for (CacheTTL, Anthropic's 1h) keeps it warm longer.
func TestMicrocompactFromCachedAt(t *testing.T) {
	plain := anthropicDoc(bash("a"), bash("b"), bash("c"), bash("d"), bash("e"))
	at := time.Date(2026, 3, 4, 5, 20, 0, 0, time.UTC)
	o := rules()
	o.Idle, o.CachedAt = 5*time.Second, at
	o.Now = at.Add(4 * time.Second)
	if out, st := snipAt(t, plain, 0.01, o); out != plain || st.Acted {
		t.Errorf("4 s after the last answer, with --idle 5s: acted (trigger %q)", st.Trigger)
	}
	o.Now = at.Add(6 * time.Second)
	out, st := snipAt(t, plain, 0.01, o)
	if out == plain || st.Trigger != "idle 6s" {
		t.Errorf("6 s after the last answer: changed %v, trigger %q", out != plain, st.Trigger)
	}
	o.CacheTTL = time.Hour
	if out, st := snipAt(t, plain, 0.01, o); out != plain || st.Acted {
		t.Errorf("a 1h cache taken for cold after 6 s (trigger %q)", st.Trigger)
	}
	o.Now = at.Add(61 * time.Minute)
	if out, _ := snipAt(t, plain, 0.01, o); out == plain {
		t.Errorf("a 1h cache not taken for cold after 61 minutes")
	}
}

// TestIndexLinesHoldNoDocument: the index lines a plan's changes carry (their tool's name
// and call id) are copies, not pieces of the document: they wait in the Saver until the
// files are written, after ctx-snip lets a document read whole go (keepIn), and a piece
// of it would keep all of it.
func TestIndexLinesHoldNoDocument(t *testing.T) {
	const long = "/repo/internal/server/handler.go"
	write := step{tool: "Write", input: `{"file_path":"/repo/a.go","content":` + q(big("package a")) + `}`, result: big("written")}
	doc := anthropicDoc(read(long, ""), write, read(long, ""), grep("TODO"), bash("go test ./..."))
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := rules()
	o.ClearInputs, o.Store, o.Keep = true, storeDir, 0
	o.Counter = estimate()
	o.Tokens = measure.Total(tr, o.Counter)
	o.Effective = o.Tokens
	changes, st := plan(tr, o, func(b *transcript.Block) facts { return factsOf(tr, b, o, o.Counter) })
	if len(st.Items) == 0 || st.Inputs == 0 {
		t.Fatalf("nothing cleared: items %d, inputs %d", len(st.Items), st.Inputs)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(tr.Doc)))
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return s != "" && p >= start && p < start+uintptr(len(tr.Doc))
	}
	for _, ch := range changes {
		if in(ch.meta.Tool) || in(ch.meta.ToolCallID) {
			t.Errorf("the index line of the change at %d holds a piece of the document: %+v", ch.edit.Span.Start, ch.meta)
		}
	}
}
