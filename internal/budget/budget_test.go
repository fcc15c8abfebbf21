package budget

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// res is one tool call and its result in a test document.
type res struct {
	tool    string
	content any // a string, or a list of parts
	isError bool
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// anthropicDoc is a Messages API request: a system prompt, a user request, a call and
// result per res, then an assistant reply and a user message.
func anthropicDoc(rs ...res) string {
	msgs := []any{map[string]any{"role": "user", "content": "start"}}
	for i, r := range rs {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": r.tool, "input": map[string]any{"n": i}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": r.content, "is_error": r.isError}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "done"}, map[string]any{"role": "user", "content": "thanks"})
	return mustJSON(map[string]any{"system": "be brief", "messages": msgs})
}

// openaiDoc is a Chat Completions request with one tool message per res.
func openaiDoc(rs ...res) string {
	msgs := []any{map[string]any{"role": "system", "content": "be brief"}, map[string]any{"role": "user", "content": "start"}}
	for i, r := range rs {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": r.tool, "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": r.content})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "done"}, map[string]any{"role": "user", "content": "thanks"})
	return mustJSON(map[string]any{"messages": msgs})
}

// claudeCodeDoc is a Claude Code session: each result line also carries the
// toolUseResult copy Claude Code keeps for its own display.
func claudeCodeDoc(rs ...res) string {
	var lines []string
	parent := any(nil)
	n := 0
	add := func(typ string, msg any, extra map[string]any) {
		n++
		uuid := fmt.Sprintf("u%03d", n)
		rec := map[string]any{"type": typ, "uuid": uuid, "parentUuid": parent, "isSidechain": false, "sessionId": "s",
			"timestamp": fmt.Sprintf("2026-03-04T05:%02d:00Z", n), "message": msg}
		for k, v := range extra {
			rec[k] = v
		}
		lines = append(lines, mustJSON(rec))
		parent = uuid
	}
	add("user", map[string]any{"role": "user", "content": "start"}, nil)
	for i, r := range rs {
		id := fmt.Sprintf("toolu_%d", i)
		add("assistant", map[string]any{"id": fmt.Sprintf("msg_%d", i), "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": r.tool, "input": map[string]any{}}}}, nil)
		add("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": r.content, "is_error": r.isError}}},
			map[string]any{"toolUseResult": map[string]any{"stdout": r.content}})
	}
	add("assistant", map[string]any{"id": "msg_end", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "done"}}}, nil)
	add("user", map[string]any{"role": "user", "content": "thanks"}, nil)
	return strings.Join(lines, "\n") + "\n"
}

// codexDoc is a Codex rollout whose results use the JSON wrapper with an exit code.
func codexDoc(exit int, outputs ...string) string {
	var lines []string
	add := func(typ string, payload any) {
		lines = append(lines, mustJSON(map[string]any{"timestamp": "2026-03-04T05:20:12.601Z", "type": typ, "payload": payload}))
	}
	add("session_meta", map[string]any{"id": "x", "instructions": "be brief"})
	add("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "start"}}})
	for i, out := range outputs {
		id := fmt.Sprintf("call_%d", i)
		add("response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["ls"]}`, "call_id": id})
		wrapped := mustJSON(map[string]any{"output": out, "metadata": map[string]any{"exit_code": exit, "duration_seconds": 0.5}})
		add("response_item", map[string]any{"type": "function_call_output", "call_id": id, "output": wrapped})
	}
	add("response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "done"}}})
	return strings.Join(lines, "\n") + "\n"
}

func parse(t *testing.T, doc string) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, doc)
	}
	return tr
}

// plan runs the tier on a document and returns the output.
func plan(t *testing.T, doc string, o Options) (string, Stats) {
	t.Helper()
	tr := parse(t, doc)
	edits, st := Plan(tr, o)
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), st
}

// resultTexts returns the text of every tool result of a document, parts joined by "|".
func resultTexts(t *testing.T, doc string) []string {
	t.Helper()
	tr := parse(t, doc)
	var out []string
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if b.Kind != transcript.ToolResult {
				continue
			}
			if len(b.Parts) == 0 {
				out = append(out, tr.BodyText(b))
				continue
			}
			var ps []string
			for pi := range b.Parts {
				ps = append(ps, tr.BodyText(&b.Parts[pi]))
			}
			out = append(out, strings.Join(ps, "|"))
		}
	}
	return out
}

