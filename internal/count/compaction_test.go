package count

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

// Right after a compaction the conversation records no figure yet; the part no record
// holds (system prompt, tools) is what it was before it, not nothing: without it the
// headline was the summary alone, 87-97% short.
func TestHiddenCarriesAcrossACompaction(t *testing.T) {
	usage := `"usage":{"input_tokens":6,"cache_creation_input_tokens":29994,"cache_read_input_tokens":0,"output_tokens":10}`
	pre := []string{
		ccLine("user", "u1", "", `"message":{"role":"user","content":"Plan the migration."}`),
		ccLine("assistant", "a1", "u1", `"message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Here is the plan."}],`+usage+`}`),
		ccLine("user", "u2", "a1", `"message":{"role":"user","content":"`+strings.Repeat("Now carry it out, step by step. ", 200)+`"}`),
	}
	before := countJSON(t, strings.Join(pre, "\n")+"\n")
	if before.Hidden == nil || before.Hidden.AcrossCompaction {
		t.Fatalf("before the compaction: hidden %+v", before.Hidden)
	}
	for _, boundary := range []string{
		`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"u2","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":31000}}`,
		`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"u2","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":31000,"preservedSegment":{"headUuid":"u2","anchorUuid":"b1","tailUuid":"u2"}}}`,
	} {
		post := append(append([]string{}, pre...), boundary,
			`{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation: the user asked for a migration plan."}}`,
			ccLine("user", "u3", "s1", `"message":{"role":"user","content":"Go on."}`))
		after := countJSON(t, strings.Join(post, "\n")+"\n")
		if after.Hidden == nil || !after.Hidden.AcrossCompaction || after.Hidden.Tokens != before.Hidden.Tokens {
			t.Errorf("after the compaction: hidden %+v, want %d carried across it", after.Hidden, before.Hidden.Tokens)
			continue
		}
		if after.Tokens != after.Counted+before.Hidden.Tokens || after.Anchored != nil {
			t.Errorf("after the compaction: %d tokens, counted %d, anchored %+v", after.Tokens, after.Counted, after.Anchored)
		}
		var b bytes.Buffer
		Render(&b, &after, false, 200)
		if !strings.Contains(b.String(), "from recorded usage before the compaction") {
			t.Errorf("the picture does not say where the hidden part comes from:\n%s", b.String())
		}
	}
}

// A Codex rollout read from a file is streamed without the records its last compaction
// dropped, but for those of the conversation it replaced, which carry the hidden part
// across it: the same as reading it whole.
func TestCodexHiddenCarriesAcrossACompactionStreamed(t *testing.T) {
	item := func(role, text string) string {
		kind := "input_text"
		if role == "assistant" {
			kind = "output_text"
		}
		return `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"` + role + `","content":[{"type":"` + kind + `","text":"` + text + `"}]}}`
	}
	count := func(in int) string {
		return `{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":` + itoa(in) + `,"cached_input_tokens":0,"output_tokens":20},"model_context_window":272000}}}`
	}
	compacted := `{"timestamp":"t","type":"compacted","payload":{"message":"","replacement_history":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"SUMMARY of the work so far"}]}]}}`
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"s","instructions":"be careful"}}`,
		item("user", "first "+strings.Repeat("words ", 300)), item("assistant", "ok"), count(9000),
		compacted,
		item("user", "second "+strings.Repeat("words ", 300)), item("assistant", "ok again"), count(7000),
		compacted,
		item("user", "third"),
	}
	doc := strings.Join(lines, "\n") + "\n"
	whole := countJSON(t, doc)
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"--json", path}, nil, &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var streamed Report
	if err := json.Unmarshal(out.Bytes(), &streamed); err != nil {
		t.Fatal(err)
	}
	if whole.Hidden == nil || !whole.Hidden.AcrossCompaction || whole.Hidden.Tokens < 6000 {
		t.Fatalf("whole: hidden %+v, want the 7,000-token figure's carried across the compaction", whole.Hidden)
	}
	if streamed.Tokens != whole.Tokens || streamed.Hidden == nil || *streamed.Hidden != *whole.Hidden {
		t.Errorf("streamed from a file: %d tokens, hidden %+v; from stdin: %d, %+v", streamed.Tokens, streamed.Hidden, whole.Tokens, whole.Hidden)
	}
	c, _ := tokens.New("o200k")
	if tl := measure.Of(parse(t, doc), c, false); tl.Total() != whole.Tokens || tl.Hidden != whole.Hidden.Tokens || !tl.HiddenAcross {
		t.Errorf("parsed whole: total %d, hidden %d (across %v); streamed: %d, %d", tl.Total(), tl.Hidden, tl.HiddenAcross, whole.Tokens, whole.Hidden.Tokens)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
