package snip

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/store"
)

// ttyWriter and ttyReader make the runner see a terminal.
type ttyWriter struct{ bytes.Buffer }

func (*ttyWriter) IsTerminal() bool { return true }

type ttyReader struct{}

func (ttyReader) Read([]byte) (int, error) { return 0, nil }
func (ttyReader) IsTerminal() bool         { return true }

func writeDoc(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "chat.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDryRunTable(t *testing.T) {
	p := writeDoc(t, anthropicDoc(read("/repo/main.go", ""), bash("make"), read("/repo/main.go", ""), bash("make test")))
	var out ttyWriter
	var errb bytes.Buffer
	code := Main([]string{"-n", "--tokenizer", "estimate", "--window", "33000", "--reserve", "0", "--repay", "0", p}, strings.NewReader(""), &out, &errb, nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"would clear 1 of 4 tool results, ",
		"utilization 68% -> 46% (trigger: utilization 68%)",
		"MESSAGE  LINE  TOKENS  REASON  TOOL  ARGUMENT",
		"reread  Read  /repo/main.go",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"messages"`) {
		t.Errorf("the document was written:\n%s", got)
	}

	out.Reset()
	if code := Main([]string{"-n", p}, strings.NewReader(""), &out, &errb, nil); code != 0 || !strings.Contains(out.String(), "nothing to clear (below 60% of window)") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}

func TestTerminalStdin(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(nil, ttyReader{}, &out, &errb, nil)
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "ctx-snip: error: no input") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestStoredReferenced: a text the store holds already (an earlier turn's, or what
// ctx-persist stored earlier in the pipeline) is referenced by name and size: not made,
// compared or written again, and no index line is added for it.
func TestStoredReferenced(t *testing.T) {
	p := writeDoc(t, anthropicDoc(read("/repo/main.go", ""), bash("make"), read("/repo/main.go", ""), bash("make test")))
	st := filepath.Join(t.TempDir(), "store")
	run := func() string {
		t.Helper()
		var out, errb bytes.Buffer
		args := []string{"--tokenizer", "estimate", "--window", "33000", "--reserve", "0", "--repay", "0", "--store", st, p}
		if code := Main(args, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	first := run()
	var stored []string
	filepath.WalkDir(st, func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && store.ValidHash(e.Name()) {
			stored = append(stored, path)
		}
		return nil
	})
	if len(stored) == 0 {
		t.Fatalf("nothing stored:\n%s", first)
	}
	index, _ := os.ReadFile(filepath.Join(st, store.IndexName))
	// The same size, other bytes: a run that compared or wrote the file would put the
	// text back.
	for _, f := range stored {
		b, _ := os.ReadFile(f)
		os.WriteFile(f, bytes.Repeat([]byte("x"), len(b)), 0o600)
	}
	if again := run(); again != first {
		t.Errorf("the second run's document differs:\n%s\nwant\n%s", again, first)
	}
	for _, f := range stored {
		if b, _ := os.ReadFile(f); strings.Trim(string(b), "x") != "" {
			t.Errorf("%s written again: %q", f, b)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(st, store.IndexName)); !bytes.Equal(got, index) {
		t.Errorf("index lines added:\n%s", got[len(index):])
	}
}
