package measure

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// recorder is a counter that notes every text it is asked to count.
type recorder struct{ texts []string }

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Count(text string) int {
	r.texts = append(r.texts, text)
	return tokens.Estimate(text)
}

// TestOfNextCountsOnlyWhatIsNew: of a request that extends the one before, OfNext
// counts the new messages only (the tool schemas and the messages before are prev's),
// and comes to Of's tally.
func TestOfNextCountsOnlyWhatIsNew(t *testing.T) {
	const head = `{"model":"claude-x","tools":[{"name":"Read","input_schema":{}}],"messages":[` +
		`{"role":"user","content":"first question"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"file a"}]}`
	before := []byte(head + `]}`)
	after := []byte(head + `,{"role":"assistant","content":"an answer"},{"role":"user","content":"second question"}]}`)
	// The one before with its first message re-encoded: found again after it, moved.
	edited := []byte(`{"model":"claude-x","tools":[{"name":"Read","input_schema":{}}],"messages":[` +
		`{"role":"user", "content":"first question"}` + head[len(`{"model":"claude-x","tools":[{"name":"Read","input_schema":{}}],"messages":[{"role":"user","content":"first question"}`):] + `]}`)
	for _, c := range []struct {
		name string
		doc  []byte
		want []string
	}{
		{"extended", after, []string{"an answer", "second question"}},
		{"re-encoded", edited, []string{"first question"}},
	} {
		r := &recorder{}
		prev, err := transcript.Parse(before, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		prevTally := Of(prev, r, false)
		next, err := transcript.Reparse(prev, c.doc, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.texts = nil
		got := OfNext(prev, prevTally, next, r)
		counted := slices.Clone(r.texts)
		if !reflect.DeepEqual(counted, c.want) {
			t.Errorf("%s: counted %q, want %q", c.name, counted, c.want)
		}
		if want := Of(next, r, false); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: OfNext\n%+v\nwant Of's\n%+v", c.name, got, want)
		}
	}
	// Another counter: everything is counted again.
	prev, _ := transcript.Parse(before, transcript.Options{})
	prevTally := Of(prev, &recorder{}, false)
	next, _ := transcript.Reparse(prev, after, transcript.Options{})
	r := &recorder{}
	OfNext(prev, prevTally, next, r)
	if len(r.texts) < 5 {
		t.Errorf("with another counter, counted %q", r.texts)
	}
}

// TestOfNextHoldsNoEarlierDocument: the tally of a later request holds no string of the
// document before it, so a tally carried from turn to turn (ctx-replay, ctx-proxy) does
// not keep every earlier request alive (a 10 MB replay held 1.2 GB when it did).
func TestOfNextHoldsNoEarlierDocument(t *testing.T) {
	head := `{"model":"claude-x","messages":[` +
		`{"role":"user","content":"first question"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"file a"}]}`
	before := []byte(head + `]}`)
	after := []byte(head + `,{"role":"assistant","content":"an answer"}]}`)
	prev, err := transcript.Parse(before, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &recorder{}
	prevTally := Of(prev, c, false)
	next, err := transcript.Reparse(prev, after, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := OfNext(prev, prevTally, next, c)
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(before)))
	hi := lo + uintptr(len(before))
	inPrev := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return s != "" && p >= lo && p < hi
	}
	for i, m := range got.Messages {
		if inPrev(m.Role) {
			t.Errorf("message %d: its role is the earlier document's", i)
		}
		for k, b := range m.Blocks {
			if inPrev(b.ToolName) || inPrev(b.ToolID) || slices.ContainsFunc(b.ToolIDs, inPrev) {
				t.Errorf("message %d block %d: %q %q hold the earlier document", i, k, b.ToolName, b.ToolID)
			}
		}
	}
}
