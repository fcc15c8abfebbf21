package convert

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// TestRootFields: the lookups on the root without its message array find what they find
// on the whole document, also when the array is inside a member they look up.
func TestRootFields(t *testing.T) {
	for _, c := range []struct{ doc, path string }{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"tools":[{"name":"x"}]}`, ""},
		{` { "messages" : [ {"role":"user","content":"hi"} ] , "stop":["a"], "stop":"b", "model":"n" } `, ""},
		{`{"tools":[{"role":"user","content":"hi"}],"model":"m"}`, "tools"},
		{`{"model":{"msgs":[{"role":"user","content":"hi"}]},"top_p":1}`, "model.msgs"},
		{`{"temperature":[{"role":"user","content":"hi"}]}`, "temperature"},
		{`{"history":[{"role":"user","content":"hi"}],"messages":"not a list","temperature":0.5}`, ""},
		{`{"input":"just a string","model":"gpt"}`, ""},
	} {
		tr, err := transcript.Parse([]byte(c.doc), transcript.Options{Path: c.path, Format: transcript.OpenAI})
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		got, want := rootFields(tr), gjson.GetMany(c.doc, rootKeys...)
		for i := range rootKeys {
			if got[i].Raw != want[i].Raw || got[i].Type != want[i].Type {
				t.Errorf("%s (path %q): %s = %s, want %s", c.doc, c.path, rootKeys[i], got[i].Raw, want[i].Raw)
			}
		}
	}
}
