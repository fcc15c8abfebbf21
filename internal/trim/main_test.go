package trim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ttyWriter and ttyReader make the runner see a terminal.
type ttyWriter struct{ bytes.Buffer }

func (*ttyWriter) IsTerminal() bool { return true }

type ttyReader struct{}

func (ttyReader) Read([]byte) (int, error) { return 0, nil }
func (ttyReader) IsTerminal() bool         { return true }

// chat is an Anthropic request: a system prompt, a task, two calls with their results and
// the newest exchange; 381 tokens by the estimate.
const chat = `{"system":"Be brief.","messages":[{"role":"user","content":"Fix the failing test."},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3, want 4\nFAIL\nFAIL\tgithub.com/acme/parse\t0.004s\nok  \tgithub.com/acme/cli\t0.010s\nok  \tgithub.com/acme/store\t0.020s\nok  \tgithub.com/acme/web\t0.031s"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/repo/parse.go"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"package parse\n\nfunc Count(s string) int {\n\treturn len(strings.Fields(s)) - 1\n}\n"}]},{"role":"assistant","content":[{"type":"text","text":"The off-by-one is in Count; fixed."}]},{"role":"user","content":"Thanks. Now run the tests again."},{"role":"assistant","content":[{"type":"text","text":"Running them."}]}]}`

func writeDoc(t *testing.T, name, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDryRunTable(t *testing.T) {
	p := writeDoc(t, "chat.json", chat)
	run := func(args ...string) string {
		t.Helper()
		var out ttyWriter
		var errb bytes.Buffer
		if code := Main(append(args, p), strings.NewReader(""), &out, &errb, nil); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if strings.Contains(out.String(), `"messages"`) {
			t.Errorf("the document was written:\n%s", out.String())
		}
		return out.String()
	}
	got := run("-n", "--max-tokens", "300")
	for _, want := range []string{
		"chat.json: would drop 3 messages, 201 tokens (above --max-tokens 300; goal 300 tokens)\n",
		"and put an opening user message first (16 tokens): the first message kept is the assistant's\n",
		"MESSAGE  LINE  ROLE       TOKENS\n",
		"1        -     user       8\n",
		"2        -     assistant  62\n",
		"3        -     user       131\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "still be above") {
		t.Errorf("a plan that fits says it does not:\n%s", got)
	}
	if got := run("-n", "--max-tokens", "10"); !strings.Contains(got, "would drop 6 messages") || !strings.Contains(got, "and still be above the goal: what must stay is more than 10 tokens") {
		t.Errorf("cannot fit:\n%s", got)
	}
	if got := run("-n"); !strings.HasSuffix(got, "chat.json: nothing to drop (below 95% of window)\n") {
		t.Errorf("below the trigger:\n%s", got)
	}
}

func TestTerminalStdin(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(nil, ttyReader{}, &out, &errb, nil)
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "ctx-trim: error: no input") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestTerminalOutput: on a terminal the document is indented for a reader; piped it is the
// spliced bytes.
func TestTerminalOutput(t *testing.T) {
	p := writeDoc(t, "chat.json", chat)
	var tty ttyWriter
	var piped, errb bytes.Buffer
	if code := Main([]string{"--max-tokens", "120", p}, strings.NewReader(""), &tty, &errb, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if code := Main([]string{"--max-tokens", "120", p}, strings.NewReader(""), &piped, &errb, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(tty.String(), "\n  \"messages\": [\n") || strings.Contains(piped.String(), "\n") {
		t.Errorf("terminal:\n%s\npiped:\n%s", tty.String(), piped.String())
	}
}
