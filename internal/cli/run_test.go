package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// What the run loop adds to reading and writing: reports, Plan.Check, Plan.Written and
// Plan.Close, and the counts of a streamed document.

// loopTool is a tool whose Run is c.Run(filter(c)).
func loopTool(filter func(c *Context) Filter) *Tool {
	g := &struct {
		Common `embed:""`
	}{}
	return &Tool{
		Name:    "ctx-fake",
		Summary: "Run the loop.",
		Grammar: g,
		run:     func(c *Context) error { return c.Run(filter(c)) },
	}
}

// runLoop runs tool; stderr is given so that a plan can look at it mid-run.
func runLoop(tool *Tool, args []string, stderr *bytes.Buffer) (int, string) {
	var out bytes.Buffer
	code := Main(tool, args, strings.NewReader(""), &out, stderr, nil)
	return code, out.String()
}

// TestReports: a Reports mode takes several files without --in-place, writes no document,
// and writes the plans' reports in order, to stdout or to -o, before Done gives the
// verdict; a document that fails writes nothing.
func TestReports(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "c.json")
	docs := map[string]string{a: conv("one"), b: session, c: `[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]`}
	for name, doc := range docs {
		os.WriteFile(name, []byte(doc), 0o644)
	}
	var verdict error
	var planned []string
	tool := func() *Tool {
		planned = nil
		return loopTool(func(*Context) Filter {
			return Filter{
				Reports: true,
				Plan: func(d *Doc) (*Plan, error) {
					planned = append(planned, d.Name)
					// An edit a report mode must not write.
					edits := upper(d.T, d.T)
					if d.Streamed() {
						edits = nil
					}
					return &Plan{Edits: edits, Report: fmt.Appendf(nil, "%s: %s, %d messages\n", d.Name, d.T.Format, len(d.T.Messages))}, nil
				},
				Done: func() error {
					if len(planned) != 3 {
						return fmt.Errorf("Done after %d documents", len(planned))
					}
					return verdict
				},
			}
		})
	}
	want := a + ": openai, 1 messages\n" + b + ": claude-code, 2 messages\n" + c + ": openai, 2 messages\n"
	unchanged := func() {
		t.Helper()
		for name, doc := range docs {
			if got, _ := os.ReadFile(name); string(got) != doc {
				t.Errorf("%s rewritten: %q", name, got)
			}
		}
	}

	var errb bytes.Buffer
	if code, stdout := runLoop(tool(), []string{a, b, c}, &errb); code != 0 || stdout != want || errb.Len() != 0 {
		t.Errorf("stdout: exit %d, stdout %q, stderr %q\nwant stdout %q", code, stdout, errb.String(), want)
	}
	unchanged()

	// To -o: stdout stays empty.
	out := filepath.Join(dir, "report.txt")
	errb.Reset()
	if code, stdout := runLoop(tool(), []string{"-o", out, a, b, c}, &errb); code != 0 || stdout != "" || errb.Len() != 0 {
		t.Errorf("-o: exit %d, stdout %q, stderr %q", code, stdout, errb.String())
	}
	if got, _ := os.ReadFile(out); string(got) != want {
		t.Errorf("-o wrote %q, want %q", got, want)
	}
	unchanged()

	// A check that fires still writes the reports.
	verdict = CheckFailed(errors.New("2 problems found"))
	errb.Reset()
	if code, stdout := runLoop(tool(), []string{a, b, c}, &errb); code != ExitCheck || stdout != want || errb.String() != "ctx-fake: error: 2 problems found\n" {
		t.Errorf("check: exit %d, stdout %q, stderr %q", code, stdout, errb.String())
	}
	verdict = nil

	// With --stats each document has its line, in order, and --in-place writes nothing.
	errb.Reset()
	if code, stdout := runLoop(tool(), []string{"--stats", "-i", a, b, c}, &errb); code != 0 || stdout != want {
		t.Errorf("--stats -i: exit %d, stdout %q, stderr %q", code, stdout, errb.String())
	}
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Errorf("--stats: %d lines, want 3: %q", len(lines), errb.String())
	} else {
		for i, name := range []string{a, b, c} {
			if !strings.Contains(lines[i], fmt.Sprintf(`"file":%q`, name)) {
				t.Errorf("--stats line %d is not %s's: %s", i, name, lines[i])
			}
		}
	}
	unchanged()

	// A document that is not one fails the run: nothing on stdout, no -o file.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("not json"), 0o644)
	os.Remove(out)
	for _, args := range [][]string{{a, bad, c}, {"-o", out, a, bad, c}} {
		errb.Reset()
		if code, stdout := runLoop(tool(), args, &errb); code != ExitInput || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 3 and nothing on stdout", args, code, stdout, errb.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%q: -o written", args)
		}
	}
}

