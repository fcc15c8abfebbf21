package summarize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

func estimate() tokens.Counter {
	c, _ := tokens.New("estimate")
	return c
}

// summarizeDoc is ctx-summarize with the local backend, measured against an effective
// window of the given size (0: the document's own size, so it is above the trigger).
func summarizeDoc(name string, in []byte, effective int, force bool) ([]byte, Split, string, error) {
	t, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return nil, Split{}, "", err
	}
	o := Defaults()
	o.Counter, o.Force = estimate(), force
	o.Tokens, o.PerMessage = measure.PerMessage(t, o.Counter)
	o.Effective = effective
	if effective == 0 {
		o.Effective = o.Tokens
	}
	sp := Choose(t, o)
	if !sp.Acts {
		return in, sp, "", nil
	}
	sections := Fold(PreviousSections(t, sp), Local(t, newOnly(t, sp)))
	meta := Meta{Messages: len(sp.Summarized), Tokens: sp.Tokens, Backend: "local"}
	out, after, err := Write(t, o, sp, sections, meta)
	if err != nil || after >= o.Tokens {
		return in, Split{}, "", err
	}
	// The size Write works out without reading the result again is the size of the result.
	if re, err := transcript.Parse(out, transcript.Options{Name: name}); err != nil {
		return nil, sp, "", err
	} else if n := measure.Total(re, o.Counter); n != after {
		return nil, sp, "", fmt.Errorf("Write says %d tokens, the result has %d", after, n)
	}
	return out, sp, Render(sections, meta), nil
}

func TestChooseKeepsPairsAndTail(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"task"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/r/a.go"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Bash","input":{"command":"go test ./..."}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"ok"}]},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"next"},{"role":"assistant","content":"ok"}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Force = true
	o.PerMessage = []int{10, 10, 10, 10, 10, 10, 10, 10, 10}
	o.Tokens, o.Effective = 90, 1000
	for _, c := range []struct {
		keepTokens, keepTurns int
		want                  string
	}{
		{15, 0, "[1 2 3 4 5 6]"}, // the tail: 7, 8 (the newest exchange)
		{25, 0, "[1 2 3 4 5]"},   // and 6
		{35, 0, "[1 2 3]"},       // a result is never kept without its call: 4..8 stay
		{0, 1, "[1 2 3 4 5 6]"},  // one turn: the newest user message on
		{0, 2, "[]"},             // two turns is everything
	} {
		o.KeepTokens, o.KeepTurns = c.keepTokens, c.keepTurns
		sp := Choose(tr, o)
		if got := fmt.Sprint(sp.Summarized); got != c.want && !(c.want == "[]" && sp.Summarized == nil) {
			t.Errorf("keep %d tokens / %d turns: summarized %v, want %s", c.keepTokens, c.keepTurns, sp.Summarized, c.want)
		}
	}
}

// The newest user message is protected; when it holds only a tool result, its call stays
// with it. Before, a tail of just the final answer summarized call B and kept result B,
// which the run then dropped as an orphan.
func TestChooseKeepsNewestResultWithItsCall(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"task"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"y"}]},` +
		`{"role":"assistant","content":"a long final answer"}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Force = true
	o.PerMessage = []int{10, 10, 10, 10, 10, 50}
	o.Tokens, o.Effective, o.KeepTokens = 100, 1000, 40
	sp := Choose(tr, o)
	if got := fmt.Sprint(sp.Summarized); got != "[0 1 2]" {
		t.Errorf("summarized %s, want [0 1 2]: call b (3) stays with its result (4)", got)
	}
}

func TestFoldCarriesEarlierSummary(t *testing.T) {
	older := Sections{"Goal and user requests": {"Goal: “ship v2”"}, "Files changed": {"a.go"}, "Errors": {"`go test`: FAIL x [unresolved]"}, "Next step": {"run the tests"}}
	newer := Sections{"Files changed": {"b.go", "a.go"}, "Errors": {"`go test`: FAIL x [fixed]"}, "Next step": {"release"}}
	got := Fold(older, newer)
	if fmt.Sprint(got["Files changed"]) != "[a.go b.go]" || fmt.Sprint(got["Errors"]) != "[`go test`: FAIL x [fixed]]" ||
		fmt.Sprint(got["Next step"]) != "[release]" || len(got["Goal and user requests"]) != 1 {
		t.Errorf("fold: %v", got)
	}
	// Render and Parse are inverses on the sections.
	back, _ := Parse(Render(got, Meta{Messages: 3, Tokens: 100, Backend: "local"}))
	for _, h := range Headings {
		if fmt.Sprint(back[h]) != fmt.Sprint(got[h]) {
			t.Errorf("%s: %v after a round trip, was %v", h, back[h], got[h])
		}
	}
}