func opts(mod func(*Options)) Options {
	o := Defaults()
	// The caps alone: whether cutting old results repays the cache is
	// TestOldResultsCutWhereTheyRepay's.
	o.Repay = 0
	o.Counter = estimate()
	if mod != nil {
		mod(&o)
	}
	return o
}

// sizes reports each result as its length in characters, or "cut:N" when it carries a
// marker, N rounded up to a multiple of 500 (the line-break rule keeps a little less
// than the limit).
func sizes(texts []string) string {
	var s []string
	for _, x := range texts {
		if strings.Contains(x, markerStart) {
			s = append(s, fmt.Sprintf("cut:%d", (runes(x)+499)/500*500))
		} else {
			s = append(s, fmt.Sprint(runes(x)))
		}
	}
	return strings.Join(s, " ")
}

func text(n int) string { return numbered(n/36 + 1)[:n] }

// TestCapsByUtilization checks which cap applies at each utilization: 50,000 always,
// 30,000 from 50% (inclusive), 15,000 above 70%.
func TestCapsByUtilization(t *testing.T) {
	doc := anthropicDoc(res{"Bash", text(60000), false}, res{"Bash", text(40000), false}, res{"Bash", text(20000), false}, res{"Bash", text(10000), false}, res{"Read", "newest", false})
	for _, tc := range []struct {
		u       float64
		want    string
		trigger string
	}{
		{0, "cut:50000 40000 20000 10000 6", "hard cap"},
		{0.49, "cut:50000 40000 20000 10000 6", "hard cap"},
		{0.50, "cut:30000 cut:30000 20000 10000 6", "utilization 50%"},
		{0.70, "cut:30000 cut:30000 20000 10000 6", "utilization 70%"},
		{0.701, "cut:15000 cut:15000 cut:15000 10000 6", "utilization 70%"},
		{1.5, "cut:15000 cut:15000 cut:15000 10000 6", "utilization 150%"},
	} {
		out, st := plan(t, doc, opts(func(o *Options) { o.Utilization = tc.u }))
		if got := sizes(resultTexts(t, out)); got != tc.want {
			t.Errorf("utilization %v: sizes %s, want %s", tc.u, got, tc.want)
		}
		if st.Trigger != tc.trigger {
			t.Errorf("utilization %v: trigger %q, want %q", tc.u, st.Trigger, tc.trigger)
		}
	}
}

func TestCutKeepsHeadAndTail(t *testing.T) {
	text := numbered(3000)
	out, st := plan(t, anthropicDoc(res{"Bash", text, false}, res{"Read", "x", false}), opts(nil))
	got := resultTexts(t, out)[0]
	if !strings.HasPrefix(got, "line 0000 ") || !strings.HasSuffix(got, "line 2999 of the output, some words\n") {
		t.Errorf("head or tail lost:\n%.80s\n...\n%s", got, got[len(got)-80:])
	}
	if !strings.Contains(got, "(originally 27,000 tokens, 3,000 lines); to see them, re-run the Bash call") {
		t.Errorf("marker lacks the original size or the tool: %s", markerSyntax.FindString(got[strings.Index(got, markerStart):]))
	}
	if st.Cut != 1 || st.Results != 2 || st.CharsRemoved != 108000-runes(got) {
		t.Errorf("stats %+v", st)
	}
}

func TestBelowCapIsIdentity(t *testing.T) {
	for name, doc := range map[string]string{
		"anthropic":   anthropicDoc(res{"Bash", text(49000), false}, res{"Read", text(40000), false}),
		"openai":      openaiDoc(res{"Bash", text(49000), false}, res{"Read", text(40000), false}),
		"claude-code": claudeCodeDoc(res{"Bash", text(49000), false}, res{"Read", text(40000), false}),
		"codex":       codexDoc(0, text(49000), text(40000)),
	} {
		out, st := plan(t, doc, opts(nil))
		if out != doc || st.Cut != 0 {
			t.Errorf("%s: below the cap the document changed (%+v)", name, st)
		}
		if !MayCut(parse(t, doc), opts(nil)) {
			t.Errorf("%s: MayCut says no with a 49,000 character result, which a higher utilization cuts", name)
		}
		small := opts(func(o *Options) { o.Cap, o.MidCap, o.HighCap = Chars(90000), Chars(0), Toks(85000) })
		if MayCut(parse(t, doc), small) {
			t.Errorf("%s: MayCut says yes with every result below every limit", name)
		}
	}
}

