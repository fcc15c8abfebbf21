package recall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/store"
)

// recall runs ctx-recall in-process.
func recall(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb, func(k string) string {
		if k == "CTX_CACHE_DIR" {
			return "off"
		}
		return ""
	})
	return code, out.String(), errb.String()
}

// storeWith makes a store holding texts, each with an index line as the tiers write it.
func storeWith(t *testing.T, texts ...string) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var hashes []string
	for i, text := range texts {
		h, _, err := st.Put([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		e := store.Entry{Hash: h, Tool: "Bash", ToolCallID: fmt.Sprintf("toolu_%02d", i), Source: "/s/session.jsonl",
			Bytes: len(text), Tokens: len(text) / 4, Tokenizer: "estimate", Time: time.Date(2026, 11, 1, 10, i, 0, 0, time.UTC)}
		if err := st.Append(e); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	return dir, hashes
}

const (
	goCode = "package cfg\n\n// parseConfig reads the file.\nfunc parseConfig(path string) error {\n\treturn nil\n}\n\ntype Options struct {\n\tRetries int\n}\n\nfunc (o *Options) Validate() error {\n\treturn nil\n}\n"
	goTest = "=== RUN   TestRetry\n    retry_test.go:12: backoff 100ms\n--- FAIL: TestRetry (0.00s)\n    retry_test.go:20: got 3 retries, want 5\nFAIL\nFAIL\tgithub.com/x/cfg\t0.01s\n"
	doc    = "# Design\n\nWhy the retry policy.\n\n## Backoff\n\nExponential, capped.\n\n## Limits\n\nFive tries at most.\n"
	object = "{\n  \"name\": \"ctxkit\",\n  \"retry\": {\n    \"max\": 5,\n    \"backoff\": \"100ms\"\n  },\n  \"tags\": [\"a\", \"b\"]\n}\n"
)

func TestSearchRanksWithExcerpts(t *testing.T) {
	dir, hs := storeWith(t, goCode, goTest, doc, object)
	code, out, errs := recall(t, "--store", dir, "parse_config")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := fmt.Sprintf("1 item of 4 stored match “parse_config”:\n1. %s  Bash toolu_00, ~%d tokens, 14 lines, stored 2026-11-01 10:00:00\n   L3: // parseConfig reads the file.\n   L4: func parseConfig(path string) error {\nread one:", hs[0][:12], len(goCode)/4)
	if !strings.HasPrefix(out, want) {
		t.Errorf("got\n%s\nwant it to start\n%s", out, want)
	}
	// the item that says "retry" most ranks first; every one is listed
	code, out, _ = recall(t, "--store", dir, "retry", "backoff")
	if code != 0 || !strings.HasPrefix(out, "3 items of 4 stored match") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// a phrase must be there as it is
	code, out, _ = recall(t, "--store", dir, `"want 5"`)
	if code != 0 || !strings.Contains(out, hs[1][:12]) || !strings.HasPrefix(out, "1 item") {
		t.Errorf("phrase: exit %d:\n%s", code, out)
	}
	code, out, _ = recall(t, "--store", dir, "--phrase", "retries want")
	if code != 1 || !strings.HasPrefix(out, "ctx-recall: nothing stored matches “retries want” (4 items searched in ") {
		t.Errorf("a phrase not there: exit %d:\n%s", code, out)
	}
	code, out, _ = recall(t, "--store", dir, "--regexp", `^\s+"max": [0-9]+,$`)
	if code != 0 || !strings.Contains(out, hs[3][:12]) || !strings.Contains(out, `L4:     "max": 5,`) {
		t.Errorf("regexp: exit %d:\n%s", code, out)
	}
}

func TestSearchBudgetAndJSON(t *testing.T) {
	var texts []string
	for i := 0; i < 20; i++ {
		texts = append(texts, fmt.Sprintf("item %d\nthe retry loop, try %d, gave up\nmore text\n", i, i))
	}
	dir, _ := storeWith(t, texts...)
	code, out, _ := recall(t, "--store", dir, "--max-tokens", "120", "retry")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(out, "\n   L"); n == 0 || n >= 10 || !strings.Contains(out, "(--limit, --max-tokens for more)") {
		t.Errorf("a budget of 120 tokens shows %d excerpts:\n%s", n, out)
	}
	code, out, _ = recall(t, "--store", dir, "--json", "--limit", "3", "retry")
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if rep.Matched != 20 || len(rep.Results) != 3 || rep.Mode != "words" || rep.Results[0].Excerpts[0].Line != 2 || !strings.HasSuffix(rep.Results[0].Path, rep.Results[0].Hash) {
		t.Errorf("JSON report %+v", rep)
	}
}

func TestRefs(t *testing.T) {
	dir, hs := storeWith(t, goCode, goTest)
	for _, ref := range []string{hs[0], hs[0][:8], "sha256:" + hs[0], filepath.Join(dir, hs[0][:2], hs[0]), "'" + filepath.Join(dir, hs[0][:2], hs[0]) + "'"} {
		code, out, errs := recall(t, "--store", dir, "--read", ref)
		if code != 0 || out != goCode {
			t.Errorf("--read %s: exit %d, %q %s", ref, code, out, errs)
		}
	}
	// the path names its store: found without --store
	code, out, _ := recall(t, "--store", t.TempDir(), "--read", filepath.Join(dir, hs[1][:2], hs[1]))
	if code != 0 || out != goTest {
		t.Errorf("a path in another store: exit %d", code)
	}
	for _, c := range []struct {
		ref  string
		code int
		err  string
	}{
		{"abc", 2, "at least its first 6 hex digits"},
		{"../../etc/passwd", 2, "names no stored item"},
		{strings.Repeat("0", 12), 4, "names no stored item"},
	} {
		code, _, errs := recall(t, "--store", dir, "--meta", c.ref)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("--meta %s: exit %d, %s", c.ref, code, errs)
		}
	}
	code, _, errs := recall(t, "--store", filepath.Join(t.TempDir(), "none"), "retry")
	if code != 4 || !strings.Contains(errs, "hint: nothing was offloaded") {
		t.Errorf("no store: exit %d, %s", code, errs)
	}
	code, _, errs = recall(t, "--store", dir)
	if code != 2 || !strings.Contains(errs, "nothing to find") {
		t.Errorf("no query: exit %d, %s", code, errs)
	}
}

func TestMetaOutlineRead(t *testing.T) {
	dir, hs := storeWith(t, goCode, goTest, doc, object)
	code, out, _ := recall(t, "--store", dir, "--meta", hs[1][:10])
	for _, want := range []string{"ref:          " + hs[1][:12], "kind:         command output", "tool call id: toolu_01", "from:         /s/session.jsonl", "stored:       2026-11-01 10:01:00 UTC"} {
		if code != 0 || !strings.Contains(out, want+"\n") {
			t.Errorf("--meta: exit %d, no %q in\n%s", code, want, out)
		}
	}
	for _, c := range []struct {
		h    string
		want []string
	}{
		{hs[0], []string{"code, 14 lines", "  L4: func parseConfig(path string) error {", "  L8: type Options struct {", "  L12: func (o *Options) Validate() error {"}},
		{hs[1], []string{"command output, 6 lines", "3 failing-test lines, 2 errors", "  L3 test: --- FAIL: TestRetry (0.00s)"}},
		{hs[2], []string{"Markdown, 11 lines", "  L1: # Design", "    L5: ## Backoff"}},
		{hs[3], []string{"JSON, 8 lines", "  L2: name: \"ctxkit\"", "  L3: retry: {2 keys}", "    L4: retry.max: 5", "  L7: tags: [2 items]"}},
	} {
		code, out, errs := recall(t, "--store", dir, "--outline", c.h[:12])
		for _, w := range c.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("--outline %s: exit %d %s, no %q in\n%s", c.h[:12], code, errs, w, out)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--read", hs[2][:12], "--section", "Backoff"}, "## Backoff\n\nExponential, capped.\n\n"},
		{[]string{"--read", hs[3][:12], "--section", "retry"}, "  \"retry\": {\n    \"max\": 5,\n    \"backoff\": \"100ms\"\n  },\n"},
		{[]string{"--read", hs[0][:12], "--section", "parseConfig"}, "func parseConfig(path string) error {\n\treturn nil\n}\n\n"},
		{[]string{"--read", hs[0][:12], "--lines", "4-5"}, "func parseConfig(path string) error {\n\treturn nil\n"},
		{[]string{"--read", hs[0][:12], "--lines", "13-"}, "\treturn nil\n}\n"},
		{[]string{"--read", hs[0][:12], "--lines", "1"}, "package cfg\n"},
	} {
		code, out, errs := recall(t, append([]string{"--store", dir}, c.args...)...)
		if code != 0 || out != c.want {
			t.Errorf("%v: exit %d %s\n got %q\nwant %q", c.args, code, errs, out, c.want)
		}
	}
	code, _, errs := recall(t, "--store", dir, "--read", hs[2][:12], "--section", "Nowhere")
	if code != 2 || !strings.Contains(errs, "hint: its parts: Design, Backoff, Limits") {
		t.Errorf("--section missing: exit %d %s", code, errs)
	}
	code, _, errs = recall(t, "--store", dir, "--read", hs[2][:12], "--lines", "5-2")
	if code != 2 {
		t.Errorf("--lines 5-2: exit %d %s", code, errs)
	}
}

// TestHostileTextEscaped: what a search, an outline or --meta shows of a stored text that
// carries terminal escapes is escaped (human.Safe); --read piped gives the bytes.
func TestHostileTextEscaped(t *testing.T) {
	evil := "retry \x1b]0;pwned\x07 \u202e loop\nfunc retry\x1b[2J() {}\nfunc other() {}\n"
	dir, hs := storeWith(t, evil)
	for _, args := range [][]string{{"retry"}, {"--outline", hs[0][:12]}, {"--meta", hs[0][:12]}, {"--regexp", "retry"}} {
		code, out, _ := recall(t, append([]string{"--store", dir}, args...)...)
		if code != 0 || strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%v: exit %d, raw escapes in %q", args, code, out)
		}
	}
	if _, out, _ := recall(t, "--store", dir, "--read", hs[0][:12]); out != evil {
		t.Errorf("--read piped changed the bytes")
	}
}

