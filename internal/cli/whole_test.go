package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// wholeTool reads its documents through Context.Run and, in Plan, streamed or not, again
// whole with Doc.Whole, and writes them with every text "x" spelled "X" (Plan.Edits on the
// document read whole). It reports on stderr how each document was read and how many
// messages each reading found. between, if set, runs between the two readings.
func wholeTool(between func()) *Tool {
	g := &struct {
		Common `embed:""`
	}{}
	return &Tool{
		Name:    "ctx-fake",
		Summary: "Read documents again, whole.",
		Grammar: g,
		run: func(c *Context) error {
			return c.Run(Filter{Plan: func(d *Doc) (*Plan, error) {
				how, first := "whole", len(d.T.Messages)
				if d.Streamed() {
					how = "streamed"
				}
				if between != nil {
					between()
				}
				if err := d.Whole(); err != nil {
					return nil, err
				}
				if d.Streamed() || d.Size() != len(d.T.Doc) {
					return nil, fmt.Errorf("after Whole: streamed %v, %d bytes, %d of text", d.Streamed(), d.Size(), len(d.T.Doc))
				}
				fmt.Fprintf(c.Stderr, "%s: %s, %d messages, then %d\n", d.Name, how, first, len(d.T.Messages))
				return &Plan{Edits: upper(d.T, d.T)}, nil
			}})
		},
	}
}

// TestWhole: a streamed document read again whole is the document the first pass read,
// from a file, from stdin kept in memory, and from stdin kept in a temp file; a JSON
// document is the one already read.
func TestWhole(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)
	chat := filepath.Join(dir, "chat.json")
	os.WriteFile(chat, []byte(`[{"role":"user","content":"x"}]`), 0o644)
	var big bytes.Buffer
	if err := testgen.Generate(&big, testgen.Options{Format: "codex", Size: 9 << 20, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if big.Len() <= 8<<20 {
		t.Fatalf("the generated document has %d bytes: a spool keeps it all in memory", big.Len())
	}
	bigT, err := transcript.Parse(big.Bytes(), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(session, `"x"`, `"X"`)
	for _, c := range []struct {
		name   string
		args   []string
		stdin  string
		stdout string
		stderr string
	}{
		{"file", []string{file}, "", want, file + ": streamed, 2 messages, then 2\n"},
		{"stdin", nil, session, want, "-: streamed, 2 messages, then 2\n"},
		{"stdin larger than a spool keeps in memory", nil, big.String(), big.String(),
			fmt.Sprintf("-: streamed, %d messages, then %d\n", len(bigT.Messages), len(bigT.Messages))},
		{"JSON", []string{chat}, "", `[{"role":"user","content":"X"}]`, chat + ": whole, 1 messages, then 1\n"},
	} {
		var out, errb bytes.Buffer
		code := Main(wholeTool(nil), c.args, strings.NewReader(c.stdin), &out, &errb, nil)
		if code != 0 || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %.100q, stderr %q\nwant stdout %.100q, stderr %q", c.name, code, out.String(), errb.String(), c.stdout, c.stderr)
		}
	}

	// Once read whole, a streamed document is written as one: --in-place rewrites a file
	// it changed and leaves alone one it did not, and --stats counts what the first pass
	// counted.
	plain := filepath.Join(dir, "plain.jsonl")
	os.WriteFile(plain, []byte(strings.ReplaceAll(session, `"x"`, `"y"`)), 0o644)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(plain, old, old)
	var out, errb bytes.Buffer
	code := Main(wholeTool(nil), []string{"--stats", "-i", file, plain}, strings.NewReader(""), &out, &errb, nil)
	if code != 0 || out.Len() != 0 || strings.Count(errb.String(), `"tokens_before":`) != 2 {
		t.Errorf("-i: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if got, _ := os.ReadFile(file); string(got) != want {
		t.Errorf("-i wrote %q", got)
	}
	if st, err := os.Stat(plain); err != nil || !st.ModTime().Equal(old) {
		t.Errorf("-i touched a file it did not change (%v)", err)
	}
}

// TestWholeChangedInput: a file that changes between the two readings fails the run and
// nothing is written; one that only grows is read as it was on the first pass.
func TestWholeChangedInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	changed := fmt.Sprintf("ctx-fake: error: read %q again: the input changed while it was being read; run again\n", file)
	for _, c := range []struct {
		name   string
		change func()
		code   int
		stdout string
		stderr string
	}{
		{"changed", func() { os.WriteFile(file, []byte(strings.Replace(session, `"s"`, `"t"`, 1)), 0o644) }, ExitRuntime, "", changed},
		{"shortened", func() { os.WriteFile(file, []byte(session[:40]), 0o644) }, ExitRuntime, "", changed},
		{"grown", func() {
			f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n")
			f.Close()
		}, 0, strings.ReplaceAll(session, `"x"`, `"X"`), file + ": streamed, 2 messages, then 2\n"},
	} {
		os.WriteFile(file, []byte(session), 0o644)
		var out, errb bytes.Buffer
		code := Main(wholeTool(c.change), []string{file}, strings.NewReader(""), &out, &errb, nil)
		if code != c.code || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", c.name, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}
