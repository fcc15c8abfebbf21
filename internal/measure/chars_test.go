package measure

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestResultCharsForTheReport: a result's characters are counted for ctx-count's report
// (previews) and only for it; the tokens are the same either way. Every other tier's
// count (ctx-budget's utilization, the pipeline's) read each result's characters for
// nothing: a fifth of ctx-budget's CPU on a 10 MB Anthropic request.
func TestResultCharsForTheReport(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"list it"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"h\u00e9llo w\u00f6rld"}]}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o200k, err := tokens.New("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []tokens.Counter{tokens.Claude(""), o200k} {
		report, tier := Of(tr, c, true), Of(tr, c, false)
		if got := report.Messages[2].Blocks[0].Chars; got != 11 {
			t.Errorf("%s, the report's count: the result has %d characters, want 11", c.Name(), got)
		}
		if got := tier.Messages[2].Blocks[0].Chars; got != 0 {
			t.Errorf("%s, a tier's count: the result's characters counted (%d)", c.Name(), got)
		}
		if report.Total() != tier.Total() {
			t.Errorf("%s: %d tokens for the report, %d for a tier", c.Name(), report.Total(), tier.Total())
		}
	}
}