// TestCheck: Plan.Check sees the input and the edited bytes of a document read whole; what
// it returns is written, and counted again for --stats when it differs from what the edits
// made (or as it parsed it); its error fails the run, and nothing is written. It is not
// called when the edits change nothing.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	doc := `[{"role":"user","content":"x"}]`
	edited := `[{"role":"user","content":"X"}]`
	longer := `[{"role":"user","content":"X"},{"role":"assistant","content":"a reply the check added, long enough to count"}]`
	// mode: "same" returns the output as it came, "change" returns longer, "parsed"
	// returns it as it came with a parse of longer, "fail" fails.
	var mode string
	var calls int
	var errb bytes.Buffer
	tool := func(countOutput bool) *Tool {
		calls = 0
		errb.Reset()
		return loopTool(func(*Context) Filter {
			return Filter{Plan: func(d *Doc) (*Plan, error) {
				return &Plan{Edits: upper(d.T, d.T), CountOutput: countOutput,
					Check: func(tin *transcript.Transcript, b []byte) ([]byte, *transcript.Transcript, error) {
						calls++
						if tin.Doc != doc || string(b) != edited {
							return nil, nil, fmt.Errorf("check saw %q and %q", tin.Doc, b)
						}
						switch mode {
						case "change":
							return []byte(longer), nil, nil
						case "parsed":
							t, err := transcript.Parse([]byte(longer), transcript.Options{})
							return b, t, err
						case "fail":
							return nil, nil, errors.New("the output breaks a rule")
						}
						return b, nil, nil
					}}, nil
			}}
		})
	}
	before, after := countOf(t, doc, transcript.OpenAI), countOf(t, longer, transcript.OpenAI)
	stats := func(tokensAfter int) string {
		return fmt.Sprintf(`{"tool":"ctx-fake","file":%q,"format":"openai","tokens_before":%d,"tokens_after":%d,"saved":%d,"items":0,"trigger":"","schema_version":1}`+"\n",
			in, before, tokensAfter, before-tokensAfter)
	}
	os.WriteFile(in, []byte(doc), 0o644)
	for _, c := range []struct {
		mode        string
		countOutput bool
		stdout      string
		stats       string
	}{
		// The edits' TokensDelta (0) when the check changes nothing...
		{"same", false, edited, stats(before)},
		// ... the output counted when it does...
		{"change", false, longer, stats(after)},
		// ... or when the plan asks, as the check parsed it.
		{"parsed", true, edited, stats(after)},
	} {
		mode = c.mode
		code, stdout := runLoop(tool(c.countOutput), []string{"--stats", in}, &errb)
		if code != 0 || calls != 1 || stdout != c.stdout || errb.String() != c.stats {
			t.Errorf("%s: exit %d, %d calls, stdout %q, stderr %q\nwant stdout %q, stderr %q", c.mode, code, calls, stdout, errb.String(), c.stdout, c.stats)
		}
	}

	// Nothing to edit: the input is written as it came, without a check.
	mode = "fail"
	none := filepath.Join(dir, "none.json")
	os.WriteFile(none, []byte(`[{"role":"user","content":"y"}]`), 0o644)
	if code, stdout := runLoop(tool(false), []string{none}, &errb); code != 0 || calls != 0 || stdout != `[{"role":"user","content":"y"}]` {
		t.Errorf("no edits: exit %d, %d calls, stdout %q, stderr %q", code, calls, stdout, errb.String())
	}

	// A check that fails fails the run, naming the input, and writes nothing.
	wantErr := fmt.Sprintf("ctx-fake: error: %s: the output breaks a rule\n", in)
	for _, args := range [][]string{{in}, {"-o", out, in}, {"-i", in}} {
		code, stdout := runLoop(tool(false), args, &errb)
		if code != ExitRuntime || stdout != "" || errb.String() != wantErr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 4 and %q", args, code, stdout, errb.String(), wantErr)
		}
		if got, _ := os.ReadFile(in); string(got) != doc {
			t.Errorf("%q: input rewritten: %q", args, got)
		}
		if got := strings.Join(listDir(t, dir), " "); got != "in.json none.json" {
			t.Errorf("%q: directory holds %q", args, got)
		}
	}
}