// TestKeepRecentAndExcludeTools: the newest results are spared the utilization's caps,
// not the hard cap; an excluded tool's results are never changed.
func TestKeepRecentAndExcludeTools(t *testing.T) {
	doc := openaiDoc(res{"Read", text(40000), false}, res{"Bash", text(40000), false}, res{"Read", text(40000), false}, res{"Grep", text(40000), false})
	high := func(o *Options) { o.Utilization = 0.9 }
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"default", nil, "cut:15000 cut:15000 cut:15000 40000"},
		{"keep 0", func(o *Options) { o.KeepRecent = 0 }, "cut:15000 cut:15000 cut:15000 cut:15000"},
		{"keep 2", func(o *Options) { o.KeepRecent = 2 }, "cut:15000 cut:15000 40000 40000"},
		{"keep all", func(o *Options) { o.KeepRecent = 99 }, "40000 40000 40000 40000"},
		{"exclude Read", func(o *Options) { o.ExcludeTools = []string{"Read"} }, "40000 cut:15000 40000 40000"},
		{"exclude two", func(o *Options) { o.ExcludeTools = []string{"Bash", " Read"}; o.KeepRecent = 0 }, "40000 40000 40000 cut:15000"},
		{"names are exact", func(o *Options) { o.ExcludeTools = []string{"read"} }, "cut:15000 cut:15000 cut:15000 40000"},
	} {
		out, _ := plan(t, doc, opts(func(o *Options) {
			high(o)
			if tc.mod != nil {
				tc.mod(o)
			}
		}))
		if got := sizes(resultTexts(t, out)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// The hard cap holds the newest result too (a test log of a million characters that
	// has just arrived would fill the window), but not an excluded tool's.
	big := openaiDoc(res{"Bash", text(40000), false}, res{"Grep", text(60000), false})
	out, _ := plan(t, big, opts(nil))
	if got := sizes(resultTexts(t, out)); got != "40000 cut:50000" {
		t.Errorf("hard cap on the newest: %s", got)
	}
	out, _ = plan(t, big, opts(func(o *Options) { o.ExcludeTools = []string{"Grep"} }))
	if got := sizes(resultTexts(t, out)); got != "40000 60000" {
		t.Errorf("excluded newest: %s", got)
	}
}

func TestErrorsKeepMore(t *testing.T) {
	u := func(o *Options) { o.Utilization = 0.8 } // cap 15,000; errors 30,000
	for _, tc := range []struct {
		name string
		doc  string
		want string
	}{
		{"is_error", anthropicDoc(res{"Bash", text(40000), true}, res{"Bash", text(40000), false}, res{"Read", "x", false}), "cut:30000 cut:15000 1"},
		{"Error: prefix", openaiDoc(res{"book", "Error: " + text(40000), false}, res{"book", "error:" + text(40000), false}, res{"book", "No error: " + text(40000), false}, res{"x", "x", false}),
			"cut:30000 cut:30000 cut:15000 1"},
		{"tool_use_error", anthropicDoc(res{"Bash", "<tool_use_error>" + text(40000), false}, res{"Read", "x", false}), "cut:30000 1"},
		{"codex exit code", codexDoc(2, text(40000), "x"), "cut:30000 1"},
		{"codex exit 0", codexDoc(0, text(40000), "x"), "cut:15000 1"},
		{"Exit code line", openaiDoc(res{"shell", "Exit code: 1\nWall time: 0.2 seconds\nOutput:\n" + text(40000), false}, res{"shell", "Exit code: 0\nOutput:\n" + text(40000), false}, res{"x", "x", false}),
			"cut:30000 cut:15000 1"},
	} {
		out, st := plan(t, tc.doc, opts(u))
		texts := resultTexts(t, out)
		if strings.HasPrefix(tc.name, "codex") {
			// The cap applies to the command output inside the wrapper.
			for i, x := range texts {
				if gjson.Valid(x) {
					texts[i] = gjson.Get(x, "output").String()
				}
			}
		}
		if got := sizes(texts); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if wantErr := strings.Count(tc.want, "cut:30000"); st.Errors != wantErr {
			t.Errorf("%s: %d errors counted, want %d", tc.name, st.Errors, wantErr)
		}
	}
	// The factor is a flag.
	doc := anthropicDoc(res{"Bash", text(60000), true}, res{"Read", "x", false})
	out, _ := plan(t, doc, opts(func(o *Options) { o.Utilization = 0.8; o.ErrorFactor = 3 }))
	if got := sizes(resultTexts(t, out)); got != "cut:45000 1" {
		t.Errorf("factor 3: %s", got)
	}
}

func TestPartsShareOneBudget(t *testing.T) {
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": strings.Repeat("A", 70000)}}
	parts := []any{
		map[string]any{"type": "text", "text": text(1000)},
		img,
		map[string]any{"type": "text", "text": text(40000)},
		map[string]any{"type": "text", "text": text(30000)},
	}
	doc := anthropicDoc(res{"mcp__browser__snapshot", parts, false}, res{"Read", "x", false})
	out, st := plan(t, doc, opts(func(o *Options) { o.Utilization = 0.8 }))
	got := resultTexts(t, out)[0]
	ps := strings.Split(got, "|")
	if len(ps) != 4 || ps[1] != "" {
		t.Fatalf("parts: %d", len(ps))
	}
	// 15,000 shared: the small part keeps its 1,000, the two large ones 7,000 each.
	if s := sizes([]string{ps[0], ps[2], ps[3]}); s != "1000 cut:7000 cut:7000" {
		t.Errorf("shares: %s", s)
	}
	if !strings.Contains(out, strings.Repeat("A", 70000)) {
		t.Errorf("the image was touched")
	}
	if st.Cut != 1 {
		t.Errorf("one result with two parts cut should count once: %+v", st)
	}
	// OpenAI content arrays too.
	doc = openaiDoc(res{"fetch", []any{map[string]any{"type": "text", "text": text(60000)}, map[string]any{"type": "text", "text": text(60000)}}, false}, res{"x", "x", false})
	out, _ = plan(t, doc, opts(nil))
	if s := sizes(strings.Split(resultTexts(t, out)[0], "|")); s != "cut:25000 cut:25000" {
		t.Errorf("openai parts: %s", s)
	}
}

func TestNeverCutsTwice(t *testing.T) {
	doc := anthropicDoc(res{"Bash", numbered(3000), false}, res{"Read", "x", false})
	once, _ := plan(t, doc, opts(nil))
	// Under the same cap, and under a looser one, a cut result stays as it is.
	for _, u := range []float64{0, 0.3} {
		again, st := plan(t, once, opts(func(o *Options) { o.Utilization = u }))
		if again != once || st.Cut != 0 {
			t.Errorf("utilization %v: a cut result was cut again", u)
		}
	}
	// Under a tighter cap it is cut further, with one marker for the whole cut.
	twice, st := plan(t, once, opts(func(o *Options) { o.Utilization = 0.9 }))
	got := resultTexts(t, twice)[0]
	if st.Cut != 1 || st.Recut != 1 || strings.Count(got, markerStart) != 1 || runes(got) > 15000 {
		t.Fatalf("recut: %+v, %d markers, %d characters", st, strings.Count(got, markerStart), runes(got))
	}
	p, _ := parseCut(got)
	if p.orig.chars != 108000 || p.orig.lines != 3000 || p.headRunes+p.tailRunes+number(markerSyntax.FindStringSubmatch(got[strings.Index(got, markerStart):])[1]) != 108000 {
		t.Errorf("recut marker does not account for the original: %+v", p.orig)
	}
	// The same tighter cut straight from the original gives the same text.
	direct, _ := plan(t, doc, opts(func(o *Options) { o.Utilization = 0.9 }))
	if d := resultTexts(t, direct)[0]; runes(d) != runes(got) {
		t.Logf("direct cut %d characters, recut %d", runes(d), runes(got))
	}
}

func TestTokenLimits(t *testing.T) {
	c := estimate()
	doc := openaiDoc(res{"Bash", numbered(3000), false}, res{"Bash", numbered(100), false}, res{"x", "x", false})
	out, st := plan(t, doc, opts(func(o *Options) { o.Cap = Toks(8000) }))
	texts := resultTexts(t, out)
	if n := c.Count(texts[0]); n > 8000 || n < 7600 || !strings.Contains(texts[0], markerStart) {
		t.Errorf("8k token cap: result has %d tokens", n)
	}
	if texts[1] != numbered(100) || st.Cut != 1 {
		t.Errorf("a result under the token cap changed")
	}
	// A token limit and a character limit together: both hold.
	out, st = plan(t, doc, opts(func(o *Options) { o.Cap = Toks(8000); o.HighCap = Chars(20000); o.Utilization = 0.9 }))
	if x := resultTexts(t, out)[0]; runes(x) > 20000 || c.Count(x) > 8000 {
		t.Errorf("mixed limits: %d characters, %d tokens", runes(x), c.Count(x))
	}
	if st.Cut != 1 || st.Recut != 0 || len(st.Limits) != 2 {
		t.Errorf("mixed limits: a first cut by two limits is one cut, not a recut: %+v", st)
	}
	again, _ := plan(t, out, opts(func(o *Options) { o.Cap = Toks(8000); o.HighCap = Chars(20000); o.Utilization = 0.9 }))
	if again != out {
		t.Errorf("mixed limits: not idempotent")
	}
	// Tighter of two limits in the same unit wins; 0 turns a limit off.
	out, _ = plan(t, doc, opts(func(o *Options) { o.Cap = Chars(10000); o.Utilization = 0.6 }))
	if s := sizes(resultTexts(t, out)); s != "cut:10000 3600 1" {
		t.Errorf("cap below mid-cap: %s", s)
	}
	out, _ = plan(t, doc, opts(func(o *Options) { o.Cap = Chars(0) }))
	if out != doc {
		t.Errorf("--cap 0 still cut")
	}
}

func TestProtectedMessagesUntouched(t *testing.T) {
	// The newest user message holds two results (parallel calls); neither is held to the
	// utilization's caps, even with --keep-recent 0: only to the hard cap.
	doc := mustJSON(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "start"},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "a", "name": "Bash", "input": map[string]any{}},
			map[string]any{"type": "tool_use", "id": "b", "name": "Bash", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "a", "content": text(40000)},
			map[string]any{"type": "tool_result", "tool_use_id": "b", "content": text(40000)}}},
	}})
	out, st := plan(t, doc, opts(func(o *Options) { o.KeepRecent = 0; o.Utilization = 0.9 }))
	if out != doc || st.Skipped != 2 {
		t.Errorf("results in the newest user message were cut (%+v)", st)
	}
	out, _ = plan(t, doc, opts(func(o *Options) { o.KeepRecent = 0; o.Cap = Chars(20000) }))
	if got := sizes(resultTexts(t, out)); got != "cut:20000 cut:20000" {
		t.Errorf("the hard cap spared the newest user message: %s", got)
	}
}

