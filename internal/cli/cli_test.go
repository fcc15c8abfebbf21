package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// fakeGrammar is the flag struct of a tiny filter used to drive the runner.
type fakeGrammar struct {
	Common `embed:""`
	Action string  `help:"What to do." enum:"upper,same,env" default:"upper"`
	Fail   string  `help:"Fail after writing." enum:"none,check,checkquiet,input,runtime,plain,usage" default:"none"`
	Level  Percent `help:"A percentage." default:"85%"`
	Cap    Size    `help:"A size." default:"30KB"`
	Pad    int     `help:"Bytes of padding in the stats line."`
}

func newTool() *Tool {
	g := &fakeGrammar{}
	return &Tool{
		Name:    "ctx-fake",
		Summary: "Upper-case a document.",
		help:    "A fake filter used by the runner's tests.",
		Grammar: g,
		run:     func(c *Context) error { return fakeRun(c, g) },
	}
}

// fakeRun runs the fake filter through the run loop: every document is read whole and
// written back upper-cased (a new document, Plan.Output), or as a copy of itself
// (--action=same); --action=env writes a report of the flags instead of the document.
// --fail makes the run fail once the loop has written everything.
func fakeRun(c *Context, g *fakeGrammar) error {
	err := c.Run(Filter{
		Whole:   true,
		Reports: g.Action == "env",
		Plan: func(d *Doc) (*Plan, error) {
			if g.Action == "env" {
				return &Plan{Report: fmt.Appendf(nil, "format=%s window=%d tokenizer=%s store=%s level=%s cap=%s color=%v stdout_tty=%v\n",
					c.Common.Format, c.Common.Window, c.Common.Tokenizer, c.Common.Store, g.Level, g.Cap, c.Color, c.StdoutTTY)}, nil
			}
			// d.T.Doc is the whole text of a document read whole.
			out := []byte(d.T.Doc) // a copy: the loop must compare bytes, not slices
			if g.Action == "upper" {
				out = bytes.ToUpper(out)
			}
			extra := map[string]any{"z": "last", "a": 1}
			if g.Pad > 0 {
				extra["pad"] = strings.Repeat("x", g.Pad)
			}
			return &Plan{Output: out, TokensDelta: -2, Stats: Stats{Items: 1, Trigger: "test", Extra: extra}}, nil
		},
	})
	if err != nil {
		return err
	}
	switch g.Fail {
	case "check":
		return WithHint(CheckFailed(errors.New("2 problems found")), "run without --check to fix them")
	case "checkquiet":
		return CheckFailed(nil)
	case "input":
		return fmt.Errorf("parse %q: %w", "x", InputError(errors.New("message 1: tool_result has no tool_use_id")))
	case "runtime":
		return RuntimeError(errors.New("store: disk full"))
	case "plain":
		return errors.New("something broke")
	case "usage":
		return Usagef("bad combination %q", "x")
	}
	return nil
}

// conv is a small conversation document: one user message saying text.
func conv(text string) string {
	return `{"messages":[{"role":"user","content":"` + text + `"}]}`
}

// upperConv is conv(text) as the fake filter writes it.
func upperConv(text string) string { return strings.ToUpper(conv(text)) }

// ttyReader and ttyWriter force the runner's terminal decision.
type ttyReader struct{ t *testing.T }

func (r ttyReader) Read([]byte) (int, error) {
	r.t.Error("runner read from a terminal stdin")
	return 0, io.EOF
}
func (ttyReader) IsTerminal() bool { return true }

type ttyWriter struct{ bytes.Buffer }

func (*ttyWriter) IsTerminal() bool { return true }

type runOpts struct {
	stdin     io.Reader
	stdoutTTY bool
	env       map[string]string
}

