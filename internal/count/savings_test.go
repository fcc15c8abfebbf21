package count

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --savings says a tier acts only where it would, run with the same flags: above its
// trigger, ctx-snip still clears nothing that would not repay the prompt cache (or save
// less than --clear-at-least). The
// report said "acts" by the trigger alone (ctx-snip marked acting, where it cleared
// nothing), and says so still without --savings, which runs no tier.
func TestSavingsActsAsTheTierDecides(t *testing.T) {
	src := "package a\n\n"
	for i := range 40 {
		src += fmt.Sprintf("func F%d() int { return %d }\n", i, i)
	}
	read := func(id, content string) string {
		call, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": "/repo/a.go"}}}})
		result, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}})
		return string(call) + "," + string(result)
	}
	report := strings.Repeat("The service logs show intermittent failures in the payment queue. ", 400)
	doc := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Here is the incident report: ` + report + `"},` +
		read("t1", src) + "," + read("t2", strings.Replace(src, "return 1 ", "return 9 ", 1)) +
		`,{"role":"assistant","content":"a.go changed."},{"role":"user","content":"thanks, what next?"}]}`
	path := filepath.Join(t.TempDir(), "chat.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	snipOf := func(args ...string) Tier {
		t.Helper()
		var out, errs bytes.Buffer
		env := func(k string) string { return map[string]string{"CTX_CACHE_DIR": "off"}[k] }
		if code := Main(append(args, "--json", "--window", "10k", "--store", filepath.Join(t.TempDir(), "st"), path), nil, &out, &errs, env); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		for _, tier := range r.Tiers {
			if tier.Tool == "ctx-snip" {
				return tier
			}
		}
		t.Fatal("no ctx-snip in the report")
		return Tier{}
	}
	if tier := snipOf(); !tier.Acts {
		t.Fatalf("without --savings, over its trigger: %+v", tier)
	}
	tier := snipOf("--savings")
	if tier.Acts || !strings.Contains(tier.Reason, "run with the same flags, clearing ") || *tier.Saves != 0 {
		t.Errorf("--savings: acts %v, %q, saves %d; ctx-snip clears nothing here, too little to repay the cache", tier.Acts, tier.Reason, *tier.Saves)
	}
}