func TestJSONLFormats(t *testing.T) {
	doc := claudeCodeDoc(res{"Bash", text(60000), false}, res{"Read", "x", false})
	out, st := plan(t, doc, opts(nil))
	if st.Cut != 1 {
		t.Fatalf("claude-code: %+v", st)
	}
	inLines, outLines := strings.Split(doc, "\n"), strings.Split(out, "\n")
	if len(inLines) != len(outLines) {
		t.Fatalf("line count changed")
	}
	for i := range inLines {
		if inLines[i] == outLines[i] {
			continue
		}
		// Only the message the model sees is cut; Claude Code's own copy stays whole.
		if a, b := gjson.Get(inLines[i], "toolUseResult").Raw, gjson.Get(outLines[i], "toolUseResult").Raw; a != b {
			t.Errorf("line %d: toolUseResult changed", i+1)
		}
		if s := sizes([]string{gjson.Get(outLines[i], "message.content.0.content").String()}); s != "cut:50000" {
			t.Errorf("line %d: %s", i+1, s)
		}
	}

	cdoc := codexDoc(0, text(60000), "x")
	out, st = plan(t, cdoc, opts(nil))
	if st.Cut != 1 {
		t.Fatalf("codex: %+v", st)
	}
	wrapped := resultTexts(t, out)[0]
	if !gjson.Valid(wrapped) || gjson.Get(wrapped, "metadata.exit_code").Raw != "0" {
		t.Errorf("codex wrapper broken: %.200s", wrapped)
	}
	if s := sizes([]string{gjson.Get(wrapped, "output").String()}); s != "cut:50000" {
		t.Errorf("codex output: %s", s)
	}
}

