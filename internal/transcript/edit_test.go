package transcript

import "testing"

func TestApply(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"aaaa","x":1},{"role":"assistant","content":"bbbb"}]}`
	tr := mustParse(t, doc, Options{})
	a, b := tr.Messages[0].Blocks[0].Body, tr.Messages[1].Blocks[0].Body
	out, err := tr.Apply([]Edit{{Span: b, With: Quote("<B & \"b\">")}, {Span: a, With: Quote("A")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"A","x":1},{"role":"assistant","content":"<B & \"b\">"}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := Parse(out, Options{}); err != nil {
		t.Errorf("output does not parse: %v", err)
	}
	if _, err := tr.Apply([]Edit{{Span: Span{2, 10}}, {Span: Span{5, 12}}}); err == nil {
		t.Error("overlapping edits accepted")
	}
	if _, err := tr.Apply([]Edit{{Span: Span{2, len(doc) + 1}}}); err == nil {
		t.Error("edit past the end accepted")
	}
	same, _ := tr.Apply(nil)
	if string(same) != doc {
		t.Error("no edits must give the input back")
	}
}