// TestSecondRunFolds: summarizing a summarized document folds the first summary in: one
// summary message, still holding the first one's requests.
func TestSecondRunFolds(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "..", "testdata", "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	once, _, first, err := summarizeDoc("anthropic.json", in, 0, false)
	if err != nil || first == "" {
		t.Fatalf("first run: %v", err)
	}
	twice, sp, second, err := summarizeDoc("anthropic.json", once, 0, true)
	if err != nil || second == "" {
		t.Fatalf("second run: %v", err)
	}
	if len(sp.Previous) != 1 {
		t.Errorf("the second run folded %d earlier summaries, want 1", len(sp.Previous))
	}
	if n := strings.Count(string(twice), transcript.SummaryTag); n != 1 {
		t.Errorf("%d summaries in the document, want 1", n)
	}
	s1, _ := Parse(first)
	for _, req := range s1["Goal and user requests"] {
		if !strings.Contains(second, req) {
			t.Errorf("the folded summary lost %q", req)
		}
	}
}

// TestCorpus: on every corpus file and sample, with the window at the document's own size
// (so the tier acts): the invariant checker (structural, lossy, idempotent); valid inputs
// stay valid; and the retention of the summarized part — its file paths, its user
// requests, its unresolved errors — in the summary. Logs retention and token reduction
// per folder.
func TestCorpus(t *testing.T) {
	files := invariant.Samples(t)
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "corpus")); err == nil {
		files = append(files, invariant.CorpusFiles(t)...)
	}
	type tally struct {
		files, acted, loops, paths, pathsKept, requests, requestsKept, errors, errorsKept, before, after int
	}
	per := map[string]*tally{}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src, err := transcript.Parse(in, transcript.Options{Name: path})
		if err != nil {
			t.Fatal(err)
		}
		if len(src.Messages) == 0 {
			continue
		}
		folder := invariant.Folder(path)
		if per[folder] == nil {
			per[folder] = &tally{}
		}
		tl := per[folder]
		tl.files++
		o := Defaults()
		o.Counter = estimate()
		o.Tokens, o.PerMessage = measure.PerMessage(src, o.Counter)
		effective := o.Tokens
		out, sp, text, err := summarizeDoc(path, in, effective, false)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		after, err := transcript.Parse(out, transcript.Options{Name: path})
		if err != nil {
			t.Errorf("%s: output does not parse: %v", path, err)
			continue
		}
		o2 := Defaults()
		o2.Counter = estimate()
		o2.Tokens, o2.PerMessage = measure.PerMessage(after, o2.Counter)
		if text != "" && float64(o2.Tokens) > o.Trigger*float64(effective) {
			// The compaction loop: the kept part alone is above the trigger, so a second
			// run would summarize again (ctx-summarize warns). Not idempotent by nature.
			tl.loops++
		} else {
			invariant.Check(t, path, in, func(b []byte) ([]byte, error) {
				out, _, _, err := summarizeDoc(path, b, effective, false)
				return out, err
			}, invariant.Options{Structural: true, Lossy: true})
		}
		if text != "" {
			checkReplaced(t, path, src, after, sp)
		}
		if len(repair.Check(src)) == 0 {
			if ps := repair.Check(after); len(ps) > 0 {
				t.Errorf("%s: output breaks %d rules, first %s", path, len(ps), ps[0])
			}
		}
		tl.before += o.Tokens
		tl.after += o2.Tokens
		if text == "" {
			continue
		}
		tl.acted++
		// Compare with the sections' content (Render indents continuation lines).
		parsed, _ := Parse(text)
		var all []string
		for _, items := range parsed {
			all = append(all, items...)
		}
		text = strings.Join(all, "\n")
		// What the summary must retain, found independently of the extractor.
		for _, mi := range sp.Summarized {
			m := &src.Messages[mi]
			for bi := range m.Blocks {
				b := &m.Blocks[bi]
				switch {
				case b.Kind == transcript.Text && m.Role == "user" && !m.Summary && !b.Agent:
					words := strings.TrimSpace(src.BodyText(b))
					if userWords(src.Format, words) == "" {
						continue
					}
					tl.requests++
					if strings.Contains(text, firstChars(words, 60)) {
						tl.requestsKept++
					}
				case b.Kind == transcript.ToolCall:
					c := snip.Classify(b.ToolName, src.BodyText(b), snip.Tools{})
					if c.Class == snip.Read && c.File != "" {
						tl.paths++
						if strings.Contains(text, c.File) {
							tl.pathsKept++
						}
					}
				case b.Kind == transcript.ToolResult && b.IsError:
					tl.errors++
					if refused, _ := refusal(resultText(src, b)); refused {
						// A refusal is a decision, never an error (issue 17).
						if strings.Contains(text, "The user refused ") {
							tl.errorsKept++
						}
						continue
					}
					// The error's first line, or its first line that says error.
					out := resultText(src, b)
					kept := strings.Contains(text, firstChars(firstLine(out), 40))
					for _, line := range strings.Split(out, "\n") {
						if l := strings.ToLower(line); !kept && (strings.Contains(l, "error") || strings.Contains(l, "fail") || strings.Contains(l, "panic") || strings.Contains(l, "exception")) {
							kept = strings.Contains(text, firstChars(line, 40))
							break
						}
					}
					if kept {
						tl.errorsKept++
					} else {
						t.Logf("%s: error not in the summary: %.120q", path, out)
					}
				}
			}
		}
	}
	for folder, tl := range per {
		t.Logf("%s: %d files, %d summarized (%d still above the trigger); tokens %d -> %d (%.0f%%); retained: paths %d/%d, user requests %d/%d, errors %d/%d",
			folder, tl.files, tl.acted, tl.loops, tl.before, tl.after, 100*float64(tl.after)/float64(max(tl.before, 1)),
			tl.pathsKept, tl.paths, tl.requestsKept, tl.requests, tl.errorsKept, tl.errors)
		if tl.pathsKept < tl.paths*95/100 || tl.requestsKept < tl.requests*95/100 || tl.errorsKept < tl.errors*90/100 {
			t.Errorf("%s: retention below 95%% of paths and requests / 90%% of errors", folder)
		}
	}
}