func TestTokensDeltaMatchesCount(t *testing.T) {
	c := estimate()
	for name, doc := range map[string]string{
		"anthropic":   anthropicDoc(res{"Bash", text(60000), false}, res{"Bash", text(90000), true}, res{"x", "x", false}),
		"claude-code": claudeCodeDoc(res{"Bash", text(60000), false}, res{"x", "x", false}),
		"codex":       codexDoc(0, text(60000), text(70000), "x"),
	} {
		out, st := plan(t, doc, opts(nil))
		before, after := measure.Total(parse(t, doc), c), measure.Total(parse(t, out), c)
		if st.TokensDelta != after-before || st.TokensDelta >= 0 {
			t.Errorf("%s: delta %d, counted %d -> %d", name, st.TokensDelta, before, after)
		}
	}
}

func TestDecodePrefix(t *testing.T) {
	for _, text := range []string{
		"short",
		strings.Repeat("a\nb\t\"c\\", 200),
		strings.Repeat("é漢\u2028x", 300),
		strings.Repeat("\x01", 400), // \u0001 escapes straddle the cut
		"Error: " + strings.Repeat("x", 2000),
	} {
		raw := transcript.Quote(text)
		for _, n := range []int{1, 2, 5, 100, 511, 512, 513} {
			got := decodePrefix(raw, n)
			if !strings.HasPrefix(text, got) {
				t.Errorf("decodePrefix(%.20q, %d) = %.40q: not a prefix of the text", raw, n, got)
			}
			if n >= 8 && len(got) == 0 {
				t.Errorf("decodePrefix(%.20q, %d) is empty", raw, n)
			}
		}
	}
}

