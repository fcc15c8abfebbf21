package measure

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A summary quotes the markers of what it summarizes; its own figure is what counts.
func TestMarkerWasPrefersTheSummary(t *testing.T) {
	for _, c := range []struct {
		text     string
		want     int
		messages bool
	}{
		{`<ctxkit-summary messages="75" tokens="45491" backend="local">\n- Read a.go: [ctx-snip: Read a.go cleared (2,000 tokens); stale — re-run]\n</ctxkit-summary>`, 45491, true},
		{`<ctxkit-summary messages=\"3\" tokens=\"900\" backend=\"local\">[ctx-trim: the 2 earlier messages of this conversation were dropped to fit the context window (500 tokens)]`, 900, true},
		{`[ctx-snip: Read a.go cleared (2,000 tokens); stale — re-run]`, 2000, false},
		{`no marker`, 0, false},
	} {
		n, messages := markerWas(c.text)
		if n != c.want || messages != c.messages {
			t.Errorf("markerWas(%.40q) = %d, %v; want %d, %v", c.text, n, messages, c.want, c.messages)
		}
	}
}

// Counts.Removed says what markers in a message stand for beyond what it now holds.
func TestCountsRemoved(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"[ctx-snip: Read cleared (5,000 tokens); stale — re-run]"}]}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := tokens.New("estimate")
	n := Of(tr, c, false).Counts()
	removed := n.Removed()
	if removed[0] != 0 || removed[1] != 0 {
		t.Errorf("Removed = %v: only the cleared result stands for more", removed)
	}
	if want := 5000 - n.Blocks[2][0]; removed[2] != want {
		t.Errorf("Removed[2] = %d, want %d", removed[2], want)
	}
}

// TestMarkerWasSnipPlaceholder: ctx-snip's JSON placeholder is read as the text or its
// literal starts with it, escaped or not, and not further on, where its syntax does not
// match either.
func TestMarkerWasSnipPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{`{"ctx_snip":"cleared 1,234 tokens"}`, 1234},
		{`"{\"ctx_snip\":\"cleared 56 tokens\"}"`, 56},
		{`"{"ctx_snip":"cleared 7 tokens"}"`, 7},
		{`see {"ctx_snip":"cleared 99 tokens"}`, 0},
		{`ctx_snip`, 0},
		{``, 0},
	} {
		if n, _ := markerWas(tc.text); n != tc.want {
			t.Errorf("markerWas(%q) = %d, want %d", tc.text, n, tc.want)
		}
	}
}
