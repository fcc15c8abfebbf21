package count

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

// A generated Codex rollout has several user turns, each with encrypted reasoning, and
// token_count events recording model_context_window 258,400. ctx-count prices the
// encrypted reasoning of turns before the newest user message at nothing, the newest
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
	stale, current := 0, 0
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if b.Type != "encrypted_content" {
				continue
			}
			if mi < last {
				stale += tokens.EncryptedTokens(b.Encrypted)
			} else {
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
	c, _ := tokens.New("o200k")
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
