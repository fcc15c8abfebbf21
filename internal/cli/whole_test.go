package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// wholeTool reads its document with ReadDocument and then, streamed or not, whole with
// Whole, and writes it with every text "x" spelled "X" through WriteDocument. It reports
// on stderr how the document was read and how many messages each pass found. between, if
// set, runs between the two readings.
func wholeTool(between func()) *cli.Tool {
	g := &struct {
		cli.Common `embed:""`
	}{}
	return &cli.Tool{
		Name:    "ctx-fake",
		Summary: "Read documents again, whole.",
		Grammar: g,
		Common:  func() *cli.Common { return &g.Common },
		Run: func(c *cli.Context) error {
			names, err := c.DocumentNames(false)
			if err != nil {
				return err
			}
			for _, name := range names {
				var carried [][]transcript.Message
				doc, err := c.ReadDocument(name, func(seq int, rec *transcript.Transcript) error {
					carried = append(carried, rec.Messages)
					return nil
				})
				if err != nil {
					return err
				}
				defer doc.Close()
				how, first := "whole", 0
				if doc.Outline != nil {
					how, first = "streamed", len(doc.Outline.Conversation(carried).Messages)
				} else {
					first = len(doc.Transcript.Messages)
				}
				if between != nil {
					between()
				}
				in, t, err := doc.Whole()
				if err != nil {
					return err
				}
				fmt.Fprintf(c.Stderr, "%s: %s, %d messages, then %d\n", name, how, first, len(t.Messages))
				out, err := t.Apply(upper(t, t))
				if err != nil {
					return err
				}
				if err := c.WriteDocument(in, out); err != nil {
					return err
				}
			}
			return nil
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
		code := cli.Main(wholeTool(nil), c.args, strings.NewReader(c.stdin), &out, &errb, nil)
		if code != 0 || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %.100q, stderr %q\nwant stdout %.100q, stderr %q", c.name, code, out.String(), errb.String(), c.stdout, c.stderr)
		}
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
		{"changed", func() { os.WriteFile(file, []byte(strings.Replace(session, `"s"`, `"t"`, 1)), 0o644) }, cli.ExitRuntime, "", changed},
		{"shortened", func() { os.WriteFile(file, []byte(session[:40]), 0o644) }, cli.ExitRuntime, "", changed},
		{"grown", func() {
			f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n")
			f.Close()
		}, 0, strings.ReplaceAll(session, `"x"`, `"X"`), file + ": streamed, 2 messages, then 2\n"},
	} {
		os.WriteFile(file, []byte(session), 0o644)
		var out, errb bytes.Buffer
		code := cli.Main(wholeTool(c.change), []string{file}, strings.NewReader(""), &out, &errb, nil)
		if code != c.code || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", c.name, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}
