package count

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A generated Codex rollout has several user turns, each with encrypted reasoning, and
// token_count events recording model_context_window 258,400. ctx-count prices the
// reasoning items (payload and summary) of turns before the newest user message at nothing, the newest
// turn's at its decoded size, and measures against the recorded window whole.
func TestCodexReasoningAndRecordedWindow(t *testing.T) {
	var doc bytes.Buffer
	if err := testgen.Generate(&doc, testgen.Options{Format: "codex", Size: 200 << 10, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	tr := parse(t, doc.String())
	last := -1
	for mi := range tr.Messages {
		if tr.Messages[mi].Role == "user" {
			last = mi
		}
	}
	c, _ := tokens.New("o200k")
	stale, current := 0, 0
	for mi := range tr.Messages {
		item := false // a reasoning item: its payload and its summary go together
		for _, b := range tr.Messages[mi].Blocks {
			item = item || b.Type == "encrypted_content"
		}
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if !item || b.Kind != transcript.Thinking {
				continue
			}
			if mi < last {
				stale += measure.BlockTokens(tr, b, c)
			} else if b.Type == "encrypted_content" {
				current += tokens.EncryptedTokens(b.Encrypted)
			}
		}
	}
	if stale == 0 || current == 0 {
		t.Fatalf("the sample needs reasoning before and after its last user message (stale %d, current %d)", stale, current)
	}

	var out, errb bytes.Buffer
	code := Main([]string{"--tokenizer", "o200k", "-"}, strings.NewReader(doc.String()), &out, &errb, func(string) string { return "" })
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Window != 258400 || r.Reserve != 0 || r.EffectiveWindow != 258400 {
		t.Errorf("window %d, reserve %d, effective %d; want the recorded 258400 whole", r.Window, r.Reserve, r.EffectiveWindow)
	}

	// The figure is what every block costs, stale reasoning excluded.
	all := 0
	for mi := range tr.Messages {
		all += tokens.MessageOverhead("openai")
		for bi := range tr.Messages[mi].Blocks {
			all += measure.BlockTokens(tr, &tr.Messages[mi].Blocks[bi], c)
		}
	}
	all += tokens.ReplyPriming
	if want := all - stale; r.Tokens != want {
		t.Errorf("tokens = %d, want %d (%d counting stale reasoning, %d of it)", r.Tokens, want, all, stale)
	}
	if total := measure.Total(tr, c); total != r.Tokens {
		t.Errorf("Total = %d, report says %d", total, r.Tokens)
	}
	// Tiers read per-block counts: those agree with the total.
	n := measure.CountsOf(tr, c)
	sum := 0
	for _, bs := range n.Blocks {
		for _, v := range bs {
			sum += v
		}
	}
	if sum+len(tr.Messages)*tokens.MessageOverhead("openai")+tokens.ReplyPriming != n.Total {
		t.Errorf("block counts add up to %d, total %d", sum, n.Total)
	}
}

// The first request of a new user turn does not send the reasoning of the turn before it,
// though the newest figure (that turn's last request) holds it: the headline drops it
// with the figure's hidden part left as it was, instead of the hidden part taking it on
// (issue 37: +102% after a turn of heavy reasoning).
func TestCodexTurnDropsTheReasoningTheFigureHolds(t *testing.T) {
	enc := "gAAAAAB" + strings.Repeat("QUJDRA", 16000) // 96 KB: 18,000 tokens of reasoning
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"s","instructions":"be careful"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the handler"}]}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"` + enc + `"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":3000,"cached_input_tokens":0,"output_tokens":18030,"reasoning_output_tokens":18000,"total_tokens":21030},"last_token_usage":{"input_tokens":3000,"cached_input_tokens":0,"output_tokens":18030,"reasoning_output_tokens":18000,"total_tokens":21030},"model_context_window":272000}}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a.go b.go"}}`,
		`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]}}`,
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":24060,"cached_input_tokens":21000,"output_tokens":18040,"reasoning_output_tokens":18000,"total_tokens":42100},"last_token_usage":{"input_tokens":21060,"cached_input_tokens":21000,"output_tokens":10,"reasoning_output_tokens":0,"total_tokens":21070},"model_context_window":272000}}}`,
	}
	next := `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks, now the tests"}]}}`
	report := func(doc string) Report {
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
	before := report(strings.Join(lines, "\n") + "\n")
	after := report(strings.Join(append(lines, next), "\n") + "\n")
	stale := tokens.EncryptedTokens(len(enc))
	if before.Tokens != 21070 {
		t.Errorf("at the turn's end the headline is %d, want the recorded 21,070", before.Tokens)
	}
	user := after.Messages[len(after.Messages)-1].Tokens
	if want := before.Tokens - stale + user; after.Tokens != want {
		t.Errorf("first request of the next turn: %d, want %d (the figure %d less the reasoning no longer sent %d plus the user message %d)",
			after.Tokens, want, before.Tokens, stale, user)
	}
	if after.Hidden == nil || before.Hidden == nil || after.Hidden.Tokens != before.Hidden.Tokens {
		t.Errorf("hidden part %+v, then %+v: want it unchanged by the turn", before.Hidden, after.Hidden)
	}
	if a := after.Anchored; a == nil || a.StaleReasoning != stale || a.Tokens != after.Tokens {
		t.Errorf("anchored %+v: want stale_reasoning %d and tokens %d", a, stale, after.Tokens)
	}
}
