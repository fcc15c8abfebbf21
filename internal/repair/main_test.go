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

// TestCheckOnTerminal: a person gets one readable line a problem, not JSON.
func TestCheckOnTerminal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.json")
	doc := `{"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	var stderr terminal
	code := Main([]string{"--check", path}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := path + ": message 2: missing-result: tool call t1 (ls) has no result\n"
	if !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to start with %q", stderr.String(), want)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}
