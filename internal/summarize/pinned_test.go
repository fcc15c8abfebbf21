package summarize

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A Codex compacted record drops everything before it but the session's instructions:
// the developer messages before the summarized part open its replacement history,
// verbatim, as Codex's own compaction opens it with its initial context, and stay first.
func TestCodexCompactionKeepsInstructions(t *testing.T) {
	dev := `{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>"}]}`
	var lines []string
	add := func(typ, payload string) {
		lines = append(lines, `{"timestamp":"2026-03-01T10:00:00.000Z","type":"`+typ+`","payload":`+payload+`}`)
	}
	add("session_meta", `{"id":"s","cwd":"/repo","base_instructions":{"text":"You are Codex."}}`)
	add("response_item", dev)
	for i := range 6 {
		add("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"request `+strings.Repeat("x", 200)+string(rune('a'+i))+`"}]}`)
		add("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done `+strings.Repeat("y", 400)+`"}]}`)
	}
	in := []byte(strings.Join(lines, "\n") + "\n")
	out, sp, _, err := summarizeDoc("codex", in, 0, true)
	if err != nil || len(sp.Summarized) == 0 {
		t.Fatalf("summarize: %v, %d summarized", err, len(sp.Summarized))
	}
	tr, err := transcript.Parse(out, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Messages[1].Role != "developer" || tr.Slice(tr.Messages[1].Span) != dev || !tr.Messages[2].Summary {
		t.Errorf("the compacted conversation opens with %s %q, then a summary %v; want the developer message as it was, then the summary",
			tr.Messages[1].Role, tr.Slice(tr.Messages[1].Span), tr.Messages[2].Summary)
	}
}
