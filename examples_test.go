package ctxkit_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/count"
)

// The examples in examples/ run here on the sample sessions of testdata/, with the tools
// as TestMain put them on $PATH (this test binary under each tool's name): offline, and
// failing when a tool's flags or output change under them.

// sessionFolder is a folder holding a copy of every sample session log (*.jsonl), as a
// user's session folder would.
func sessionFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if len(logs) < 2 {
		t.Fatalf("want at least two sample sessions, have %v", logs)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(l)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runExample runs name with args in dir, with env added to the environment, and returns
// its exit status and combined output.
func runExample(t *testing.T, dir string, env []string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// The test's environment without the CTX_ variables a developer may have set.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CTX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CTX_CACHE_DIR="+filepath.Join(dir, ".cache"), "XDG_STATE_HOME="+filepath.Join(dir, ".state"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("%s: %v", name, err)
	}
	return 0, string(out)
}

// tokensIn is ctx-count's report of file, measured against window with no reserve.
func tokensIn(t *testing.T, file, window string) count.Report {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return countReport(t, doc, "--window", window, "--reserve", "0")
}

func TestExampleMakefile(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make:", err)
	}
	sessions := sessionFolder(t)
	work := filepath.Dir(sessions)
	makefile, err := filepath.Abs(filepath.Join("examples", "budget", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	const budget = "10k" // the larger sample is about 24k tokens
	code, out := runExample(t, work, nil, "make", "-f", makefile, "BUDGET="+budget, "check")
	if code != 0 {
		t.Fatalf("make check: exit %d\n%s", code, out)
	}
	logs, _ := filepath.Glob(filepath.Join(sessions, "*.jsonl"))
	for _, l := range logs {
		copied := filepath.Join(work, "out", filepath.Base(l))
		after := tokensIn(t, copied, budget)
		if after.Tokens > 10000 {
			t.Errorf("%s: %d tokens, over the budget of %s", copied, after.Tokens, budget)
		}
		before := tokensIn(t, l, budget)
		t.Logf("%s: %d tokens, %d in the copy", filepath.Base(l), before.Tokens, after.Tokens)
	}
	if _, err := os.Stat(filepath.Join(work, "out", ".ctx-store")); err != nil {
		t.Errorf("no store beside the copies: %v", err)
	}
	// Up to date: a second run remakes nothing; a session that changes is remade.
	code, out = runExample(t, work, nil, "make", "-f", makefile, "BUDGET="+budget)
	if code != 0 || !strings.Contains(out, "Nothing to be done") {
		t.Errorf("second make: exit %d, remade something:\n%s", code, out)
	}
	// A budget nothing fits in fails the check (exit 2 from make, ctx-count's error shown).
	code, out = runExample(t, work, nil, "make", "-f", makefile, "BUDGET=100", "check")
	if code == 0 || !strings.Contains(out, "above 100% utilization") {
		t.Errorf("make check with a budget of 100 tokens: exit %d\n%s", code, out)
	}
}

func TestExampleCIStep(t *testing.T) {
	sessions := sessionFolder(t)
	work := filepath.Dir(sessions)
	script, err := filepath.Abs(filepath.Join("examples", "ci", "check-transcripts.sh"))
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(sessions, "*.jsonl"))
	// At their models' windows the samples fit: the step passes and keeps the report.
	code, out := runExample(t, work, nil, "sh", append([]string{script}, logs...)...)
	if code != 0 || out != "" {
		t.Errorf("fitting transcripts: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "ctx-count.jsonl")); err != nil || bytes.Count(b, []byte("\n")) != len(logs) {
		t.Errorf("report: %v, %d lines for %d transcripts", err, bytes.Count(b, []byte("\n")), len(logs))
	}
	// In a 26k window the larger one (24k tokens) is over 85%: the step fails with an annotation.
	code, out = runExample(t, work, []string{"CTX_WINDOW=26k", "CTX_RESERVE=0"}, "sh", append([]string{script}, logs...)...)
	if code != 1 || !regexp.MustCompile(`(?m)^::error::an agent transcript is over 85% `).MatchString(out) ||
		!strings.Contains(out, "ctx-count: error: 1 of 2 documents above 85% utilization") {
		t.Errorf("a transcript over 85%%: exit %d\n%s", code, out)
	}
	// FAIL_OVER moves the line.
	if code, out = runExample(t, work, []string{"CTX_WINDOW=26k", "CTX_RESERVE=0", "FAIL_OVER=95%"}, "sh", append([]string{script}, logs...)...); code != 0 {
		t.Errorf("FAIL_OVER=95%%: exit %d\n%s", code, out)
	}
	// No transcript in the change: nothing to check.
	if code, out = runExample(t, work, nil, "sh", script); code != 0 || !strings.Contains(out, "no agent transcripts") {
		t.Errorf("no transcripts: exit %d\n%s", code, out)
	}
	// A file that is not a transcript is not a pass.
	os.WriteFile(filepath.Join(work, "notes.jsonl"), []byte("not json\n"), 0o644)
	if code, out = runExample(t, work, nil, "sh", script, "notes.jsonl"); code != 3 {
		t.Errorf("not a transcript: exit %d, want 3\n%s", code, out)
	}
}

func TestExampleLoop(t *testing.T) {
	sessions := sessionFolder(t)
	work := filepath.Dir(sessions)
	script, err := filepath.Abs(filepath.Join("examples", "loop", "compact-folder.sh"))
	if err != nil {
		t.Fatal(err)
	}
	code, out := runExample(t, work, nil, "sh", script, sessions, "compacted")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	logs, _ := filepath.Glob(filepath.Join(sessions, "*.jsonl"))
	line := regexp.MustCompile(`^(\S+\.jsonl): (-?\d+) tokens saved$`)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(logs) {
		t.Fatalf("%d lines for %d sessions:\n%s", len(lines), len(logs), out)
	}
	for i, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != filepath.Base(logs[i]) {
			t.Errorf("line %q, want %s: N tokens saved", l, filepath.Base(logs[i]))
			continue
		}
		before := tokensIn(t, logs[i], "200k")
		after := tokensIn(t, filepath.Join(work, "compacted", m[1]), "200k")
		if want := before.Tokens - after.Tokens; m[2] != strconv.Itoa(want) {
			t.Errorf("%s: says %s saved, the counts say %d", m[1], m[2], want)
		}
	}
	// The originals are left alone.
	for _, l := range logs {
		a, _ := os.ReadFile(l)
		b, _ := os.ReadFile(filepath.Join("testdata", filepath.Base(l)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s changed", l)
		}
	}
	// An empty folder is no error.
	empty := filepath.Join(work, "empty")
	os.Mkdir(empty, 0o755)
	if code, out := runExample(t, work, nil, "sh", script, empty, "none"); code != 0 || out != "" {
		t.Errorf("empty folder: exit %d\n%s", code, out)
	}
}