// firstChars is the start of a text as the summary quotes it (shortened texts keep their
// head).
func firstChars(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// checkReplaced is summarize's own rule of what may change: the summarized messages give way
// to exactly one summary message, and every block of every other message is still there,
// byte for byte (an Anthropic message merged with the summary keeps its blocks).
func checkReplaced(t *testing.T, path string, before, after *transcript.Transcript, sp Split) {
	t.Helper()
	gone := map[int]bool{}
	for _, mi := range sp.Summarized {
		gone[mi] = true
	}
	out := after.Doc
	for mi := range before.Messages {
		if gone[mi] {
			continue
		}
		m := &before.Messages[mi]
		for bi := range m.Blocks {
			if raw := before.Slice(m.Blocks[bi].Span); !strings.Contains(out, raw) {
				t.Errorf("%s: kept message %d lost block %d", path, mi, bi)
			}
		}
	}
	summaries := 0
	for _, m := range after.Messages {
		if m.Summary {
			summaries++
		}
	}
	if summaries != 1 {
		t.Errorf("%s: %d summary messages in the result, want 1", path, summaries)
	}
	if after.Format == transcript.ClaudeCode {
		checkBoundary(t, path, before, after, sp)
	}
}

// checkBoundary: a summarized Claude Code session has one compact boundary more, the
// newest a root whose logicalParentUuid is the last summarized line and off which the
// summary hangs; read from that boundary on, as readers that skip compacted history do,
// the session is the same conversation.
func checkBoundary(t *testing.T, path string, before, after *transcript.Transcript, sp Split) {
	t.Helper()
	boundaries := func(tr *transcript.Transcript) (n int, last transcript.Record) {
		for _, r := range tr.Records {
			if gjson.Get(tr.Slice(r.Span), "subtype").String() == "compact_boundary" {
				n, last = n+1, r
			}
		}
		return n, last
	}
	n0, _ := boundaries(before)
	n1, b := boundaries(after)
	if n1 != n0+1 {
		t.Errorf("%s: %d compact boundaries, want %d", path, n1, n0+1)
		return
	}
	line := after.Slice(b.Span)
	lastSummarized := &before.Messages[sp.Summarized[len(sp.Summarized)-1]]
	wantLogical := gjson.Get(before.Slice(lastSummarized.Lines[len(lastSummarized.Lines)-1]), "uuid").String()
	g := gjson.GetMany(line, "parentUuid", "logicalParentUuid", "uuid", "compactMetadata.preTokens")
	if g[0].Type != gjson.Null || g[1].String() != wantLogical || g[3].Int() != int64(sp.Before) {
		t.Errorf("%s: boundary %s, want a root after %q of %d tokens", path, line, wantLogical, sp.Before)
	}
	var summary *transcript.Message
	for mi := range after.Messages {
		if after.Messages[mi].Summary {
			summary = &after.Messages[mi]
		}
	}
	if summary == nil || gjson.Get(after.Slice(summary.Lines[0]), "parentUuid").String() != g[2].String() {
		t.Errorf("%s: the summary does not hang off the newest compact boundary", path)
		return
	}
	if summary.Lines[0].Start != b.Span.End+1 {
		t.Errorf("%s: the summary is not the line after the boundary", path)
	}
	tail, err := transcript.Parse([]byte(after.Doc[b.Span.Start-after.Base:]), transcript.Options{Format: transcript.ClaudeCode})
	if err != nil {
		t.Errorf("%s: the session from its newest boundary on does not parse: %v", path, err)
		return
	}
	if len(tail.Messages) != len(after.Messages) {
		t.Errorf("%s: %d messages from the newest boundary on, %d in the whole session", path, len(tail.Messages), len(after.Messages))
		return
	}
	for mi := range tail.Messages {
		if tail.Slice(tail.Messages[mi].Span) != after.Slice(after.Messages[mi].Span) {
			t.Errorf("%s: message %d differs when read from the newest boundary on", path, mi)
			return
		}
	}
}

// TestLocalFailedCalls: a refused or failed call read or changed nothing, so its file is
// listed under Errors only; the error is fixed once the same call succeeds later, and stays
// unresolved otherwise.
func TestLocalFailedCalls(t *testing.T) {
	call := func(id, name, input string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}`
	}
	result := func(id, text string, isError bool) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + text + `","is_error":` + fmt.Sprint(isError) + `}]}`
	}
	doc := `{"messages":[{"role":"user","content":"tidy the styles"},` +
		call("1", "Edit", `{"file_path":"/r/a.css","old_string":"x","new_string":"y"}`) + `,` + result("1", "The user doesn't want to proceed with this tool use.", true) + `,` +
		call("2", "Edit", `{"file_path":"/r/b.css","old_string":"x","new_string":"y"}`) + `,` + result("2", "The user doesn't want to proceed with this tool use.", true) + `,` +
		call("3", "Read", `{"file_path":"/r/gone.css"}`) + `,` + result("3", "File does not exist.", true) + `,` +
		call("4", "Edit", `{"file_path":"/r/a.css","old_string":"x","new_string":"z"}`) + `,` + result("4", "The file /r/a.css has been updated.", false) + `]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for mi := range tr.Messages {
		all = append(all, mi)
	}
	s := Local(tr, all)
	if got := fmt.Sprint(s["Files changed"]); got != "[/r/a.css]" {
		t.Errorf("files changed %s, want [/r/a.css]", got)
	}
	if len(s["Files read"]) != 0 {
		t.Errorf("files read %v, want none", s["Files read"])
	}
	// A refusal is the user's decision, never an open error a resuming agent would obey
	// ("STOP what you are doing"): issue 17.
	want := []string{"Read(/r/gone.css): File does not exist. [unresolved]"}
	if fmt.Sprint(s["Errors"]) != fmt.Sprint(want) {
		t.Errorf("errors:\n%q\nwant\n%q", s["Errors"], want)
	}
	want = []string{"The user refused Edit(/r/a.css)", "The user refused Edit(/r/b.css)"}
	if fmt.Sprint(s["Decisions"]) != fmt.Sprint(want) {
		t.Errorf("decisions:\n%q\nwant\n%q", s["Decisions"], want)
	}
}

// The default tail is a fifth of the room the messages have: what the system prompt and
// tools an agent adds leave of the window. A small window mostly filled by them keeps a
// small tail, so that the next summary is not due a few turns later.
func TestDefaultKeepIsAFifthOfTheRoom(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"task"},` +
		`{"role":"assistant","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"},` +
		`{"role":"assistant","content":"e"},{"role":"user","content":"f"},{"role":"assistant","content":"g"}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.PerMessage = []int{100, 100, 100, 100, 100, 100, 100, 100}
	// 800 tokens of messages and 7,200 the file does not hold (89% of a window of
	// 9,000): the tail is a fifth of the 800, 160 (a fifth of the document would keep
	// 1,600: every message).
	o.Tokens, o.Effective = 8000, 9000
	sp := Choose(tr, o)
	if sp.Keep != 160 {
		t.Errorf("keep %d tokens, want 160", sp.Keep)
	}
	if got := fmt.Sprint(sp.Summarized); got != "[0 1 2 3 4 5]" {
		t.Errorf("summarized %s, want [0 1 2 3 4 5]", got)
	}
}
