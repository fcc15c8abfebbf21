package repair

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type terminal struct{ bytes.Buffer }

func (*terminal) IsTerminal() bool { return true }

// TestCheckOnTerminal: the problems are --check's output, on stdout: a person at a
// terminal gets one readable line a problem, a pipe gets JSON lines whatever stderr is;
// stderr has only the count (issue 34).
func TestCheckOnTerminal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.json")
	doc := `{"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	const count = "ctx-repair: error: 1 problem found\n"
	var stdout terminal
	var stderr bytes.Buffer
	code := Main([]string{"--check", path}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := path + ": message 2: missing-result: tool call t1 (ls) has no result\n"; stdout.String() != want {
		t.Errorf("stdout = %q, want %q", stdout.String(), want)
	}
	if stderr.String() != count {
		t.Errorf("stderr = %q, want %q", stderr.String(), count)
	}

	var piped bytes.Buffer
	var tty terminal
	code = Main([]string{"--check", path}, strings.NewReader(""), &piped, &tty, func(string) string { return "" })
	if want := `{"file":"` + path + `","message":2,"rule":"missing-result","ids":["t1"],"detail":"tool call t1 (ls) has no result"}` + "\n"; code != 1 || piped.String() != want {
		t.Errorf("stdout piped, stderr a terminal: exit %d stdout %q, want %q", code, piped.String(), want)
	}
	if tty.String() != count {
		t.Errorf("stderr = %q, want %q", tty.String(), count)
	}
}
