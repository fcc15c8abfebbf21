package multicall

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/completion"
	"github.com/ctxkit/ctxkit/internal/count"
)

const sample = "../../testdata/session.jsonl"

func run(program string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(program, args, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

// TestDispatch: called by a tool's name, or as ctxkit with the tool's name first (with or
// without "ctx-"), the binary is that tool, byte for byte.
func TestDispatch(t *testing.T) {
	var want bytes.Buffer
	if code := count.Main([]string{"--json", sample}, strings.NewReader(""), &want, &bytes.Buffer{}, func(string) string { return "" }); code != 0 {
		t.Fatalf("ctx-count exit %d", code)
	}
	for _, call := range [][]string{
		{"/usr/local/bin/ctx-count", "--json", sample},
		{"ctx-count.exe", "--json", sample},
		{"ctxkit", "count", "--json", sample},
		{"/opt/ctxkit", "ctx-count", "--json", sample},
	} {
		code, out, errs := run(call[0], call[1:]...)
		if code != 0 || out != want.String() {
			t.Errorf("%v: exit %d, stderr %q, output differs: %v", call, code, errs, out != want.String())
		}
	}
	code, _, errs := run("ctxkit", "frobnicate")
	if code != 2 || !strings.Contains(errs, `ctxkit: error: no tool named "frobnicate"`) || !strings.Contains(errs, "hint:") {
		t.Errorf("unknown tool: exit %d, %q", code, errs)
	}
	code, out, _ := run("ctxkit", "--help")
	if code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	for _, n := range Names() {
		if !strings.Contains(out, n) {
			t.Errorf("--help does not list %s", n)
		}
	}
	if code, _, errs := run("ctxkit"); code != 2 || !strings.Contains(errs, "Usage:") {
		t.Errorf("no arguments: exit %d, %q", code, errs)
	}
}

// TestLink: link makes each tool's name a link to the binary, leaves a right link alone,
// refuses to replace anything else without --force, and never follows a planted link.
func TestLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	dir := t.TempDir()
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	if code, _, errs := run("ctxkit", "link", dir); code != 0 {
		t.Fatalf("link: exit %d: %s", code, errs)
	}
	for _, n := range Names() {
		if target, err := os.Readlink(filepath.Join(dir, n)); err != nil || target != self {
			t.Errorf("%s -> %q, %v; want %s", n, target, err, self)
		}
	}
	// again: nothing to do
	if code, out, _ := run("ctxkit", "link", dir); code != 0 || !strings.Contains(out, "already a link") {
		t.Errorf("second link: exit %d, %q", code, out)
	}
	// a regular file of a tool's name (an older install) and a planted link to a file of
	// someone else's: reported and kept without --force
	old := filepath.Join(dir, "ctx-count")
	os.Remove(old)
	os.WriteFile(old, []byte("old binary"), 0o755)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep me"), 0o600)
	planted := filepath.Join(dir, "ctx-trim")
	os.Remove(planted)
	os.Symlink(victim, planted)
	code, _, errs := run("ctxkit", "link", dir)
	if code != 4 || !strings.Contains(errs, "exists and is not a link to") || !strings.Contains(errs, "--force") {
		t.Errorf("link over other files: exit %d, %q", code, errs)
	}
	if b, _ := os.ReadFile(old); string(b) != "old binary" {
		t.Errorf("the old file was replaced without --force")
	}
	if code, _, errs := run("ctxkit", "link", "--force", dir); code != 0 {
		t.Fatalf("link --force: exit %d: %s", code, errs)
	}
	for _, p := range []string{old, planted} {
		if target, err := os.Readlink(p); err != nil || target != self {
			t.Errorf("--force: %s -> %q, %v", p, target, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the planted link was followed: victim now %q", b)
	}
	if code, _, _ := run("ctxkit", "link", filepath.Join(dir, "missing")); code != 4 {
		t.Errorf("link into a missing directory: exit %d", code)
	}
}

// TestCompletionFiles: completion --dir writes one file per command, named as the shell
// looks for it, readable by everyone (0644: a system-wide folder's scripts are read by
// every user's shell), and each parses in its shell (where the shell is installed).
func TestCompletionFiles(t *testing.T) {
	for _, shell := range completion.Shells {
		dir := t.TempDir()
		if code, _, errs := run("ctxkit", "completion", shell, "--dir", dir); code != 0 {
			t.Fatalf("%s: exit %d: %s", shell, code, errs)
		}
		for _, n := range append(Names(), Name) {
			path := filepath.Join(dir, completion.FileName(shell, n))
			fi, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: %v", shell, err)
				continue
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want 0644", path, fi.Mode())
			}
			if _, err := exec.LookPath(shell); err != nil {
				continue
			}
			if out, err := exec.Command(shell, "-n", path).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", shell, path, err, out)
			}
		}
	}
	if code, _, errs := run("ctxkit", "completion", "tcsh"); code != 2 || !strings.Contains(errs, "bash, zsh, fish") {
		t.Errorf("unknown shell: exit %d, %q", code, errs)
	}
}

// TestBashCompletes runs the bash script as bash would on a Tab: flags after "-", an enum
// flag's values (also after "="), files for a FILE flag, and ctxkit's tool names first.
func TestBashCompletes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	if code, _, errs := run("ctxkit", "completion", "bash", "--dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	os.WriteFile(filepath.Join(dir, "notes.jsonl"), nil, 0o600)
	complete := func(command string, words ...string) string {
		script := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); ` + completion.FuncName(command) + `; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", append([]string{"-c", script, "bash", filepath.Join(dir, command), command}, words...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		return string(out)
	}
	for _, c := range []struct {
		command string
		words   []string
		want    []string
		not     []string
	}{
		{"ctx-count", []string{"--for"}, []string{"--format"}, []string{"--tokenizer"}},
		{"ctx-count", []string{"--format", "c"}, []string{"claude-code", "codex", "cline"}, []string{"anthropic"}},
		{"ctx-count", []string{"--tokenizer", "=", "o"}, []string{"o200k"}, []string{"cl100k"}},
		{"ctx-count", []string{"--tokenizer", "="}, []string{"auto", "api"}, nil},
		{"ctx-budget", []string{"-o", "no"}, []string{"notes.jsonl"}, nil},
		{"ctx-budget", []string{"--cap", ""}, nil, []string{"notes.jsonl"}},
		{"ctx-trim", []string{"--strategy", ""}, []string{"first", "last"}, nil},
		{"ctx-snip", []string{"no"}, []string{"notes.jsonl"}, nil},
		// ctx-proxy reads no document: no file after it (issue 34).
		{"ctx-proxy", []string{"no"}, nil, []string{"notes.jsonl"}},
		// ctx-recall's arguments are a query's words, not files
		{"ctx-recall", []string{"no"}, nil, []string{"notes.jsonl"}},
		{"ctx-recall", []string{"--re"}, []string{"--read", "--regexp"}, nil},
		{"ctxkit", []string{"co"}, []string{"count", "convert", "completion"}, []string{"budget"}},
	} {
		got := strings.Fields(complete(c.command, c.words...))
		for _, w := range c.want {
			if !contains(got, w) {
				t.Errorf("%s %v: %v lacks %s", c.command, c.words, got, w)
			}
		}
		for _, w := range c.not {
			if contains(got, w) {
				t.Errorf("%s %v: %v has %s", c.command, c.words, got, w)
			}
		}
	}
}

// TestFishCompletes asks fish itself what it would complete.
func TestFishCompletes(t *testing.T) {
	if _, err := exec.LookPath("fish"); err != nil {
		t.Skip("no fish")
	}
	dir := t.TempDir()
	if code, _, errs := run("ctxkit", "completion", "fish", "--dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for line, want := range map[string]string{
		"ctx-count --form":       "--format",
		"ctx-count --format=cl":  "--format=cline",
		"ctx-summarize --backen": "--backend",
		"ctx-trim --strategy ":   "first",
		"ctxkit rep":             "repair",
	} {
		name := strings.Fields(line)[0]
		script := `source "$argv[1]"; complete -C "$argv[2]"`
		out, err := exec.Command("fish", "--no-config", "-c", script, filepath.Join(dir, name+".fish"), line).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(string(out), "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		if !contains(got, want) {
			t.Errorf("%q: fish completes %q, want %s", line, got, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
