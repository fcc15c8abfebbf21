package testgen

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"strings"
	"testing"
)

func generate(t testing.TB, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Generate(&buf, o); err != nil {
		t.Fatalf("Generate(%+v): %v", o, err)
	}
	return buf.Bytes()
}

func isJSONL(format string) bool { return format == "claude-code" || format == "codex" }

// records decodes a document into its top-level value (JSON) or its lines (JSONL).
func records(t *testing.T, format string, doc []byte) []map[string]any {
	t.Helper()
	if format == "cline" { // a bare array of messages
		var v []any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatalf("%s: not valid JSON: %v", format, err)
		}
		return []map[string]any{{"messages": v}}
	}
	if !isJSONL(format) {
		var v map[string]any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatalf("%s: not valid JSON: %v", format, err)
		}
		return []map[string]any{v}
	}
	if !bytes.HasSuffix(doc, []byte("\n")) {
		t.Fatalf("%s: JSONL does not end with a newline", format)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: not a JSON object: %v", format, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFormatsParseAndSize(t *testing.T) {
	for _, f := range Formats {
		for _, size := range []int{100 << 10, 2 << 20} {
			t.Run(fmt.Sprintf("%s/%d", f, size), func(t *testing.T) {
				doc := generate(t, Options{Format: f, Size: size, Seed: 7, Images: true})
				records(t, f, doc)
				if d := float64(len(doc)-size) / float64(size); d < -0.10 || d > 0.10 {
					t.Errorf("size %d, want %d ±10%% (off by %.1f%%)", len(doc), size, d*100)
				}
			})
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, f := range Formats {
		o := Options{Format: f, Size: 300 << 10, Seed: 42, Images: true}
		a, b := generate(t, o), generate(t, o)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs with the same options differ", f)
		}
		o.Seed = 43
		if bytes.Equal(a, generate(t, o)) {
			t.Errorf("%s: seeds 42 and 43 give the same document", f)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Generate(&bytes.Buffer{}, Options{Format: "gemini", Size: 1000}); err == nil {
		t.Fatal("want an error for an unknown format")
	}
}

// pairs returns, in document order, tool-call ids and result ids.
func pairs(t *testing.T, format string, recs []map[string]any) (calls, results []string, errs int) {
	t.Helper()
	blocks := func(content any) []map[string]any {
		var out []map[string]any
		if list, ok := content.([]any); ok {
			for _, b := range list {
				out = append(out, b.(map[string]any))
			}
		}
		return out
	}
	anthropic := func(msg map[string]any) {
		for _, b := range blocks(msg["content"]) {
			switch b["type"] {
			case "tool_use":
				calls = append(calls, b["id"].(string))
			case "tool_result":
				results = append(results, b["tool_use_id"].(string))
				if b["is_error"] == true {
					errs++
				}
			}
		}
	}
	item := func(it map[string]any) {
		switch it["type"] {
		case "function_call":
			calls = append(calls, it["call_id"].(string))
			var args map[string]any
			if err := json.Unmarshal([]byte(it["arguments"].(string)), &args); err != nil {
				t.Fatalf("arguments are not JSON: %v", err)
			}
		case "function_call_output":
			results = append(results, it["call_id"].(string))
			out := it["output"].(string)
			if format == "codex" {
				var v struct {
					Output   string
					Metadata struct {
						ExitCode int `json:"exit_code"`
					}
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("codex output is not JSON in a string: %v", err)
				}
				if v.Metadata.ExitCode != 0 {
					errs++
				}
			} else if strings.HasPrefix(out, "Exit code") || strings.HasPrefix(out, "Error:") {
				errs++
			}
		}
	}
	switch format {
	case "anthropic":
		for _, m := range recs[0]["messages"].([]any) {
			anthropic(m.(map[string]any))
		}
	case "claude-code":
		for _, r := range recs {
			if m, ok := r["message"].(map[string]any); ok {
				anthropic(m)
			}
		}
	case "cline":
		// Results are user texts labelled with the call; they answer the calls of the
		// message before them in order.
		var waiting []string
		for _, m := range recs[0]["messages"].([]any) {
			msg := m.(map[string]any)
			if msg["role"] == "assistant" {
				for _, b := range blocks(msg["content"]) {
					if b["type"] == "tool_use" {
						calls = append(calls, b["id"].(string))
						waiting = append(waiting, b["id"].(string))
					}
				}
				continue
			}
			for _, b := range blocks(msg["content"]) {
				text, _ := b["text"].(string)
				head, body, ok := strings.Cut(text, "] Result:\n")
				if !ok || !strings.HasPrefix(head, "[") || strings.HasPrefix(head, "[attempt_completion") {
					continue
				}
				results = append(results, waiting[0])
				waiting = waiting[1:]
				if strings.HasPrefix(body, "The tool execution failed") || strings.HasPrefix(body, "The user denied") {
					errs++
				}
			}
		}
	case "openai":
		for _, m := range recs[0]["messages"].([]any) {
			msg := m.(map[string]any)
			if tc, ok := msg["tool_calls"].([]any); ok {
				for _, c := range tc {
					fn := c.(map[string]any)["function"].(map[string]any)
					var args map[string]any
					if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); err != nil {
						t.Fatalf("arguments are not JSON: %v", err)
					}
					calls = append(calls, c.(map[string]any)["id"].(string))
				}
			}
			if msg["role"] == "tool" {
				results = append(results, msg["tool_call_id"].(string))
				if strings.HasPrefix(msg["content"].(string), "Exit code") || strings.HasPrefix(msg["content"].(string), "Error:") {
					errs++
				}
			}
		}
	case "responses":
		for _, it := range recs[0]["input"].([]any) {
			item(it.(map[string]any))
		}
	case "codex":
		for _, r := range recs {
			if r["type"] == "response_item" {
				item(r["payload"].(map[string]any))
			}
		}
	}
	return calls, results, errs
}

func TestToolPairs(t *testing.T) {
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			recs := records(t, f, generate(t, Options{Format: f, Size: 200 << 10, Seed: 3, Images: true}))
			calls, results, errs := pairs(t, f, recs)
			if len(calls) < 10 {
				t.Fatalf("only %d tool calls in 200 KB", len(calls))
			}
			seen := map[string]int{}
			for i, id := range calls {
				if _, dup := seen[id]; dup {
					t.Fatalf("call id %q used twice", id)
				}
				seen[id] = i
			}
			if len(results) != len(calls) {
				t.Fatalf("%d calls but %d results", len(calls), len(results))
			}
			done := map[string]bool{}
			for _, id := range results {
				if _, ok := seen[id]; !ok || done[id] {
					t.Fatalf("result %q has no call or is repeated", id)
				}
				done[id] = true
			}
			if errs == 0 {
				t.Error("no error result")
			}
		})
	}
}