// TestStatsItemsCountNormalized: a result only normalized (its repeated lines collapsed,
// under every cap) is an item changed: --stats says items 1, cut 0, and what it saved
// (items counted only cuts, and ctx-replay and ctx-proxy, which take items > 0 as a
// firing, listed no tier for thousands of tokens saved).
func TestStatsItemsCountNormalized(t *testing.T) {
	repeated := strings.Repeat("GET /health 200 OK in 2ms\n", 400)
	doc, _ := json.Marshal(map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "watch the log"},
		{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "tail log"}}}},
		{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": repeated}}},
		{"role": "assistant", "content": "Healthy."},
	}})
	var out, errs strings.Builder
	if code := Main([]string{"--stats", "--cap", "100000"}, strings.NewReader(string(doc)), &out, &errs, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var st struct {
		Saved, Items, Cut, Normalized int
	}
	if err := json.Unmarshal([]byte(errs.String()), &st); err != nil {
		t.Fatalf("%v: %s", err, errs.String())
	}
	if st.Saved <= 1000 || st.Normalized != 1 || st.Cut != 0 || st.Items != 1 {
		t.Errorf("stats %+v, want items 1 (normalized 1, cut 0) and the tokens saved: %s", st, errs.String())
	}
}

// TestOldResultsCutWhereTheyRepay: the utilization's caps cut a result the request
// before already held only where the saving pays back the cache it breaks, from that
// result on, within --repay requests; a result that came with this request is capped
// whatever it costs. Issue 38: a cut of 2,203 characters from an old Read result saved 663
// tokens and rewrote 51,674 tokens of cache.
func TestOldResultsCutWhereTheyRepay(t *testing.T) {
	filler := res{"Bash", text(14000), false}
	// An old result 5,000 characters over the cap, early, and one 34,000 over near the end.
	doc := anthropicDoc(res{"Read", text(20000), false}, filler, filler, filler, filler, filler, filler,
		res{"Bash", text(49000), false}, res{"Bash", text(1000), false})
	high := func(o *Options) { o.Utilization = 0.9 }
	out, st := plan(t, doc, opts(func(o *Options) { high(o); o.Repay = 10 }))
	if got := sizes(resultTexts(t, out)); got != "20000 14000 14000 14000 14000 14000 14000 cut:15000 1000" {
		t.Errorf("repay 10: %s, want the early result held, the late one cut", got)
	}
	if st.Repay == nil || !st.Repay.Repays || st.Held != 1 || !strings.Contains(st.Trigger, "1 old results held to the hard cap: saving") {
		t.Errorf("repay 10: held %d, repay %+v, trigger %q", st.Held, st.Repay, st.Trigger)
	}
	// Within one request neither repays: both held, to the hard cap only.
	out, st = plan(t, doc, opts(func(o *Options) { high(o); o.Repay = 1 }))
	if got := sizes(resultTexts(t, out)); got != "20000 14000 14000 14000 14000 14000 14000 49000 1000" {
		t.Errorf("repay 1: %s, want both held", got)
	}
	if st.Repay == nil || st.Repay.Repays || st.Held != 2 || st.Cut != 0 {
		t.Errorf("repay 1: held %d, cut %d, repay %+v", st.Held, st.Cut, st.Repay)
	}
	// --repay 0: the caps alone.
	out, _ = plan(t, doc, opts(high))
	if got := sizes(resultTexts(t, out)); got != "cut:15000 14000 14000 14000 14000 14000 14000 cut:15000 1000" {
		t.Errorf("repay 0: %s", got)
	}

	// Results that came with this request (after the last assistant message) are capped
	// at arrival: the newest to the hard cap, the others to the utilization's caps too.
	arrived := mustJSON(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "start"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": "a", "type": "function", "function": map[string]any{"name": "Bash", "arguments": "{}"}},
			map[string]any{"id": "b", "type": "function", "function": map[string]any{"name": "Bash", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "a", "content": text(20000)},
		map[string]any{"role": "tool", "tool_call_id": "b", "content": text(60000)},
	}})
	out, st = plan(t, arrived, opts(func(o *Options) { high(o); o.Repay = 1 }))
	if got := sizes(resultTexts(t, out)); got != "cut:15000 cut:50000" || st.Held != 0 || st.Repay != nil {
		t.Errorf("at arrival: %s, held %d, repay %+v", got, st.Held, st.Repay)
	}
}