// TestWrittenAndClose: Plan.Written runs once the document is written (staged for -o),
// before its --stats line, and may change the stats and the tokens; Plan.Close runs last,
// also when writing the document, Written or the check fails.
func TestWrittenAndClose(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	os.WriteFile(in, []byte(`[{"role":"user","content":"x"}]`), 0o644)
	file := filepath.Join(dir, "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)

	var events []string
	var errb bytes.Buffer
	// fail: "" succeeds, "written" fails in Written, "check" fails the check, "edit" fails
	// the edit of the second pass (or of the whole document).
	tool := func(fail string) *Tool {
		events = nil
		errb.Reset()
		return loopTool(func(*Context) Filter {
			return Filter{Plan: func(d *Doc) (*Plan, error) {
				events = append(events, "plan")
				tr := d.T
				var regions []transcript.Span
				for _, m := range tr.Messages {
					regions = append(regions, m.Lines...)
				}
				if !d.Streamed() {
					regions = []transcript.Span{{Start: 0, End: len(tr.Doc)}}
				}
				p := &Plan{Regions: regions, Stats: Stats{Items: 1}}
				p.Edit = func(_ int, text string, base int) ([]transcript.Edit, error) {
					if fail == "edit" {
						return nil, RuntimeError(errors.New("the edit failed"))
					}
					return upper(tr, &transcript.Transcript{Doc: text, Base: base}), nil
				}
				if fail == "check" {
					p.Check = func(*transcript.Transcript, []byte) ([]byte, *transcript.Transcript, error) {
						return nil, nil, errors.New("the check failed")
					}
				}
				p.Written = func(st *Stats) error {
					staged := "nothing staged"
					for _, n := range listDir(t, dir) {
						if strings.HasPrefix(n, ".out.json.") {
							staged = "staged"
						}
					}
					events = append(events, "written: "+staged+", stats "+fmt.Sprint(strings.Count(errb.String(), "\n")))
					if fail == "written" {
						return RuntimeError(errors.New("written failed"))
					}
					st.Items += 41
					p.TokensDelta = -1000 // as ctx-persist learns its savings only once written
					return nil
				}
				p.Close = func() {
					events = append(events, "close, stats "+fmt.Sprint(strings.Count(errb.String(), "\n")))
				}
				return p, nil
			}}
		})
	}
	for _, name := range []string{in, file} {
		code, stdout := runLoop(tool(""), []string{"--stats", "-o", out, name}, &errb)
		want := []string{"plan", "written: staged, stats 0", "close, stats 1"}
		if code != 0 || stdout != "" || fmt.Sprint(events) != fmt.Sprint(want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, events %q\nwant events %q", name, code, stdout, errb.String(), events, want)
		}
		if !strings.Contains(errb.String(), `"items":42`) || !strings.Contains(errb.String(), `"saved":1000`) {
			t.Errorf("%s: stats %q do not have what Written added", name, errb.String())
		}
		os.Remove(out)

		for _, c := range []struct {
			fail string
			args []string
			err  string
			want []string
		}{
			{"written", []string{"-o", out, name}, "ctx-fake: error: written failed\n", []string{"plan", "written: staged, stats 0", "close, stats 0"}},
			{"edit", []string{"-o", out, name}, "ctx-fake: error: the edit failed\n", []string{"plan", "close, stats 0"}},
			{"", []string{"-o", filepath.Join(dir, "no", "such", "dir.json"), name}, "", []string{"plan", "close, stats 0"}},
		} {
			code, stdout := runLoop(tool(c.fail), c.args, &errb)
			if code != ExitRuntime || stdout != "" || (c.err != "" && errb.String() != c.err) || fmt.Sprint(events) != fmt.Sprint(c.want) {
				t.Errorf("%s %q: exit %d, stdout %q, stderr %q, events %q\nwant exit 4, stderr %q, events %q", name, c.fail, code, stdout, errb.String(), events, c.err, c.want)
			}
			if got := strings.Join(listDir(t, dir), " "); got != "in.json s.jsonl" {
				t.Errorf("%s %q: directory holds %q", name, c.fail, got)
			}
		}
	}
	// The check of a document read whole.
	code, _ := runLoop(tool("check"), []string{in}, &errb)
	if want := []string{"plan", "close, stats 0"}; code != ExitRuntime || fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("check: exit %d, stderr %q, events %q, want %q", code, errb.String(), events, want)
	}
}