func TestClaudeCodeChain(t *testing.T) {
	recs := records(t, "claude-code", generate(t, Options{Format: "claude-code", Size: 1 << 20, Seed: 5, Images: true}))
	if recs[0]["type"] != "permission-mode" || recs[1]["type"] != "file-history-snapshot" {
		t.Fatalf("first records are %v, %v", recs[0]["type"], recs[1]["type"])
	}
	prev := ""
	uuids := map[string]bool{}
	kinds := map[string]int{}
	lastMsgID := ""
	closed := map[string]bool{}
	for i, r := range recs {
		kinds[fmt.Sprint(r["type"])]++
		u, ok := r["uuid"].(string)
		if !ok {
			continue
		}
		if uuids[u] {
			t.Fatalf("record %d: uuid %s repeated", i, u)
		}
		uuids[u] = true
		p, _ := r["parentUuid"].(string)
		if p != prev {
			t.Fatalf("record %d: parentUuid %q, want %q (previous record)", i, p, prev)
		}
		prev = u
		if r["type"] == "assistant" {
			m := r["message"].(map[string]any)
			if n := len(m["content"].([]any)); n != 1 {
				t.Fatalf("record %d: %d content blocks, want one per line", i, n)
			}
			id := m["id"].(string)
			if id != lastMsgID {
				if closed[id] {
					t.Fatalf("record %d: message %s continues after another message", i, id)
				}
				closed[lastMsgID] = true
				lastMsgID = id
			}
		}
		if r["type"] == "user" {
			if _, ok := r["message"].(map[string]any)["content"].([]any); ok {
				if _, ok := r["toolUseResult"]; !ok && strings.Contains(fmt.Sprint(r["message"]), "tool_result") {
					t.Fatalf("record %d: tool result without toolUseResult", i)
				}
			}
		}
	}
	if recs[2]["parentUuid"] != nil {
		t.Errorf("first chained record has parentUuid %v, want null", recs[2]["parentUuid"])
	}
	for _, k := range []string{"user", "assistant", "system", "attachment"} {
		if kinds[k] == 0 {
			t.Errorf("no %q records", k)
		}
	}
}

