package repair

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite testdata/corpus-verdicts.golden")

// repairDoc is ctx-repair on a whole document: parse, plan, splice, then the same
// re-read the tool does before writing.
func repairDoc(name string, in []byte, o transcript.Options) ([]byte, []Problem, error) {
	o.Name = name
	t, err := transcript.Parse(in, o)
	if err != nil {
		return nil, nil, err
	}
	edits, problems, err := Plan(t)
	if err != nil {
		return nil, nil, err
	}
	if (len(edits) == 0) != (len(problems) == 0) {
		return nil, nil, fmt.Errorf("%d problems but %d edits", len(problems), len(edits))
	}
	out, err := t.Apply(edits)
	if err != nil {
		return nil, nil, err
	}
	if len(edits) > 0 {
		if _, err := verify(out, t.Format, name); err != nil {
			return nil, nil, err
		}
	}
	return out, problems, nil
}

func transform(name string, o transcript.Options) invariant.Transform {
	return func(in []byte) ([]byte, error) {
		out, _, err := repairDoc(name, in, o)
		return out, err
	}
}

func rules(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Rule))
	}
	return strings.Join(out, " ")
}

// TestRules pins, per format, which problems a small document has and that the repaired
// document has none. (The testscripts pin the repaired bytes.)
func TestRules(t *testing.T) {
	cases := []struct {
		name, format, doc, want string
	}{
		{"anthropic clean", "anthropic", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"more"}]}]}`, ""},
		{"anthropic server tools are the provider's", "anthropic", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]},{"type":"text","text":"a"}]}]}`, ""},
		{"anthropic result in the assistant message", "anthropic", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`, "misplaced-result"},
		{"anthropic result two messages late", "anthropic", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"user","content":"wait"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`, "misplaced-result"},
		{"anthropic result before its call", "anthropic", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]}]}`, "misplaced-result"},
		{"anthropic tool_use in a user message", "anthropic", `{"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"assistant","content":"?"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`, "orphan-result"},
		{"anthropic empty id", "anthropic", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":"r"}]}]}`, "duplicate-id"},
		{"anthropic whitespace text alone", "anthropic", `{"messages":[{"role":"user","content":" \n"},{"role":"user","content":"go"}]}`, "empty-message"},
		{"anthropic redacted thinking is content", "anthropic", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"zz"}]}]}`, ""},
		{"openai reused ids across turns", "openai", `[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"2"}]`, ""},
		{"openai legacy function_call is left alone", "openai", `[{"role":"user","content":"q"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"1"}]`, ""},
		{"openai one tool message for two calls", "openai", `{"history":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_ids":["a","b"],"content":"both"}]}`, "tool-call-ids"},
		{"openai result after a user message", "openai", `[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"hurry"},{"role":"tool","tool_call_id":"a","content":"1"}]`, "misplaced-result"},
		{"responses outputs in any order after their calls", "responses", `{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call","call_id":"b","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"b","output":"2"},{"type":"function_call_output","call_id":"a","output":"1"}]}`, ""},
		{"responses items that are not items", "responses", `{"input":["hi",{"content":"x"},{"type":"message","content":[{"type":"input_text","text":"w"}]},{"foo":1},3,{"role":"assistant","content":"y"}]}`, "item-shape item-shape item-shape item-shape item-shape"},
		{"responses one string input is a message", "responses", `{"input":"hi"}`, ""},
		{"responses reused call_id paired by position", "responses", `{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"1"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]}`, "missing-result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _ := transcript.ParseFormat(c.format)
			tr, err := transcript.Parse([]byte(c.doc), transcript.Options{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(Check(tr)); got != c.want {
				t.Errorf("Check = %q, want %q", got, c.want)
			}
			out, _, err := repairDoc("doc.json", []byte(c.doc), transcript.Options{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && string(out) != c.doc {
				t.Errorf("a document without problems changed:\n%s", out)
			}
		})
	}
}

// TestItemShape pins what fixing the shape of Responses input items makes of them: a
// bare string is a user message, a message item without a role a user's, and what holds
// no content goes.
func TestItemShape(t *testing.T) {
	in := `{"input":["hi",{"content":"x"},{"foo":1},3,{"role":"assistant","content":"y"}]}`
	out, problems, err := repairDoc("doc.json", []byte(in), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input":[{"role":"user","content":"hi"},{"content":"x","role":"user"},{"role":"assistant","content":"y"}]}`
	if string(out) != want || len(problems) != 4 {
		t.Errorf("repaired to\n%s\nwith %d problems, want\n%s\nwith 4", out, len(problems), want)
	}
}

// TestSplitResultKeepsContent: a tool message answering two calls becomes two tool
// messages with the same content, each answering one call.
func TestSplitResultKeepsContent(t *testing.T) {
	doc := `{"history":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_ids":["a","b"],"content":"both","agent":"main"}]}`
	out, _, err := repairDoc("d.json", []byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"tool","content":"both","agent":"main","tool_call_id":"a"},{"role":"tool","content":"both","agent":"main","tool_call_id":"b"}]}`
	if !strings.HasSuffix(string(out), want) {
		t.Errorf("got %s\nwant suffix %s", out, want)
	}
}

// TestCorpusAndSamples runs the invariant checker (structural: messages may move, merge
// and appear) on every corpus file and sample, and on broken copies of each: every tool
// result removed in turn, every call removed in turn (orphaning its result), and the
// results moved to the end. The repaired copies must parse, pass Check, keep their format
// and be a fixed point.
func TestCorpusAndSamples(t *testing.T) {
	files := append(invariant.Samples(t), corpusOrNone(t)...)
	broken, unnoticed := 0, 0
	fixed := map[string]map[Rule]int{}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		invariant.Check(t, name, in, transform(name, transcript.Options{}), invariant.Options{Structural: true})
		folder := invariant.Folder(path)
		if fixed[folder] == nil {
			fixed[folder] = map[Rule]int{}
		}
		for i, variant := range breakings(t, name, in) {
			broken++
			invariant.Check(t, fmt.Sprintf("%s (broken #%d)", name, i), variant, transform(name, transcript.Options{}), invariant.Options{Structural: true})
			_, problems, err := repairDoc(name, variant, transcript.Options{})
			if err != nil {
				continue // reported by the invariant check
			}
			if len(problems) == 0 {
				unnoticed++
			}
			for r, n := range Counts(problems) {
				fixed[folder][r] += n
			}
		}
	}
	t.Logf("%d documents; %d broken copies repaired (%d had nothing to repair)", len(files), broken, unnoticed)
	for folder, counts := range fixed {
		t.Logf("broken copies, %s: problems fixed %v", folder, counts)
	}
	if broken > 0 && unnoticed*2 > broken {
		t.Errorf("%d of %d broken copies had no problem: the breaking does not break", unnoticed, broken)
	}
}

func corpusOrNone(t *testing.T) []string {
	root := filepath.Join("..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Logf("corpus not found at %s: samples only", root)
		return nil
	}
	return invariant.CorpusFiles(t)
}

// breakings makes broken copies of a JSON document by deleting message-array elements and
// blocks: the first tool result, the first tool call, and the last message. (JSONL
// documents are broken by deleting record lines, which the uuid chain may route around.)
func breakings(t testing.TB, name string, in []byte) [][]byte {
	tr, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return nil
	}
	var out [][]byte
	cut := func(s transcript.Span) {
		b, err := tr.Apply([]transcript.Edit{deleteElement(tr, s)})
		if err == nil {
			out = append(out, b)
		}
	}
	var firstCall, firstResult, lastResult *transcript.Block
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			switch {
			case b.Kind == transcript.ToolCall && firstCall == nil:
				firstCall = b
			case b.Kind == transcript.ToolResult:
				if firstResult == nil {
					firstResult = b
				}
				lastResult = b
			}
		}
	}
	if tr.Format.JSONL() {
		// Point the newest result at a call that does not exist: an orphan, and its call
		// unanswered. (Deleting its record line would only cut the uuid chain.)
		if lastResult != nil {
			raw := tr.Slice(lastResult.Span)
			key := `"tool_use_id":`
			if tr.Format == transcript.Codex {
				key = `"call_id":`
			}
			if i := strings.Index(raw, key); i >= 0 {
				at := lastResult.Span.Start + i + len(key)
				id := transcript.Span{Start: at, End: at + len(transcript.Quote(lastResult.ToolID))}
				if b, err := tr.Apply([]transcript.Edit{{Span: id, With: `"broken"`}}); err == nil {
					out = append(out, b)
				}
			}
		}
		return out
	}
	if firstResult != nil {
		cut(firstResult.Span)
	}
	if firstCall != nil {
		cut(firstCall.Span)
	}
	return out
}

// TestCorpusVerdicts records ctx-repair --check's verdict on every corpus file in a
// golden table (go test -run TestCorpusVerdicts -update rewrites it).
func TestCorpusVerdicts(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found at %s", root)
	}
	files := invariant.CorpusFiles(t)
	sort.Strings(files)
	var table bytes.Buffer
	table.WriteString("# ctx-repair --check on ../shared/corpus: file, then ok or the problems per rule.\n")
	perFolder := map[string]map[Rule]int{}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.ToSlash(path)
		rel = rel[strings.LastIndex(rel, "/corpus/")+len("/corpus/"):]
		tr, err := transcript.Parse(in, transcript.Options{Name: path})
		if err != nil {
			fmt.Fprintf(&table, "%s\tunreadable: %v\n", rel, err)
			continue
		}
		counts := Counts(Check(tr))
		folder := invariant.Folder(path)
		if perFolder[folder] == nil {
			perFolder[folder] = map[Rule]int{}
		}
		verdict := "ok"
		if len(counts) > 0 {
			var parts []string
			for _, r := range Rules {
				if n := counts[r]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s=%d", r, n))
					perFolder[folder][r] += n
				}
			}
			verdict = strings.Join(parts, " ")
		}
		fmt.Fprintf(&table, "%s\t%s\n", rel, verdict)
	}
	for folder, counts := range perFolder {
		t.Logf("%s: %v", folder, counts)
	}
	golden := filepath.Join("testdata", "corpus-verdicts.golden")
	if *update {
		if err := os.WriteFile(golden, table.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCorpusVerdicts -update)", err)
	}
	if !bytes.Equal(want, table.Bytes()) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(table.String(), "\n")
		for i := 0; i < max(len(wl), len(gl)); i++ {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				t.Fatalf("verdicts differ from %s at line %d:\nwant %s\ngot  %s", golden, i+1, w, g)
			}
		}
	}
}

// deleteElement removes an array element and one comma next to it (to break documents).
func deleteElement(t *transcript.Transcript, s transcript.Span) transcript.Edit {
	doc := t.Doc
	i := s.End
	for i < len(doc) && isSpace(doc[i]) {
		i++
	}
	if i < len(doc) && doc[i] == ',' {
		return transcript.Edit{Span: transcript.Span{Start: s.Start, End: i + 1}}
	}
	j := s.Start
	for j > 0 && isSpace(doc[j-1]) {
		j--
	}
	if j > 0 && doc[j-1] == ',' {
		return transcript.Edit{Span: transcript.Span{Start: j - 1, End: s.End}}
	}
	return transcript.Edit{Span: s}
}

// TestInvalidUTF8Ids: a call id that is not valid UTF-8 is answered with the same bytes; a
// re-quoted id (U+FFFD) would answer nothing. Found by FuzzRepair.
func TestInvalidUTF8Ids(t *testing.T) {
	for _, doc := range []string{
		"[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"a\xffb\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]",
		"{\"system\":\"s\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\xffb\",\"name\":\"f\",\"input\":{}}]}]}",
		"{\"input\":[{\"type\":\"function_call\",\"call_id\":\"a\xffb\",\"name\":\"f\",\"arguments\":\"{}\"}]}",
	} {
		if _, problems, err := repairDoc("doc.json", []byte(doc), transcript.Options{}); err != nil || len(problems) != 1 {
			t.Errorf("%q: %d problems, %v", doc, len(problems), err)
		}
	}
}

// TestEveryFormatRepaired walks the formats: each has its rules.
func TestEveryFormatRepaired(t *testing.T) {
	for _, f := range transcript.Formats {
		if r, ok := formatRules[f]; !ok || r.check == nil || r.fix == nil {
			t.Errorf("%s has no repair rules", f)
		}
	}
}
