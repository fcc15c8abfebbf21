package budget

import (
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzUnwrapMatchesGetMany: unwrap finds the output and metadata gjson.GetMany finds.
func FuzzUnwrapMatchesGetMany(f *testing.F) {
	for _, s := range []string{`{"output":"a\nb","metadata":{"exit_code":0}}`, `{"metadata":{},"output":"x"}`,
		`{"output":"x","output":"y","metadata":{}}`, `{"out\u0070ut":"z","metadata":{}}`, `{"output":1,"metadata":{}}`,
		`{"a":{"output":"no"},"output":"yes","metadata":{"a":1}}`, `{"output":"x","metadata":[]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := unit{text: s}
		u.unwrap()
		want := unit{text: s}
		if len(s) >= 12 && s[0] == '{' && gjson.Valid(s) {
			g := gjson.GetMany(s, "output", "metadata")
			if g[0].Type == gjson.String && g[1].IsObject() {
				want.hasInner, want.cutText = true, g[0].String()
				want.inner.Start, want.inner.End = g[0].Index, g[0].Index+len(g[0].Raw)
			}
		}
		if u.hasInner != want.hasInner || u.cutText != want.cutText || u.inner != want.inner {
			t.Errorf("unwrap(%q): %v %q %v, GetMany: %v %q %v", s, u.hasInner, u.cutText, u.inner, want.hasInner, want.cutText, want.inner)
		}
	})
}