// TestFeatures checks that even a small document holds what the tools are tested against.
func TestFeatures(t *testing.T) {
	for _, f := range Formats {
		doc := string(generate(t, Options{Format: f, Size: 100 << 10, Seed: 1, Images: true}))
		want := []string{"handler.go", "该函数|请|缓存|部署|日志|このモジュール|エラー|設定|キャッシュ"}
		switch f {
		case "anthropic", "claude-code":
			want = append(want, `"type":"thinking"`, `"is_error":true`, `"type":"image"`, `"name":"Grep"`, `"name":"Edit"`)
		case "openai":
			want = append(want, `"image_url"`, `"role":"tool"`)
		case "responses", "codex":
			want = append(want, `"type":"reasoning"`, `"input_image"`, `"encrypted_content"`)
		case "cline":
			want = append(want, `[read_file for '`, `[execute_command for '`, `<environment_details>`, `The user denied this operation.`)
		}
		for _, w := range want {
			found := false
			for _, alt := range strings.Split(w, "|") {
				found = found || strings.Contains(doc, alt)
			}
			if !found {
				t.Errorf("%s: no %s", f, w)
			}
		}
		if n := strings.Count(doc, "handler.go"); n < 3 {
			t.Errorf("%s: handler.go mentioned %d times, want a repeated read", f, n)
		}
	}
}

func TestCodexTokenCountAndCompaction(t *testing.T) {
	recs := records(t, "codex", generate(t, Options{Format: "codex", Size: 6 << 20, Seed: 2}))
	if recs[0]["type"] != "session_meta" {
		t.Fatalf("first line is %v", recs[0]["type"])
	}
	compacted, counts := 0, 0
	prevTotal := -1.0
	for _, r := range recs {
		p := r["payload"].(map[string]any)
		switch {
		case r["type"] == "compacted":
			compacted++
			if len(p["replacement_history"].([]any)) == 0 {
				t.Error("compacted line has no replacement_history")
			}
		case r["type"] == "event_msg" && p["type"] == "token_count":
			counts++
			info := p["info"].(map[string]any)
			total := info["total_token_usage"].(map[string]any)["total_tokens"].(float64)
			if total < prevTotal {
				t.Fatalf("total_token_usage went down: %v after %v", total, prevTotal)
			}
			prevTotal = total
			if info["model_context_window"] == nil || info["last_token_usage"] == nil {
				t.Fatal("token_count without last_token_usage or model_context_window")
			}
		}
	}
	if compacted != 1 || counts == 0 {
		t.Errorf("%d compacted lines and %d token counts, want 1 and some", compacted, counts)
	}
}