func run(t *testing.T, args []string, o runOpts) (code int, stdout, stderr string) {
	t.Helper()
	if o.stdin == nil {
		o.stdin = strings.NewReader(conv("hello") + "\n")
	}
	var out interface {
		io.Writer
		String() string
	} = &bytes.Buffer{}
	if o.stdoutTTY {
		out = &ttyWriter{}
	}
	var errb bytes.Buffer
	getenv := func(k string) string { return o.env[k] }
	code = Main(newTool(), args, o.stdin, out, &errb, getenv)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if err := os.WriteFile(a, []byte(conv("a")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string
	}{
		{"unknown flag", []string{"--nope"}, nil,
			"ctx-fake: error: unknown flag --nope\nhint: see 'ctx-fake --help'\n"},
		{"bad enum", []string{"--format=xml"}, nil,
			"ctx-fake: error: --format must be one of \"auto\",\"anthropic\",\"openai\",\"responses\",\"claude-code\",\"codex\",\"cline\" but got \"xml\"\nhint: see 'ctx-fake --help'\n"},
		{"bad count", []string{"--window=abc"}, nil,
			"ctx-fake: error: --window: invalid token count \"abc\": not a number (want e.g. 200000, 200k or 1.5M)\nhint: see 'ctx-fake --help'\n"},
		{"bad size", []string{"--cap=1XB"}, nil,
			"ctx-fake: error: --cap: invalid size \"1XB\": unknown unit \"XB\" (want e.g. 30000, 30KB or 1MiB)\nhint: see 'ctx-fake --help'\n"},
		{"bad percent", []string{"--level=150%"}, nil,
			"ctx-fake: error: --level: invalid percentage \"150%\": above 100%\nhint: see 'ctx-fake --help'\n"},
		{"bad env count", nil, map[string]string{"CTX_WINDOW": "lots"},
			"ctx-fake: error: --window: invalid token count \"lots\": not a number (want e.g. 200000, 200k or 1.5M) (from $CTX_WINDOW)\nhint: see 'ctx-fake --help'\n"},
		{"bad env enum", nil, map[string]string{"CTX_TOKENIZER": "gpt2"},
			"ctx-fake: error: --tokenizer: must be one of [\"auto\" \"estimate\" \"o200k\" \"cl100k\" \"api\"] but got \"gpt2\" (from $CTX_TOKENIZER)\nhint: see 'ctx-fake --help'\n"},
		{"output and in-place", []string{"-o", "x", "-i", a}, nil,
			"ctx-fake: error: -o/--output and -i/--in-place cannot be used together\nhint: see 'ctx-fake --help'\n"},
		{"in-place without files", []string{"--in-place"}, nil,
			"ctx-fake: error: --in-place needs file arguments\nhint: name the files to edit: ctx-fake -i FILE...\n"},
		{"in-place stdin", []string{"-i", "-"}, nil,
			"ctx-fake: error: --in-place cannot edit stdin (\"-\")\n"},
		{"several files", []string{a, a}, nil,
			"ctx-fake: error: one document at a time; use --in-place to edit several files\nhint: see 'ctx-fake --help'\n"},
		{"usage from run", []string{"--fail=usage"}, nil,
			"ctx-fake: error: bad combination \"x\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args, runOpts{env: tc.env})
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if stderr != tc.stderr {
				t.Errorf("stderr\n got %q\nwant %q", stderr, tc.stderr)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := run(t, []string{"--help"}, runOpts{})
	if code != ExitOK || stderr != "" {
		t.Fatalf("--help: exit %d stderr %q", code, stderr)
	}
	for _, want := range []string{"Usage: ctx-fake", "Upper-case a document.", "A fake filter used by the runner's tests.",
		"Common flags:", "--format=", "($CTX_FORMAT)", "ctxkit/stores", "($CTX_WINDOW)", "($CTX_STATS_FILE)", "-o, --output=FILE", "-i, --in-place", "--version", "--sidechains"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help output lacks %q:\n%s", want, stdout)
		}
	}
	// --version wins over everything else that parses, and Run never starts.
	code, stdout, stderr = run(t, []string{"--fail=plain", "--version"}, runOpts{stdin: ttyReader{t}})
	if code != ExitOK || stderr != "" || stdout != "ctx-fake "+Version()+"\n" {
		t.Fatalf("--version: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		fail   string
		code   int
		stdout string
		stderr string
	}{
		{"none", ExitOK, upperConv("hello") + "\n", ""},
		{"check", ExitCheck, upperConv("hello") + "\n", "ctx-fake: error: 2 problems found\nhint: run without --check to fix them\n"},
		{"checkquiet", ExitCheck, upperConv("hello") + "\n", ""},
		{"input", ExitInput, "", "ctx-fake: error: parse \"x\": message 1: tool_result has no tool_use_id\n"},
		{"runtime", ExitRuntime, "", "ctx-fake: error: store: disk full\n"},
		{"plain", ExitRuntime, "", "ctx-fake: error: something broke\n"},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			code, stdout, stderr := run(t, []string{"--fail=" + tc.fail}, runOpts{})
			if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
				t.Errorf("exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q",
					code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestStdinTerminal(t *testing.T) {
	code, stdout, stderr := run(t, nil, runOpts{stdin: ttyReader{t}})
	want := "ctx-fake: error: no input: reading a document from a terminal\nhint: pipe a document in or name a file: ctx-fake FILE\n"
	if code != ExitUsage || stdout != "" || stderr != want {
		t.Errorf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	// A file argument is read even when stdin is a terminal.
	f := filepath.Join(t.TempDir(), "doc.json")
	os.WriteFile(f, []byte(conv("abc")), 0o644)
	code, stdout, stderr = run(t, []string{f}, runOpts{stdin: ttyReader{t}})
	if code != ExitOK || stdout != upperConv("abc") || stderr != "" {
		t.Errorf("file arg: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestMissingFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nope.json")
	code, stdout, stderr := run(t, []string{name}, runOpts{})
	want := fmt.Sprintf("ctx-fake: error: read %q: no such file or directory\n", name)
	if code != ExitRuntime || stdout != "" || stderr != want {
		t.Errorf("exit %d stdout %q stderr %q, want %q", code, stdout, stderr, want)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestOutputAtomic(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	out := filepath.Join(dir, "out.json")
	os.WriteFile(in, []byte(conv("b")), 0o644)

	// A new file gets 0644 and the content; stdout stays empty.
	code, stdout, stderr := run(t, []string{"-o", out, in}, runOpts{})
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != upperConv("b") {
		t.Errorf("out = %q", b)
	}
	if st, err := os.Stat(out); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", st.Mode().Perm())
	}

	// An existing file keeps its mode.
	os.Chmod(out, 0o600)
	os.WriteFile(in, []byte(conv("second")), 0o644)
	if code, _, stderr := run(t, []string{"--output=" + out, in}, runOpts{}); code != 0 {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != upperConv("second") {
		t.Errorf("out = %q", b)
	}
	if st, err := os.Stat(out); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
	}

	// On an error the target is untouched and no temp file is left.
	if code, _, _ := run(t, []string{"-o", out, "--fail=runtime", in}, runOpts{}); code != ExitRuntime {
		t.Fatalf("exit %d", code)
	}
	if b, _ := os.ReadFile(out); string(b) != upperConv("second") {
		t.Errorf("failed run changed -o file: %q", b)
	}
	fresh := filepath.Join(dir, "fresh.json")
	if code, _, _ := run(t, []string{"-o", fresh, "--fail=input", in}, runOpts{}); code != ExitInput {
		t.Fatalf("exit %d", code)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "in.json out.json" {
		t.Errorf("directory holds %q, want only in.json out.json", got)
	}

	// A symlink target is refused (exit 4, a hint naming the real file), and the file it
	// points to is left alone: a link planted in a cloned repository cannot aim a run's
	// output at another file.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("out.json", link); err != nil {
		t.Skip("no symlinks:", err)
	}
	os.WriteFile(in, []byte(conv("third")), 0o644)
	code, _, stderr = run(t, []string{"-o", link, in}, runOpts{})
	if code != ExitRuntime || !strings.Contains(stderr, "is a symbolic link") || !strings.Contains(stderr, "hint: ") || !strings.Contains(stderr, out) {
		t.Fatalf("exit %d stderr %q; want 4, the link refused and %s named", code, stderr, out)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced by a file")
	}
	if b, _ := os.ReadFile(out); string(b) != upperConv("second") {
		t.Errorf("out = %q, written through the link", b)
	}
}

// TestTempFilesOfKilledRuns: temp files a killed run left beside an -o or -i file are
// removed by the next run once stale; recent ones (a live run's) and other names are kept.
func TestTempFilesOfKilledRuns(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	os.WriteFile(in, []byte(conv("x")), 0o644)
	old := time.Now().Add(-time.Hour)
	stale := []string{".out.json.00112233aabbccdd.tmp", ".in.json.00112233aabbccdd.tmp"}
	kept := []string{".out.json.0011223344556677.tmp", ".out.json.notours.tmp", "notes.tmp"}
	for _, n := range append(stale, kept...) {
		os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o600)
	}
	for _, n := range append(stale, kept[1:]...) {
		os.Chtimes(filepath.Join(dir, n), old, old)
	}
	if code, _, stderr := run(t, []string{"-o", out, in}, runOpts{}); code != 0 {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, []string{"-i", in}, runOpts{}); code != 0 {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	want := append([]string{"in.json", "out.json"}, kept...)
	sort.Strings(want)
	if got := strings.Join(listDir(t, dir), " "); got != strings.Join(want, " ") {
		t.Errorf("directory holds %q, want %q", got, strings.Join(want, " "))
	}
}

// TestInPlaceRefusesALink: -i on a symbolic link is refused; neither the link nor its
// target changes.
func TestInPlaceRefusesALink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.jsonl"), filepath.Join(dir, "link.jsonl")
	os.WriteFile(real, []byte(conv("one")+"\n"), 0o644)
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	code, _, stderr := run(t, []string{"-i", link}, runOpts{})
	if code != ExitRuntime || !strings.Contains(stderr, real) {
		t.Fatalf("exit %d stderr %q; want 4 and the real file named", code, stderr)
	}
	if b, _ := os.ReadFile(real); string(b) != conv("one")+"\n" {
		t.Errorf("target rewritten: %q", b)
	}
}

func TestInPlace(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(a, []byte(conv("one")+"\n"), 0o640)
	os.WriteFile(b, []byte(conv("two")+"\n"), 0o644)
	code, stdout, stderr := run(t, []string{"--in-place", a, b}, runOpts{})
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	for name, want := range map[string]string{a: upperConv("one") + "\n", b: upperConv("two") + "\n"} {
		if got, _ := os.ReadFile(name); string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if st, _ := os.Stat(a); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", st.Mode().Perm())
	}
	if got := strings.Join(listDir(t, dir), " "); got != "a.jsonl b.jsonl" {
		t.Errorf("directory holds %q", got)
	}

	// An error in the run, after every file was staged, leaves every file as it was.
	os.WriteFile(a, []byte(conv("one")+"\n"), 0o640)
	os.WriteFile(b, []byte(conv("two")+"\n"), 0o644)
	if code, _, _ := run(t, []string{"-i", "--fail=plain", a, b}, runOpts{}); code != ExitRuntime {
		t.Fatalf("exit %d", code)
	}
	for name, want := range map[string]string{a: conv("one") + "\n", b: conv("two") + "\n"} {
		if got, _ := os.ReadFile(name); string(got) != want {
			t.Errorf("failed run rewrote %s: %q", name, got)
		}
	}
	// So does an input that is not a document, after the first was staged.
	os.WriteFile(b, []byte("two\n"), 0o644)
	if code, _, _ := run(t, []string{"-i", a, b}, runOpts{}); code != ExitInput {
		t.Fatalf("exit %d", code)
	}
	if got, _ := os.ReadFile(a); string(got) != conv("one")+"\n" {
		t.Errorf("failed run rewrote %s: %q", a, got)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "a.jsonl b.jsonl" {
		t.Errorf("directory holds %q", got)
	}
}

func TestInPlaceIdenticalKeepsMtime(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	os.WriteFile(a, []byte(conv("same")), 0o644)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	os.Chtimes(a, old, old)
	if code, _, stderr := run(t, []string{"-i", "--action=same", a}, runOpts{}); code != 0 {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	if st, _ := os.Stat(a); !st.ModTime().Equal(old) {
		t.Errorf("identical output changed mtime to %v", st.ModTime())
	}
	// The same run with a real change does rewrite it.
	if code, _, _ := run(t, []string{"-i", a}, runOpts{}); code != 0 {
		t.Fatal("exit", code)
	}
	if st, _ := os.Stat(a); st.ModTime().Equal(old) {
		t.Errorf("changed output kept the old mtime")
	}
}

// TestStatsStderr: the loop writes the plan's stats with the file, the format and the
// document's tokens filled in (after: before plus the plan's TokensDelta).
func TestStatsStderr(t *testing.T) {
	code, stdout, stderr := run(t, []string{"--stats", "--format=openai"}, runOpts{})
	before := countOf(t, conv("hello")+"\n", transcript.OpenAI)
	want := fmt.Sprintf(`{"tool":"ctx-fake","file":"-","format":"openai","tokens_before":%d,"tokens_after":%d,"saved":2,"items":1,"trigger":"test","a":1,"z":"last","schema_version":1}`, before, before-2) + "\n"
	if code != 0 || stdout != upperConv("hello")+"\n" || stderr != want {
		t.Errorf("exit %d stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
	// Without --stats nothing is written.
	if _, _, stderr := run(t, nil, runOpts{}); stderr != "" {
		t.Errorf("stats without --stats: %q", stderr)
	}
	// Each file of an --in-place run has its line, counted with its format's tokenizer.
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	docA, docB := `{"system":"be brief","messages":[{"role":"user","content":"one"}]}`, `[{"role":"user","content":"a longer message, counted again"}]`
	os.WriteFile(a, []byte(docA), 0o644)
	os.WriteFile(b, []byte(docB), 0o644)
	code, _, stderr = run(t, []string{"--stats", "-i", a, b}, runOpts{})
	var lines []string
	for _, f := range []struct {
		name, text string
		format     transcript.Format
	}{{a, docA, transcript.Anthropic}, {b, docB, transcript.OpenAI}} {
		n := countOf(t, f.text, f.format)
		lines = append(lines, fmt.Sprintf(`{"tool":"ctx-fake","file":%q,"format":%q,"tokens_before":%d,"tokens_after":%d,"saved":2,"items":1,"trigger":"test","a":1,"z":"last","schema_version":1}`+"\n", f.name, f.format, n, n-2))
	}
	if code != 0 || stderr != strings.Join(lines, "") {
		t.Errorf("--in-place: exit %d\nstderr %q\nwant   %q", code, stderr, strings.Join(lines, ""))
	}
}

// countOf is the tokens of doc as the run loop counts them: the format's default tokenizer
// over the parsed conversation.
func countOf(t *testing.T, doc string, format transcript.Format) int {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{Format: format})
	if err != nil {
		t.Fatal(err)
	}
	counter, err := tokens.New(tokens.DefaultTokenizer(string(format)))
	if err != nil {
		t.Fatal(err)
	}
	n := measure.Total(tr, counter)
	if n <= 2 {
		t.Fatalf("%s counts %d tokens: too few to tell", doc, n)
	}
	return n
}

// TestStatsFileRefusesALink: --stats-file does not append through a symbolic link.
func TestStatsFileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	victim, link := filepath.Join(dir, "victim"), filepath.Join(dir, "stats.jsonl")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	if err := os.Symlink(victim, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	code, stdout, stderr := run(t, []string{"--stats-file", link}, runOpts{})
	if code != ExitRuntime || stdout != "" || !strings.Contains(stderr, "is a symbolic link") {
		t.Errorf("exit %d stdout %q stderr %q; want 4 and the link refused", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("appended through the link: %q", b)
	}
}

func TestStatsFileConcurrent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stats.jsonl")
	const n = 20
	const pad = 64 << 10 // large lines make torn writes visible
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			code := Main(newTool(), []string{"--pad", fmt.Sprint(pad)}, strings.NewReader(conv(fmt.Sprint(i))), &out, &errb,
				func(k string) string {
					if k == "CTX_STATS_FILE" {
						return file
					}
					return ""
				})
			if code != 0 || errb.Len() != 0 {
				t.Errorf("run %d: exit %d stderr %q", i, code, errb.String())
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || len(m["pad"].(string)) != pad {
			t.Errorf("line %d is not a whole stats record: %v", i, err)
		}
	}
}

func TestEnv(t *testing.T) {
	env := map[string]string{"CTX_FORMAT": "openai", "CTX_WINDOW": "200k", "CTX_TOKENIZER": "o200k", "CTX_STORE": "kept"}
	_, stdout, stderr := run(t, []string{"--action=env"}, runOpts{env: env})
	want := "format=openai window=200000 tokenizer=o200k store=kept level=85% cap=30KB color=false stdout_tty=false\n"
	if stdout != want || stderr != "" {
		t.Errorf("stdout %q stderr %q\nwant %q", stdout, stderr, want)
	}
	// The command line beats the environment.
	_, stdout, _ = run(t, []string{"--action=env", "--format=anthropic", "--window=1M"}, runOpts{env: env})
	if !strings.HasPrefix(stdout, "format=anthropic window=1000000 ") {
		t.Errorf("flags did not override env: %q", stdout)
	}
}

func TestColorAndPretty(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"NO_COLOR": "1"}, false},
		{map[string]string{"TERM": "dumb"}, false},
	} {
		_, stdout, _ := run(t, []string{"--action=env"}, runOpts{stdoutTTY: true, env: tc.env})
		if !strings.HasSuffix(stdout, fmt.Sprintf("color=%v stdout_tty=true\n", tc.want)) {
			t.Errorf("env %v: %q", tc.env, stdout)
		}
	}
	// A terminal gets indented JSON; a pipe gets the bytes as they are.
	doc := `{"messages":[{"role":"user","content":[{"type":"text","text":"c"}]}]}`
	_, stdout, _ := run(t, []string{"--action=same"}, runOpts{stdin: strings.NewReader(doc), stdoutTTY: true})
	want := "{\n  \"messages\": [\n    {\n      \"role\": \"user\",\n      \"content\": [\n        {\n          \"type\": \"text\",\n          \"text\": \"c\"\n        }\n      ]\n    }\n  ]\n}\n"
	if stdout != want {
		t.Errorf("tty output %q, want %q", stdout, want)
	}
	_, stdout, _ = run(t, []string{"--action=same"}, runOpts{stdin: strings.NewReader(doc)})
	if stdout != doc {
		t.Errorf("piped output %q, want %q", stdout, doc)
	}
}

// TestDefaultStore: with no store named, the store is the working directory's in the
// user's state directory, never in the working directory; none when there is no state
// directory. A store named (flag or CTX_STORE) is kept as named, "" included.
func TestDefaultStore(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	name := store.ProjectName(wd)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/home/me"}, filepath.Join("/xdg", "ctxkit", "stores", name)},
		{nil, map[string]string{"HOME": "/home/me"}, filepath.Join("/home/me", ".local", "state", "ctxkit", "stores", name)},
		{nil, nil, ""},
		{nil, map[string]string{"HOME": "/home/me", "CTX_STORE": "mine"}, "mine"},
		{[]string{"--store", "there"}, map[string]string{"HOME": "/home/me"}, "there"},
		{[]string{"--store", ""}, map[string]string{"HOME": "/home/me"}, ""},
	} {
		var got string
		tool := newTool()
		run := tool.run
		tool.run = func(c *Context) error { got = c.Common.Store; return run(c) }
		var out, errb bytes.Buffer
		Main(tool, tc.args, strings.NewReader(conv("x")), &out, &errb, func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("args %q env %v: store %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// TestGiven: Given tells a flag the user set (by flag or CTX_ variable) from a default.
func TestGiven(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want bool
	}{{nil, "", false}, {[]string{"--store", ".ctx-store"}, "", true}, {nil, "elsewhere", true}} {
		var got bool
		tool := newTool()
		run := tool.run
		tool.run = func(c *Context) error { got = c.Given("store"); return run(c) }
		var out, errb bytes.Buffer
		Main(tool, tc.args, strings.NewReader(conv("x")), &out, &errb, func(k string) string {
			if k == "CTX_STORE" {
				return tc.env
			}
			return ""
		})
		if got != tc.want {
			t.Errorf("args %q CTX_STORE=%q: Given(store) = %v, want %v", tc.args, tc.env, got, tc.want)
		}
	}
}

// TestHelpDefaultsExamplesOmit: --help shows each flag's default, the tool's examples
// last, and not the common flags the tool does not take; those stay out of completions
// too but still parse, so one CTX_* environment serves every tool of a pipeline.
func TestHelpDefaultsExamplesOmit(t *testing.T) {
	tool := func() *Tool {
		tl := newTool()
		tl.omit = []string{"store", "in-place"}
		tl.examples = []Example{{Does: "shout a conversation", Command: "ctx-fake convo.json"}}
		return tl
	}
	var out, errb bytes.Buffer
	if code := Main(tool(), []string{"--help"}, strings.NewReader(""), &out, &errb, nil); code != 0 || errb.Len() > 0 {
		t.Fatalf("--help: exit %d stderr %q", code, errb.String())
	}
	help := out.String()
	for _, want := range []string{"(default upper).", "(default 85%).", "(default 30KB).", "(default auto)",
		"\nExamples:\n  # shout a conversation\n  ctx-fake convo.json\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	for _, not := range []string{"--store", "--in-place", "(default false)", "(default )"} {
		if strings.Contains(help, not) {
			t.Errorf("--help shows %q:\n%s", not, help)
		}
	}
	if !strings.HasSuffix(help, "ctx-fake convo.json\n") {
		t.Errorf("examples are not last:\n%s", help)
	}
	flags, _, err := Flags(tool())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flags {
		if f.Long == "store" || f.Long == "in-place" {
			t.Errorf("completions offer --%s", f.Long)
		}
	}
	// An omitted flag still parses.
	out.Reset()
	if code := Main(tool(), []string{"--action=env", "--store=elsewhere"}, strings.NewReader(conv("a")), &out, &errb, nil); code != 0 || !strings.Contains(out.String(), "store=elsewhere") {
		t.Errorf("--store on a tool that omits it: exit %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	// Omitting a flag that is not a common one is the tool's bug, found at once.
	bad := newTool()
	bad.omit = []string{"action"}
	errb.Reset()
	if code := Main(bad, []string{"--help"}, strings.NewReader(""), &out, &errb, nil); code != ExitRuntime || !strings.Contains(errb.String(), `omit "action": not a common flag`) {
		t.Errorf("omit of a tool flag: exit %d stderr %q", code, errb.String())
	}
}

// TestOmitFiles: a tool that reads no document (ctx-proxy) omits "file": its --help and its
// completions name no file arguments, and a file argument is a usage error.
func TestOmitFiles(t *testing.T) {
	tool := func() *Tool {
		tl := newTool()
		tl.omit = []string{"file"}
		return tl
	}
	var out, errb bytes.Buffer
	if code := Main(tool(), []string{"--help"}, strings.NewReader(""), &out, &errb, nil); code != 0 || errb.Len() > 0 {
		t.Fatalf("--help: exit %d stderr %q", code, errb.String())
	}
	if help := out.String(); strings.Contains(help, "<file>") || strings.Contains(help, "Input documents") {
		t.Errorf("--help names file arguments:\n%s", help)
	}
	if _, files, err := Flags(tool()); err != nil || files {
		t.Errorf("Flags: files = %v, err %v; want no file arguments", files, err)
	}
	out.Reset()
	errb.Reset()
	if code := Main(tool(), []string{"x.json"}, strings.NewReader(conv("a")), &out, &errb, nil); code != ExitUsage || out.Len() > 0 || !strings.Contains(errb.String(), `unexpected argument x.json`) {
		t.Errorf("a file argument: exit %d stdout %q stderr %q, want exit 2", code, out.String(), errb.String())
	}
	// Without the omission the same tool takes files.
	if _, files, err := Flags(newTool()); err != nil || !files {
		t.Errorf("Flags of a filter: files = %v, err %v", files, err)
	}
}
