package transcript

import "testing"

func TestClineLabel(t *testing.T) {
	for _, c := range []struct {
		text string
		name string
		n    int
	}{
		{"[read_file for 'src/x.ts'] Result:\nbody", "read_file", 35},
		{"[read_file for 'src/x.ts'] Result:", "read_file", 34},
		{"[attempt_completion] Result:\r\nok", "attempt_completion", 30},
		{"[execute_command for 'echo \"] Result:\" | cat'] Result:\nout", "execute_command", 55},
		{"[search_files for 'x' in '*.go'] Result:\n", "search_files", 41},
		{"[read_file for 'x'] Result: inline", "", 0},
		{"[not a label", "", 0},
		{"[] Result:\n", "", 0},
		{"read_file Result:\n", "", 0},
	} {
		name, n := clineLabel(c.text)
		if name != c.name || n != c.n {
			t.Errorf("clineLabel(%q) = %q, %d; want %q, %d", c.text, name, n, c.name, c.n)
		}
	}
}

// A Cline history: the newer one-text form, the older label-then-text form, a refusal,
// a labelled text with no call (XML tool use), and environment details.
const clineDoc = `[
{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"},{"type":"text","text":"<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"}]},
{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.go"}}]},
{"role":"user","content":[{"type":"text","text":"[read_file for 'a.go'] Result:\npackage a"},{"type":"text","text":"<environment_details>\nx\n</environment_details>"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"execute_command","input":{"command":"go test"}}]},
{"role":"user","content":[{"type":"text","text":"[execute_command for 'go test'] Result:"},{"type":"text","text":"ok  a 0.1s"},{"type":"text","text":"<environment_details>\nx\n</environment_details>"}]},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_3","name":"write_to_file","input":{"path":"b.go","content":"package b"}}]},
{"role":"user","content":[{"type":"text","text":"[write_to_file for 'b.go'] Result:\nThe user denied this operation."}]},
{"role":"assistant","content":[{"type":"text","text":"<list_files>\n<path>.</path>\n</list_files>"}]},
{"role":"user","content":[{"type":"text","text":"[list_files for '.'] Result:\na.go\nb.go"}]}
]`

func TestClineResults(t *testing.T) {
	tr, err := Parse([]byte(clineDoc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != Cline {
		t.Fatalf("detected %s, want cline", tr.Format)
	}
	type want struct {
		m, b int
		id   string
		name string
		head int
		lead bool
		err  bool
		text string
	}
	for _, w := range []want{
		{m: 2, b: 0, id: "toolu_1", name: "read_file", head: 31, text: "package a"},
		{m: 4, b: 1, id: "toolu_2", name: "execute_command", lead: true, text: "ok  a 0.1s"},
		{m: 6, b: 0, id: "toolu_3", name: "write_to_file", head: 35, err: true, text: "The user denied this operation."},
		{m: 8, b: 0, id: "", name: "list_files", head: 29, text: "a.go\nb.go"},
	} {
		b := &tr.Messages[w.m].Blocks[w.b]
		label, rest := SplitLabel(tr.BodyText(b), b.Head)
		if b.Kind != ToolResult || b.ToolID != w.id || b.ToolName != w.name || b.Head != w.head || b.IsError != w.err || rest != w.text || len(label) != w.head {
			t.Errorf("message %d block %d: %+v (label %q, text %q)", w.m, w.b, *b, label, rest)
		}
		if got := !b.Lead.IsZero(); got != w.lead {
			t.Errorf("message %d block %d: lead %v, want %v", w.m, w.b, got, w.lead)
		}
	}
	agents := map[Ref]bool{{0, 1}: true, {2, 1}: true, {4, 0}: true, {4, 2}: true}
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			if got := tr.Messages[mi].Blocks[bi].Agent; got != agents[Ref{mi, bi}] {
				t.Errorf("message %d block %d: agent %v", mi, bi, got)
			}
		}
	}
	// Pairing sees the results; the XML call's result has no call.
	n := 0
	for _, p := range tr.Pairs() {
		if p.Call != None && p.Result != None {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d pairs, want 3", n)
	}
	// Read as plain Anthropic, the same document has no results.
	a, err := Parse([]byte(clineDoc), Options{Format: Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range a.Messages {
		for _, b := range m.Blocks {
			if b.Kind == ToolResult || b.Agent {
				t.Fatalf("--format anthropic read a Cline result: %+v", b)
			}
		}
	}
}

// Newer Cline versions, and ctx-repair, write labelled tool_result blocks: the document
// is still a Cline history, and the label is the result's Head.
func TestClineLabelledToolResult(t *testing.T) {
	doc := `[{"role":"user","content":"go"},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.go"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[read_file for 'a.go'] Result:\npackage a"}]}]`
	tr, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &tr.Messages[2].Blocks[0]
	if tr.Format != Cline || b.Kind != ToolResult || b.Head != 31 || tr.LabelOf(b) != "[read_file for 'a.go'] Result:\n" {
		t.Fatalf("format %s, block %+v, label %q", tr.Format, *b, tr.LabelOf(b))
	}
}
