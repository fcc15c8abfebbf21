package transcript

import (
	"testing"

	"github.com/tidwall/gjson"
)

// ShellWrapper finds what gjson.Get finds, with offsets into text.
func TestShellWrapper(t *testing.T) {
	for _, text := range []string{
		`{"output":"a\nb","metadata":{"exit_code":1,"duration_seconds":0.5}}`,
		`{"metadata":{"exit_code":0},"output":"x"}`,
		` {"output":"first","output":"second","metadata":{"exit_code":2},"metadata":{}}`,
		`{"output":"no metadata"}`,
		`{"metadata":{"exit_code":3}}`,
		`{"other":1}`,
		`"a string"`,
		`[{"output":"in an array"}]`,
		``,
		`{"output":`,
	} {
		out, meta := ShellWrapper(text)
		isObject := gjson.Parse(text).IsObject()
		wantOut, wantMeta := gjson.Get(text, "output"), gjson.Get(text, "metadata")
		if !isObject {
			wantOut, wantMeta = gjson.Result{}, gjson.Result{}
		}
		if out.Raw != wantOut.Raw || meta.Raw != wantMeta.Raw {
			t.Errorf("%q: output %q metadata %q; gjson.Get finds %q, %q", text, out.Raw, meta.Raw, wantOut.Raw, wantMeta.Raw)
		}
		for _, r := range []gjson.Result{out, meta} {
			if r.Exists() && text[r.Index:r.Index+len(r.Raw)] != r.Raw {
				t.Errorf("%q: %q is not at offset %d", text, r.Raw, r.Index)
			}
		}
	}
}