// TestReadOnlyStore: a store whose index folder cannot be written is searched all the
// same, what is missing indexed in memory.
func TestReadOnlyStore(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir, hs := storeWith(t, goCode, goTest)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	code, out, errs := recall(t, "--store", dir, "TestRetry")
	if code != 0 || !strings.Contains(out, hs[1][:12]) {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
}

// TestPhraseWithoutWords: a quoted phrase with no letter or digit is found by reading.
func TestPhraseWithoutWords(t *testing.T) {
	dir, hs := storeWith(t, "a -> b\n", "a => b\n")
	code, out, errs := recall(t, "--store", dir, `"=>"`)
	if code != 0 || !strings.Contains(out, hs[1][:12]) || strings.Contains(out, hs[0][:12]) {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
}

// TestMetaNamesTheMessage: --meta finds the result's line in the session it came from.
func TestMetaNamesTheMessage(t *testing.T) {
	tmp := t.TempDir()
	session := filepath.Join(tmp, "s.jsonl")
	lines := `{"type":"user","message":{"content":"go"}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_42","name":"Bash","input":{}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id": "toolu_42","content":"x"}]}}
{"type":"assistant","message":{"content":"done"}}
`
	if err := os.WriteFile(session, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Create(filepath.Join(tmp, "store"))
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := st.Put([]byte("the output\n"))
	st.Append(store.Entry{Hash: h, Tool: "Bash", ToolCallID: "toolu_42", Source: session, Bytes: 11})
	st.Close()
	code, out, errs := recall(t, "--store", filepath.Join(tmp, "store"), "--meta", h[:12])
	if code != 0 || !strings.Contains(out, "s.jsonl, line 3 (the result's message)\n") {
		t.Errorf("exit %d %s\n%s", code, errs, out)
	}
}

// --meta names a packed text's file only when it has one: a packed text has none of its
// own at the store's path, and a file tool given that path would find nothing.
func TestMetaPackedText(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := st.Batch()
	var hs []string
	for i := range 12 { // more than a batch keeps as files of their own
		h, err := b.Add([]byte(fmt.Sprintf("packed text %d\n", i)))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if _, err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	loose, _, err := st.Put([]byte("a text of its own\n"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, hs[3][:2], hs[3])); err == nil {
		t.Fatal("the batch wrote files of their own: the test needs a pack")
	}
	code, out, errs := recall(t, "--store", dir, "--meta", hs[3][:12])
	if code != 0 || !strings.Contains(out, "file:         none of its own") || strings.Contains(out, hs[3][:2]+"/"+hs[3]) {
		t.Errorf("--meta of a packed text: exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = recall(t, "--store", dir, "--json", "--meta", hs[3][:12])
	if code != 0 || !strings.Contains(out, `"packed":true`) {
		t.Errorf("--meta --json of a packed text: exit %d\n%s", code, out)
	}
	code, out, _ = recall(t, "--store", dir, "--meta", loose[:12])
	if code != 0 || !strings.Contains(out, "file:         "+filepath.Join(dir, loose[:2], loose)) || strings.Contains(out, "packed") {
		t.Errorf("--meta of a text of its own: exit %d\n%s", code, out)
	}
}
