package count

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
)

func ccLine(typ, uuid, parent, rest string) string {
	return `{"parentUuid":"` + parent + `","isSidechain":false,"type":"` + typ + `","uuid":"` + uuid + `","timestamp":"2026-04-18T13:19:11Z",` + rest + `}`
}

func countJSON(t *testing.T, doc string) Report {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"--json", "-"}, strings.NewReader(doc), &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Thinking that Claude Code stores empty (only its signature) is read and billed by the
// model: priced from the signature, it counts in the reply, and so in the figure the
// reply is sent back with where the log recorded its output_tokens as the stream began
// (1 token here), and in the picture's thinking.
func TestThinkingStoredEmptyCounts(t *testing.T) {
	sig := strings.Repeat("Ab+/", 2065) // 8,260 bytes: 8,000 beyond the header
	usage := `"usage":{"input_tokens":6,"cache_creation_input_tokens":19994,"cache_read_input_tokens":0,"output_tokens":1}`
	doc := strings.Join([]string{
		ccLine("user", "u1", "", `"message":{"role":"user","content":"Plan the migration."}`),
		ccLine("assistant", "a1", "u1", `"message":{"id":"m1","role":"assistant","model":"claude-opus-4-7","content":[{"type":"thinking","thinking":"","signature":"`+sig+`"}],`+usage+`}`),
		ccLine("assistant", "a2", "a1", `"message":{"id":"m1","role":"assistant","model":"claude-opus-4-7","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],`+usage+`}`),
		ccLine("user", "u2", "a2", `"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go b.go"}]}`),
	}, "\n") + "\n"
	r := countJSON(t, doc)
	thinking := tokens.SignatureTokens(tokens.SignatureRate("claude-opus-4-7"), len(sig))
	if thinking != 2080 {
		t.Fatalf("the signature prices at %d tokens, want 2,080 (0.26 a byte beyond 260)", thinking)
	}
	if r.Categories.Thinking != thinking || r.ByKind["thinking"] != thinking {
		t.Errorf("thinking %d in the picture, %d by kind; want %d", r.Categories.Thinking, r.ByKind["thinking"], thinking)
	}
	reply := r.Messages[1].Tokens
	if reply < thinking {
		t.Errorf("the reply counts %d, less than its thinking %d", reply, thinking)
	}
	if want := 20000 + reply + r.Messages[2].Tokens; r.Tokens != want {
		t.Errorf("headline %d, want the prompt recorded 20,000 + the reply as sent back %d + the result %d = %d", r.Tokens, reply, r.Messages[2].Tokens, want)
	}
}

// Claude Code's attachment records put text into the prompt: what comes after the newest
// figure is counted on top of it, and what came before it is no longer taken for the
// hidden part; the picture shows them as their own part.
func TestAttachmentsCount(t *testing.T) {
	listing := strings.Repeat("- a-skill: does one thing well when asked to. ", 60)
	file := strings.Repeat("func f() { return nil }\n", 150)
	usage := `"usage":{"input_tokens":6,"cache_creation_input_tokens":19994,"cache_read_input_tokens":0,"output_tokens":12}`
	lines := []string{
		ccLine("user", "u1", "", `"message":{"role":"user","content":"Look at b.go"}`),
		ccLine("attachment", "x1", "u1", `"attachment":{"type":"skill_listing","content":"`+listing+`","skillCount":60,"isInitial":true}`),
		ccLine("assistant", "a1", "x1", `"message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Reading it."}],`+usage+`}`),
		ccLine("user", "u2", "a1", `"message":{"role":"user","content":"and this one"}`),
	}
	before := countJSON(t, strings.Join(lines, "\n")+"\n")
	lines = append(lines, ccLine("attachment", "x2", "u2", `"attachment":{"type":"file","filename":"b.go","content":{"type":"text","file":{"filePath":"/r/b.go","content":"`+strings.ReplaceAll(file, "\n", `\n`)+`","numLines":150}}}`),
		ccLine("attachment", "x3", "x2", `"attachment":{"type":"hook_success","hookName":"PostToolUse:Read","hookEvent":"PostToolUse","content":"not sent","exitCode":0}`))
	after := countJSON(t, strings.Join(lines, "\n")+"\n")

	c := tokens.Claude("claude-sonnet-4-5-20250929")
	wrap := c.Count("<system-reminder>\n\n</system-reminder>")
	skills, files := c.Count(listing)+wrap, c.Count(file)+wrap
	if before.Categories.Attachments != skills || after.Categories.Attachments != skills+files {
		t.Errorf("attachments %d, then %d; want %d, then %d (the hook's success after a tool call is not sent)",
			before.Categories.Attachments, after.Categories.Attachments, skills, skills+files)
	}
	if after.Tokens != before.Tokens+files {
		t.Errorf("headline %d, then %d with a file attached: want %d more", before.Tokens, after.Tokens, files)
	}
	if before.Hidden == nil || before.Hidden.Tokens+before.Counted != before.Tokens || before.Hidden.Tokens > 20000+12-skills {
		t.Errorf("hidden %+v of %d: the attachment before the figure is counted, not hidden", before.Hidden, before.Tokens)
	}
}
