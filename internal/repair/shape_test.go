package repair

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestSameProblems holds SameProblems to Check: over the rule table's documents, the
// samples and their broken copies, a copy whose texts are all replaced (as a tier that
// clears results does) must be found alike, and any copy found alike must have the same
// problems, rule by rule, as its original; the other copies (a text emptied, a role or a
// tool id changed, a message cut) must include some found not alike.
func TestSameProblems(t *testing.T) {
	var docs [][]byte
	for _, d := range ruleDocs() {
		docs = append(docs, []byte(d))
	}
	for _, path := range invariant.Samples(t) {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, in)
		docs = append(docs, breakings(t, filepath.Base(path), in)...)
	}
	reworded, unlike := 0, 0
	var parsed []*transcript.Transcript
	for _, doc := range docs {
		for _, f := range []transcript.Format{"", transcript.Anthropic, transcript.OpenAI, transcript.Responses} {
			if a, err := transcript.Parse(doc, transcript.Options{Format: f}); err == nil {
				parsed = append(parsed, a)
			}
		}
	}
	for i, a := range parsed {
		doc := a.Doc
		for j, v := range shapeVariants(a) {
			b, err := transcript.Parse(v.doc, transcript.Options{Format: a.Format})
			if err != nil {
				continue
			}
			same := SameProblems(a, b)
			if v.alike && a.Format != transcript.Cline && !a.Format.JSONL() {
				reworded++
				if !same {
					t.Errorf("doc %d (%s), %s: not found alike\n%s\n%s", i, a.Format, v.name, doc, v.doc)
				}
			}
			if !same {
				unlike++
				continue
			}
			if ca, cb := Counts(Check(a)), Counts(Check(b)); !maps.Equal(ca, cb) {
				t.Errorf("doc %d (%s), variant %d (%s): found alike, but Check gives %v and %v\n%s\n%s", i, a.Format, j, v.name, ca, cb, doc, v.doc)
			}
		}
	}
	t.Logf("%d reworded copies, %d found not alike", reworded, unlike)
	if reworded < 20 || unlike < 20 {
		t.Errorf("%d reworded copies, %d found not alike: too few to tell", reworded, unlike)
	}
}

type shapeVariant struct {
	name  string
	doc   []byte
	alike bool // SameProblems must hold
}

// shapeVariants are copies of t with the texts reworded (alike), and with one thing Check reads
// changed each.
func shapeVariants(t *transcript.Transcript) []shapeVariant {
	var out []shapeVariant
	add := func(name string, alike bool, edits ...transcript.Edit) {
		if b, err := t.Apply(edits); err == nil {
			out = append(out, shapeVariant{name, b, alike})
		}
	}
	var reword []transcript.Edit
	for mi := range t.Messages {
		m := &t.Messages[mi]
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			raw := t.Slice(b.Body)
			if b.BodyJSON || !strings.HasPrefix(raw, `"`) || b.Kind == transcript.ToolCall {
				continue
			}
			with := `"cleared: re-run the call"`
			if strings.TrimSpace(t.BodyText(b)) == "" {
				with = `" \n"`
			}
			reword = append(reword, transcript.Edit{Span: b.Body, With: with})
			if b.Kind == transcript.Text {
				empty := `" "`
				if with == `" \n"` {
					empty = `"text"`
				}
				add(fmt.Sprintf("message %d block %d emptied or filled", mi, bi), false, transcript.Edit{Span: b.Body, With: empty})
			}
			if b.ToolID != "" {
				if i := strings.Index(t.Slice(b.Span), transcript.Quote(b.ToolID)); i >= 0 {
					at := b.Span.Start + i
					add(fmt.Sprintf("message %d block %d id changed", mi, bi), false,
						transcript.Edit{Span: transcript.Span{Start: at, End: at + len(transcript.Quote(b.ToolID))}, With: `"other"`})
				}
			}
		}
		raw := t.Slice(m.Span)
		for _, role := range []string{`"role":"user"`, `"role":"assistant"`} {
			if i := strings.Index(raw, role); i >= 0 {
				flip := `"role":"assistant"`
				if role == flip {
					flip = `"role":"user"`
				}
				at := m.Span.Start + i
				add(fmt.Sprintf("message %d role flipped", mi), false, transcript.Edit{Span: transcript.Span{Start: at, End: at + len(role)}, With: flip})
				break
			}
		}
	}
	if len(reword) > 0 {
		add("reworded", true, reword...)
	}
	return out
}

// ruleDocs are TestRules' documents.
func ruleDocs() []string {
	return []string{
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"text","text":"more"}]}]}`,
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"user","content":"wait"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},{"role":"assistant","content":"?"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":"r"}]}]}`,
		`{"messages":[{"role":"user","content":" \n"},{"role":"user","content":"go"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"  "},{"type":"text","text":"\u00a0x"},{"type":"text","text":"\u00a0"},{"type":"text","text":"\n"}]},{"role":"assistant","content":[{"type":"text","text":"\t"}]}]}`,
		`[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"1"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"2"}]`,
		`{"history":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_ids":["a","b"],"content":"both"}]}`,
		`[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"hurry"},{"role":"tool","tool_call_id":"a","content":"1"}]`,
		`{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call","call_id":"b","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"b","output":"2"},{"type":"function_call_output","call_id":"a","output":"1"}]}`,
		`{"input":["hi",{"content":"x"},{"type":"message","content":[{"type":"input_text","text":"w"}]},{"foo":1},3,{"role":"assistant","content":"y"}]}`,
		`{"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"1"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]}`,
	}
}