// TestCountsStreamed: the counts of a streamed document are made in its first pass, when
// the filter says it reads them (Counted) or the run writes --stats; a plan that reads them
// otherwise is a bug in the tier, reported as one. A document read whole is counted when
// asked. Either way they are the counts of the document read whole.
func TestCountsStreamed(t *testing.T) {
	dir := t.TempDir()
	file, chat := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "chat.json")
	os.WriteFile(file, []byte(session), 0o644)
	os.WriteFile(chat, []byte(`[{"role":"user","content":"x"}]`), 0o644)
	tool := func(counted bool) *Tool {
		return loopTool(func(c *Context) Filter {
			return Filter{Counted: counted, Plan: func(d *Doc) (*Plan, error) {
				n, err := d.Counts()
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(c.Stderr, "%s streamed=%v total=%d\n", d.Name, d.Streamed(), n.Total)
				return &Plan{}, nil
			}}
		})
	}
	whole := countOf(t, session, transcript.ClaudeCode)
	var errb bytes.Buffer
	for _, c := range []struct {
		counted bool
		args    []string
		stderr  string
	}{
		{true, []string{file}, fmt.Sprintf("%s streamed=true total=%d\n", file, whole)},
		{false, []string{"--stats", file}, fmt.Sprintf("%s streamed=true total=%d\n", file, whole)},
		{false, []string{chat}, fmt.Sprintf("%s streamed=false total=%d\n", chat, countOf(t, `[{"role":"user","content":"x"}]`, transcript.OpenAI))},
	} {
		errb.Reset()
		code, stdout := runLoop(tool(c.counted), c.args, &errb)
		if first, _, _ := strings.Cut(errb.String(), "\n"); code != 0 || first+"\n" != c.stderr {
			t.Errorf("counted %v %q: exit %d, stdout %q, stderr %q; want %q", c.counted, c.args, code, stdout, errb.String(), c.stderr)
		}
	}
	errb.Reset()
	code, stdout := runLoop(tool(false), []string{file}, &errb)
	want := fmt.Sprintf("ctx-fake: error: internal: the counts of %s were not made in its first pass (Filter.Counted)\n", file)
	if code != ExitRuntime || stdout != "" || errb.String() != want {
		t.Errorf("not counted: exit %d, stdout %q, stderr %q; want %q", code, stdout, errb.String(), want)
	}
}

// TestReadingWhole: ReadingWhole makes a tool read a JSONL transcript whole, with the
// same output.
func TestReadingWhole(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)
	var errb bytes.Buffer
	code, stdout := runLoop(ReadingWhole(editTool(nil, false)), []string{file}, &errb)
	if want := strings.ReplaceAll(session, `"x"`, `"X"`); code != 0 || stdout != want || errb.String() != file+": whole\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q read whole", code, stdout, errb.String(), want)
	}
}

// TestOutputOfStreamed: a new document (Plan.Output) made from a streamed input (ctx-convert
// reads it in its second pass) is written in its place.
func TestOutputOfStreamed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)
	tool := loopTool(func(*Context) Filter {
		return Filter{Plan: func(d *Doc) (*Plan, error) { return &Plan{Output: []byte("{}")}, nil }}
	})
	var errb bytes.Buffer
	code, stdout := runLoop(tool, []string{file}, &errb)
	if code != 0 || stdout != "{}" || errb.String() != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, errb.String())
	}
}

// TestPlanMisuse: what a tier cannot do fails the run with an internal error, not a wrong
// output: reading again a document a report read once, and a plan with both Edits and
// Regions.
func TestPlanMisuse(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "b.jsonl")
	os.WriteFile(b, []byte(session), 0o644)
	var stderr bytes.Buffer
	code, _ := runLoop(loopTool(func(*Context) Filter {
		return Filter{Reports: true, Plan: func(d *Doc) (*Plan, error) {
			return &Plan{}, d.Excerpt([]transcript.Span{{Start: 0, End: 1}})
		}}
	}), []string{b}, &stderr)
	if code != ExitRuntime || !strings.Contains(stderr.String(), "read once") {
		t.Errorf("excerpt of a report's document: exit %d, stderr %q", code, stderr.String())
	}
	for _, name := range []string{b, filepath.Join(dir, "a.json")} {
		os.WriteFile(filepath.Join(dir, "a.json"), []byte(conv("one")), 0o644)
		stderr.Reset()
		code, out := runLoop(loopTool(func(*Context) Filter {
			return Filter{Plan: func(d *Doc) (*Plan, error) {
				span := transcript.Span{Start: 0, End: 1}
				return &Plan{Edits: []transcript.Edit{{Span: span, With: "{"}}, Regions: []transcript.Span{span},
					Edit: func(int, string, int) ([]transcript.Edit, error) { return nil, nil }}, nil
			}}
		}), []string{name}, &stderr)
		if code != ExitRuntime || out != "" || !strings.Contains(stderr.String(), "both Edits and Regions") {
			t.Errorf("%s: Edits and Regions: exit %d, stdout %q, stderr %q", name, code, out, stderr.String())
		}
	}
}
