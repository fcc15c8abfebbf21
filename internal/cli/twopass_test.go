package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// editTool reads its documents with ReadDocument, as the filters do, and writes them back
// with every text "x" spelled "X": streamed JSONL through Rewrite, other documents whole
// through WriteDocument. It reports on stderr how each was read. between, if set, runs
// between the two passes.
func editTool(between func()) *cli.Tool {
	g := &struct {
		cli.Common `embed:""`
	}{}
	return &cli.Tool{
		Name:    "ctx-fake",
		Summary: "Edit documents.",
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
				if doc.Transcript != nil {
					fmt.Fprintf(c.Stderr, "%s: whole\n", name)
					t := doc.Transcript
					out, err := t.Apply(upper(t, t))
					if err != nil {
						return err
					}
					if err := c.WriteDocument(doc.Input, out); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(c.Stderr, "%s: streamed\n", name)
				if between != nil {
					between()
				}
				t := doc.Outline.Conversation(carried)
				var regions []transcript.Span
				for _, m := range t.Messages {
					regions = append(regions, m.Lines...)
				}
				err = doc.Rewrite(regions, func(_ int, text string, base int) ([]transcript.Edit, error) {
					return upper(t, &transcript.Transcript{Doc: text, Base: base}), nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// upper spells every text block "x" of t "X", reading the text through doc.
func upper(t, doc *transcript.Transcript) []transcript.Edit {
	var edits []transcript.Edit
	for _, m := range t.Messages {
		for _, b := range m.Blocks {
			if b.Kind == transcript.Text && !b.Body.IsZero() && b.Body.Start >= doc.Base && b.Body.End <= doc.Base+len(doc.Doc) &&
				doc.BodyText(&b) == "x" {
				edits = append(edits, transcript.Edit{Span: b.Body, With: `"X"`})
			}
		}
	}
	return edits
}

type ttyOut struct{ bytes.Buffer }

func (*ttyOut) IsTerminal() bool { return true }

const session = `{"type":"user","uuid":"a","message":{"role":"user","content":"x"}}` + "\n" +
	"\r\n" +
	`{"type":"summary","summary":"s"}` + "\r\n" +
	`{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}`

func TestReadDocumentAndRewrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)
	chat := filepath.Join(dir, "chat.json")
	os.WriteFile(chat, []byte(`[{"role":"user","content":"x"}]`), 0o644)
	want := strings.ReplaceAll(session, `"x"`, `"X"`)

	run := func(tool *cli.Tool, args []string, stdin io.Reader, stdout io.Writer) (int, string) {
		var errb bytes.Buffer
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		return cli.Main(tool, args, stdin, stdout, &errb, nil), errb.String()
	}
	cases := []struct {
		name   string
		args   []string
		stdin  string
		stdout string
		stderr string
	}{
		{"a file is read twice", []string{file}, "", want, file + ": streamed\n"},
		{"stdin is kept for the second pass", nil, session, want, "-: streamed\n"},
		{"a JSON document is read whole", []string{chat}, "", `[{"role":"user","content":"X"}]`, chat + ": whole\n"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		code, stderr := run(editTool(nil), c.args, strings.NewReader(c.stdin), &out)
		if code != 0 || out.String() != c.stdout || stderr != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant stdout %q, stderr %q", c.name, code, out.String(), stderr, c.stdout, c.stderr)
		}
	}

	// Indented output for a terminal needs the whole document.
	tty := &ttyOut{}
	if code, stderr := run(editTool(nil), []string{file}, nil, tty); code != 0 || stderr != file+": whole\n" {
		t.Errorf("terminal: exit %d, stderr %q", code, stderr)
	}

	// -o writes the file; --in-place leaves a file that nothing changed alone.
	outFile := filepath.Join(dir, "out.jsonl")
	if code, stderr := run(editTool(nil), []string{"-o", outFile, file}, nil, io.Discard); code != 0 {
		t.Fatalf("-o: exit %d, %s", code, stderr)
	}
	if got, _ := os.ReadFile(outFile); string(got) != want {
		t.Errorf("-o wrote %q", got)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(outFile, old, old)
	if code, stderr := run(editTool(nil), []string{"-i", outFile, file}, nil, io.Discard); code != 0 {
		t.Fatalf("-i: exit %d, %s", code, stderr)
	}
	if st, _ := os.Stat(outFile); !st.ModTime().Equal(old) {
		t.Errorf("--in-place touched a file it did not change")
	}
	if got, _ := os.ReadFile(file); string(got) != want {
		t.Errorf("--in-place wrote %q", got)
	}
}

// TestRewriteChangedInput: a file that changes between the two passes fails the run and
// nothing is written; one that only grows is edited as it was on the first pass.
func TestRewriteChangedInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	for _, c := range []struct {
		name   string
		change func()
		code   int
		stdout string
		stderr string
	}{
		{"changed", func() { os.WriteFile(file, []byte(strings.Replace(session, `"s"`, `"t"`, 1)), 0o644) }, cli.ExitRuntime, "",
			fmt.Sprintf("%s: streamed\nctx-fake: error: read %q again: the input changed while it was being read; run again\n", file, file)},
		{"shortened", func() { os.WriteFile(file, []byte(session[:40]), 0o644) }, cli.ExitRuntime, "",
			fmt.Sprintf("%s: streamed\nctx-fake: error: read %q again: the input changed while it was being read; run again\n", file, file)},
		{"grown", func() {
			f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n")
			f.Close()
		}, 0, strings.ReplaceAll(session, `"x"`, `"X"`), file + ": streamed\n"},
	} {
		os.WriteFile(file, []byte(session), 0o644)
		var out, errb bytes.Buffer
		tool := editTool(c.change)
		code := cli.Main(tool, []string{file}, strings.NewReader(""), &out, &errb, nil)
		if code != c.code || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", c.name, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}