func TestImagesAreRealPNGs(t *testing.T) {
	doc := generate(t, Options{Format: "anthropic", Size: 400 << 10, Seed: 9, Images: true})
	var v struct {
		Messages []struct {
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if src, ok := x["source"].(map[string]any); ok && x["type"] == "image" {
				raw, err := base64.StdEncoding.DecodeString(src["data"].(string))
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := png.DecodeConfig(bytes.NewReader(raw))
				if err != nil || cfg.Width == 0 {
					t.Fatalf("image is not a PNG: %v", err)
				}
				n++
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, m := range v.Messages {
		var c any
		_ = json.Unmarshal(m.Content, &c)
		walk(c)
	}
	if n == 0 {
		t.Fatal("no images")
	}
}

func TestAppendStrRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "<a href=\"x\">&amp;</a>",
		"ctl \x00\x01\x1f\t\n\r\b\f", "该函数 → ✓ \u2028 \u2029", strings.Repeat("x\ny", 1000)} {
		var got string
		if err := json.Unmarshal(appendStr(nil, s), &got); err != nil || got != s {
			t.Errorf("appendStr(%q) decodes to %q, %v", s, got, err)
		}
	}
	if s := string(appendStr(nil, "<&>")); s != `"<&>"` {
		t.Errorf("appendStr escapes HTML: %s", s)
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) {
			b.SetBytes(10 << 20)
			for i := 0; i < b.N; i++ {
				if err := Generate(discard{}, Options{Format: f, Size: 10 << 20, Seed: int64(i), Images: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A Version session has the shapes of its agent version: Claude Code 2.1 stores thinking
// empty with its signature, writes attachment records and compacts; Codex 0.114 writes
// each request's token_count again after the tool outputs and compacts. Its prompts grow
// with what it sends, and drop at the compaction (and, for Codex, at a new user turn).
func TestVersionSessions(t *testing.T) {
	cc := string(generate(t, Options{Format: "claude-code", Version: "2.1", Size: 400 << 10, Seed: 3}))
	for _, want := range []string{`"version":"2.1.114"`, `"model":"claude-opus-4-7"`, `"thinking":"","signature":"`, `"type":"skill_listing"`,
		`"type":"hook_additional_context"`, `"hookEvent":"UserPromptSubmit"`, `"subtype":"compact_boundary"`, `"isCompactSummary":true`} {
		if !strings.Contains(cc, want) {
			t.Errorf("claude-code 2.1: no %s", want)
		}
	}
	if strings.Contains(cc, `"thinking":"The user`) {
		t.Error("claude-code 2.1: thinking stored with its text")
	}
	prompts := func(recs []map[string]any, prompt func(map[string]any) (float64, bool)) []float64 {
		var out []float64
		for _, r := range recs {
			if p, ok := prompt(r); ok {
				out = append(out, p)
			}
		}
		return out
	}
	ccPrompts := prompts(records(t, "claude-code", []byte(cc)), func(r map[string]any) (float64, bool) {
		m, ok := r["message"].(map[string]any)
		if !ok || r["type"] != "assistant" {
			return 0, false
		}
		u := m["usage"].(map[string]any)
		return u["input_tokens"].(float64) + u["cache_read_input_tokens"].(float64) + u["cache_creation_input_tokens"].(float64), true
	})
	drops := 0
	for i := 1; i < len(ccPrompts); i++ {
		if ccPrompts[i] < ccPrompts[i-1] {
			drops++
		}
	}
	if ccPrompts[0] < 18000 || drops != 1 {
		t.Errorf("claude-code 2.1: first prompt %v (want the hidden part's 18K and more), %d drops (want the compaction's)", ccPrompts[0], drops)
	}

	cx := records(t, "codex", generate(t, Options{Format: "codex", Version: "0.114", Size: 400 << 10, Seed: 3}))
	repeats, compacted, counts := 0, 0, 0
	var prev string
	for _, r := range cx {
		p := r["payload"].(map[string]any)
		switch {
		case r["type"] == "compacted":
			compacted++
		case r["type"] == "event_msg" && p["type"] == "token_count":
			counts++
			b, _ := json.Marshal(p["info"].(map[string]any)["total_token_usage"])
			if string(b) == prev {
				repeats++
			}
			prev = string(b)
		}
	}
	if compacted != 1 || repeats == 0 || repeats >= counts {
		t.Errorf("codex 0.114: %d compactions, %d of %d token counts repeated", compacted, repeats, counts)
	}

	for _, o := range []Options{{Format: "codex", Version: "2.1"}, {Format: "claude-code", Version: "9"}, {Format: "anthropic", Version: "2.1"}} {
		if err := Generate(io.Discard, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
