package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// streamTool reads its inputs through Context.Run in a Reports mode, as ctx-count does
// (several files, each read once), and reports what it got: "name: N records streamed, M
// messages" or "name: read whole, N records, M messages" (Filter.Record sees a document
// read whole as one record).
func streamTool() *Tool {
	g := &struct {
		Common `embed:""`
	}{}
	return &Tool{
		Name:    "ctx-fake",
		Summary: "Stream documents.",
		Grammar: g,
		run: func(c *Context) error {
			n := 0
			return c.Run(Filter{
				Reports: true,
				Record:  func(int, *transcript.Transcript, tokens.Counter) error { n++; return nil },
				Plan: func(d *Doc) (*Plan, error) {
					defer func() { n = 0 }()
					if !d.Streamed() {
						return &Plan{Report: fmt.Appendf(nil, "%s: read whole, %d records, %d messages\n", d.Name, n, len(d.T.Messages))}, nil
					}
					return &Plan{Report: fmt.Appendf(nil, "%s: %d records streamed, %d messages\n", d.Name, n, len(d.T.Messages))}, nil
				},
			})
		},
	}
}

func runStream(args []string, stdin io.Reader) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(streamTool(), args, stdin, &out, &errb, nil)
	return code, out.String(), errb.String()
}

// TestStreamTerminal: a report is streamed also for a terminal (only a document written
// to one is indented, and needs reading whole).
func TestStreamTerminal(t *testing.T) {
	jsonl := `{"type":"user","uuid":"a","message":{"role":"user","content":"x"}}` + "\n"
	out := &ttyOut{}
	var errb bytes.Buffer
	code := Main(streamTool(), nil, strings.NewReader(jsonl), out, &errb, nil)
	if want := "-: 1 records streamed, 1 messages\n"; code != 0 || out.String() != want || errb.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out.String(), errb.String(), want)
	}
}

func TestStream(t *testing.T) {
	dir := t.TempDir()
	jsonl := `{"type":"user","uuid":"a","message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m","role":"assistant","content":"y"}}` + "\n"
	chat := filepath.Join(dir, "chat.json")
	os.WriteFile(chat, []byte(`[{"role":"user","content":"hi"}]`), 0o644)
	session := filepath.Join(dir, "s.jsonl")
	os.WriteFile(session, []byte(jsonl), 0o644)
	missing := filepath.Join(dir, "missing.json")

	cases := []struct {
		name   string
		args   []string
		stdin  io.Reader
		code   int
		stdout string
		stderr string
	}{
		{"jsonl on stdin", nil, strings.NewReader(jsonl), 0, "-: 2 records streamed, 2 messages\n", ""},
		{"files", []string{chat, session}, nil, 0,
			chat + ": read whole, 1 records, 1 messages\n" + session + ": 2 records streamed, 2 messages\n", ""},
		{"a missing file fails before any is read", []string{chat, missing}, nil, ExitRuntime, "",
			fmt.Sprintf("ctx-fake: error: read %q: no such file or directory\n", missing)},
		{"a directory", []string{dir}, nil, ExitRuntime, "",
			fmt.Sprintf("ctx-fake: error: read %q: is a directory\n", dir)},
		{"stdin twice", []string{"-", "-"}, strings.NewReader(jsonl), ExitUsage, "",
			"ctx-fake: error: stdin (\"-\") named more than once\n"},
		{"bad record", nil, strings.NewReader(jsonl + "{\"type\":\"user\",\"uu"), ExitInput, "",
			"ctx-fake: error: stdin: line 3: truncated record (the last line ends before its JSON value does): invalid JSON: the document ends before its value does (truncated?)\nhint: if the format was misdetected, name it with --format\n"},
		{"read error", nil, io.MultiReader(strings.NewReader(jsonl), iotest.ErrReader(errors.New("connection reset"))), ExitRuntime, "",
			"ctx-fake: error: read stdin: connection reset\n"},
		{"forced format, whole", []string{"--format", "claude-code", chat}, nil, ExitInput, "",
			fmt.Sprintf("ctx-fake: error: %s: --format claude-code, but the input holds something else\n", chat)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.stdin == nil {
				c.stdin = strings.NewReader("")
			}
			code, stdout, stderr := runStream(c.args, c.stdin)
			if code != c.code || stdout != c.stdout || stderr != c.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
}

// TestStreamedMatchesWhole: a filter that reads whole and a report that streams word an
// unreadable input alike.
func TestStreamedMatchesWhole(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{filepath.Join(dir, "nope.json")}, {dir}} {
		code1, _, err1 := run(t, args, runOpts{})
		code2, _, err2 := runStream(args, strings.NewReader(""))
		if code1 != code2 || err1 != err2 {
			t.Errorf("%v: read whole: %d %q, streamed: %d %q", args, code1, err1, code2, err2)
		}
	}
}
