package transcript

import (
	"strings"
	"testing"
)

func ccUsageJSON(prompt int) string {
	return `,"usage":{"input_tokens":1,"cache_read_input_tokens":` + itoa(prompt-1) + `,"cache_creation_input_tokens":0,"output_tokens":10}`
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// A compaction leaves the conversation it replaced as Prior: the chain its boundary names
// as its logical parent, up to its newest figure. The conversation since records none.
func TestClaudeCodePrior(t *testing.T) {
	lines := []string{
		ccLineJSON("user", "u1", "", `{"role":"user","content":"first"}`, ""),
		ccLineJSON("assistant", "a1", "u1", `{"id":"m1","role":"assistant","content":[{"type":"text","text":"one"}]`+ccUsageJSON(20000)+`}`, ""),
		ccLineJSON("user", "u2", "a1", `{"role":"user","content":"second"}`, ""),
		`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"u2","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":20100}}`,
		ccLineJSON("user", "s1", "b1", `{"role":"user","content":"This session is being continued..."}`, `,"isCompactSummary":true`),
		ccLineJSON("user", "u3", "s1", `{"role":"user","content":"go on"}`, ""),
	}
	tr := mustParse(t, strings.Join(lines, "\n")+"\n", Options{})
	if got := shape(tr); got != "user:text|user:text" || len(tr.Usage) != 0 {
		t.Fatalf("conversation %s, usage %+v", got, tr.Usage)
	}
	pr := tr.Prior
	if pr == nil || len(pr.Messages) != 2 || pr.Usage.After != 1 || pr.Usage.Input != 20000 || len(pr.Messages[1].Blocks) != 1 {
		t.Fatalf("prior %+v", pr)
	}
}

// The newer compaction keeps some messages whole (compactMetadata.preservedSegment): they
// sit before the boundary in the file, their head hanging off a message it replaced, and
// are read as hanging off the anchor, as Claude Code relinks them; the figures they carry
// are from before the compaction and are not the conversation's. The prior conversation
// is read without that relink.
func TestClaudeCodePreservedSegment(t *testing.T) {
	lines := []string{
		ccLineJSON("user", "u1", "", `{"role":"user","content":"first"}`, ""),
		ccLineJSON("assistant", "a1", "u1", `{"id":"m1","role":"assistant","content":[{"type":"text","text":"one"}]`+ccUsageJSON(20000)+`}`, ""),
		ccLineJSON("user", "u2", "a1", `{"role":"user","content":"second"}`, ""),
		ccLineJSON("assistant", "a2", "u2", `{"id":"m2","role":"assistant","content":[{"type":"text","text":"two"}]`+ccUsageJSON(21000)+`}`, ""),
		ccLineJSON("user", "u3", "a2", `{"role":"user","content":"third"}`, ""),
		`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"u3","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":21100,"preservedSegment":{"headUuid":"u2","anchorUuid":"s1","tailUuid":"u3"}}}`,
		ccLineJSON("user", "s1", "b1", `{"role":"user","content":"Summary of the first exchange."}`, `,"isCompactSummary":true`),
		ccLineJSON("assistant", "a3", "u3", `{"id":"m3","role":"assistant","content":[{"type":"text","text":"three"}]`+ccUsageJSON(3000)+`}`, ""),
	}
	tr := mustParse(t, strings.Join(lines, "\n")+"\n", Options{})
	var texts []string
	for i := range tr.Messages {
		texts = append(texts, tr.BodyText(&tr.Messages[i].Blocks[0]))
	}
	if got := strings.Join(texts, "|"); got != "second|two|third|Summary of the first exchange.|three" {
		t.Errorf("conversation %s: want the preserved segment, the summary and the reply (file order)", got)
	}
	if len(tr.Usage) != 1 || tr.Usage[0].Input != 3000 || tr.Usage[0].After != 4 {
		t.Errorf("usage %+v: want only the figure after the compaction", tr.Usage)
	}
	if tr.Records[0].Left != Compacted || tr.Records[1].Left != Compacted {
		t.Errorf("the first exchange: %v, %v; want compacted", tr.Records[0].Left, tr.Records[1].Left)
	}
	if pr := tr.Prior; pr == nil || pr.Usage.Input != 21000 || len(pr.Messages) != 4 {
		t.Errorf("prior %+v: want the chain up to the figure of 21,000", pr)
	}
	// Right after the compaction, the summary is the newest message line: the
	// conversation goes on from the segment's tail all the same.
	tr = mustParse(t, strings.Join(lines[:len(lines)-1], "\n")+"\n", Options{})
	texts = texts[:0]
	for i := range tr.Messages {
		texts = append(texts, tr.BodyText(&tr.Messages[i].Blocks[0]))
	}
	if got := strings.Join(texts, "|"); got != "second|two|third|Summary of the first exchange." || len(tr.Usage) != 0 || tr.Prior == nil {
		t.Errorf("right after the compaction: conversation %s, usage %+v, prior %v", got, tr.Usage, tr.Prior != nil)
	}
}

// A Codex compaction leaves the conversation it replaced, up to its newest figure.
func TestCodexPrior(t *testing.T) {
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"s","instructions":"be careful"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":9000,"cached_input_tokens":0,"output_tokens":50},"model_context_window":272000}}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}}`,
		`{"timestamp":"t","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"summary"}]}]}}`,
	}
	tr := mustParse(t, strings.Join(lines, "\n")+"\n", Options{})
	if len(tr.Usage) != 0 {
		t.Fatalf("usage %+v", tr.Usage)
	}
	if pr := tr.Prior; pr == nil || pr.Usage.Input != 9000 || len(pr.Messages) != 3 || pr.Usage.After != 2 || !pr.Messages[0].Header {
		t.Fatalf("prior %+v", pr)
	}
}
