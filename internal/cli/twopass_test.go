package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// editTool is a filter that writes its documents back with every text "x" spelled "X",
// as the tiers do, through Context.Run: a streamed JSONL transcript with Plan.Regions and
// Plan.Edit (the text read in the second pass), or, with excerpts set, with Plan.Edits
// decided from the text Doc.Excerpt read between the passes; a document read whole with
// Plan.Edits. It reports on stderr how each was read. between, if set, runs between the
// two passes.
func editTool(between func(), excerpts bool) *Tool {
	g := &struct {
		Common `embed:""`
	}{}
	return &Tool{
		Name:    "ctx-fake",
		Summary: "Edit documents.",
		Grammar: g,
		run: func(c *Context) error {
			return c.Run(Filter{Plan: func(d *Doc) (*Plan, error) {
				t := d.T
				if !d.Streamed() {
					fmt.Fprintf(c.Stderr, "%s: whole\n", d.Name)
					return &Plan{Edits: upper(t, t)}, nil
				}
				fmt.Fprintf(c.Stderr, "%s: streamed\n", d.Name)
				if between != nil {
					between()
				}
				if excerpts {
					var bodies []transcript.Span
					for _, m := range t.Messages {
						for _, b := range m.Blocks {
							if b.Kind == transcript.Text && !b.Body.IsZero() {
								bodies = append(bodies, b.Body)
							}
						}
					}
					if err := d.Excerpt(bodies); err != nil {
						return nil, err
					}
					return &Plan{Edits: upperRead(t)}, nil
				}
				var regions []transcript.Span
				for _, m := range t.Messages {
					regions = append(regions, m.Lines...)
				}
				return &Plan{Regions: regions, Edit: func(_ int, text string, base int) ([]transcript.Edit, error) {
					return upper(t, &transcript.Transcript{Doc: text, Base: base}), nil
				}}, nil
			}})
		},
	}
}

// upper spells every text block "x" of t "X", reading the text through doc (only the
// blocks doc holds).
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

// upperRead spells every text block "x" of t "X", reading each block's text from t (a
// streamed conversation whose text blocks were excerpted).
func upperRead(t *transcript.Transcript) []transcript.Edit {
	var edits []transcript.Edit
	for _, m := range t.Messages {
		for _, b := range m.Blocks {
			if b.Kind == transcript.Text && !b.Body.IsZero() && t.BodyText(&b) == "x" {
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

	run := func(tool *Tool, args []string, stdin io.Reader, stdout io.Writer) (int, string) {
		var errb bytes.Buffer
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		return Main(tool, args, stdin, stdout, &errb, nil), errb.String()
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
	for _, excerpts := range []bool{false, true} {
		for _, c := range cases {
			var out bytes.Buffer
			code, stderr := run(editTool(nil, excerpts), c.args, strings.NewReader(c.stdin), &out)
			if code != 0 || out.String() != c.stdout || stderr != c.stderr {
				t.Errorf("%s (excerpts %v): exit %d, stdout %q, stderr %q\nwant stdout %q, stderr %q", c.name, excerpts, code, out.String(), stderr, c.stdout, c.stderr)
			}
		}
	}

	// Indented output for a terminal needs the whole document.
	tty := &ttyOut{}
	if code, stderr := run(editTool(nil, false), []string{file}, nil, tty); code != 0 || stderr != file+": whole\n" {
		t.Errorf("terminal: exit %d, stderr %q", code, stderr)
	}

	// -o writes the file; --in-place leaves a file that nothing changed alone, and
	// writes the ones it changed; the held stdout gets nothing.
	for _, excerpts := range []bool{false, true} {
		os.WriteFile(file, []byte(session), 0o644)
		outFile := filepath.Join(dir, "out.jsonl")
		os.Remove(outFile)
		var out bytes.Buffer
		if code, stderr := run(editTool(nil, excerpts), []string{"-o", outFile, file}, nil, &out); code != 0 || out.Len() != 0 {
			t.Fatalf("-o: exit %d, stdout %q, %s", code, out.String(), stderr)
		}
		if got, _ := os.ReadFile(outFile); string(got) != want {
			t.Errorf("-o (excerpts %v) wrote %q", excerpts, got)
		}
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		os.Chtimes(outFile, old, old)
		if code, stderr := run(editTool(nil, excerpts), []string{"-i", outFile, file}, nil, &out); code != 0 || out.Len() != 0 {
			t.Fatalf("-i: exit %d, stdout %q, %s", code, out.String(), stderr)
		}
		if st, _ := os.Stat(outFile); !st.ModTime().Equal(old) {
			t.Errorf("--in-place (excerpts %v) touched a file it did not change", excerpts)
		}
		if got, _ := os.ReadFile(file); string(got) != want {
			t.Errorf("--in-place (excerpts %v) wrote %q", excerpts, got)
		}
		if got := strings.Join(listDir(t, dir), " "); got != "chat.json out.jsonl s.jsonl" {
			t.Errorf("directory holds %q", got)
		}
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
		{"changed", func() { os.WriteFile(file, []byte(strings.Replace(session, `"s"`, `"t"`, 1)), 0o644) }, ExitRuntime, "",
			fmt.Sprintf("%s: streamed\nctx-fake: error: read %q again: the input changed while it was being read; run again\n", file, file)},
		{"shortened", func() { os.WriteFile(file, []byte(session[:40]), 0o644) }, ExitRuntime, "",
			fmt.Sprintf("%s: streamed\nctx-fake: error: read %q again: the input changed while it was being read; run again\n", file, file)},
		{"grown", func() {
			f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n")
			f.Close()
		}, 0, strings.ReplaceAll(session, `"x"`, `"X"`), file + ": streamed\n"},
	} {
		for _, excerpts := range []bool{false, true} {
			os.WriteFile(file, []byte(session), 0o644)
			var out, errb bytes.Buffer
			code := Main(editTool(c.change, excerpts), []string{file}, strings.NewReader(""), &out, &errb, nil)
			if code != c.code || out.String() != c.stdout || errb.String() != c.stderr {
				t.Errorf("%s (excerpts %v): exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", c.name, excerpts, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
			}
		}
	}
}

// TestRewriteChangedInputKeepsFiles: with -o or --in-place, an input that changed between
// the passes fails the run, and neither the target nor the input is written, nor any
// temp file left.
func TestRewriteChangedInputKeepsFiles(t *testing.T) {
	dir := t.TempDir()
	file, outFile := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "out.jsonl")
	changed := strings.Replace(session, `"s"`, `"t"`, 1)
	for _, args := range [][]string{{"-o", outFile, file}, {"-i", file}} {
		os.WriteFile(file, []byte(session), 0o644)
		os.WriteFile(outFile, []byte("before"), 0o644)
		var out, errb bytes.Buffer
		tool := editTool(func() { os.WriteFile(file, []byte(changed), 0o644) }, false)
		if code := Main(tool, args, strings.NewReader(""), &out, &errb, nil); code != ExitRuntime || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 4 and nothing on stdout", args, code, out.String(), errb.String())
		}
		if got, _ := os.ReadFile(outFile); string(got) != "before" {
			t.Errorf("%q: -o file is %q", args, got)
		}
		if got, _ := os.ReadFile(file); string(got) != changed {
			t.Errorf("%q: input is %q", args, got)
		}
		if got := strings.Join(listDir(t, dir), " "); got != "out.jsonl s.jsonl" {
			t.Errorf("%q: directory holds %q", args, got)
		}
	}
}