// TestFileViewsNotNormalized: a file shown through any tool the tool vocabulary calls a
// read or an editor (SWE-agent's open, an editor's view command, Gemini CLI's
// read_many_files), not only Claude Code's Read, is file contents: never normalized, and
// over a cap cut at head and tail, as ctx-budget(1) promises. Issue 39: 8 results of one
// SWE-agent trajectory were rewritten.
func TestFileViewsNotNormalized(t *testing.T) {
	file := "x = 1\n\n\n\n\ny = 2\n" + strings.Repeat("pass\n", 300)
	for _, c := range []struct{ tool, input string }{
		{"Read", `{"file_path":"a.py"}`},
		{"open", `{"path":"a.py"}`},
		{"str_replace_editor", `{"command":"view","path":"/repo/a.py"}`},
		{"str_replace_based_edit_tool", `{"command":"view","path":"/repo/a.py"}`},
		{"read_many_files", `{"paths":["a.py","b.py"]}`},
		{"view_file", `{"path":"a.py"}`},
	} {
		doc, _ := json.Marshal(map[string]any{"messages": []map[string]any{
			{"role": "user", "content": "look"},
			{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "t1", "name": c.tool, "input": json.RawMessage(c.input)}}},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": file}}},
			{"role": "assistant", "content": "Seen."},
		}})
		out, st := plan(t, string(doc), opts(func(o *Options) { o.Cap.N = 100000 }))
		if st.Normalized != 0 || out != string(doc) {
			t.Errorf("%s: a file view was rewritten (normalized %d)", c.tool, st.Normalized)
		}
	}
}
