package replay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// A failed stage is reported by its error line, not the hint the tools print after it nor
// the warnings before it.
func TestStageErrorNamesTheError(t *testing.T) {
	for _, c := range []struct{ stderr, want string }{
		{"ctx-budget: error: unknown flag --bogus-flag\nhint: see 'ctx-budget --help'\n", "ctx-budget exited 2: ctx-budget: error: unknown flag --bogus-flag"},
		{"ctx-budget: warning: x\nctx-budget: error: stdin: byte 3: invalid JSON\n", "ctx-budget exited 2: ctx-budget: error: stdin: byte 3: invalid JSON"},
		{"boom\n", "ctx-budget exited 2: boom"},
		{"hint: only a hint\n", "ctx-budget exited 2: hint: only a hint"},
		{"", "ctx-budget exited 2: no message"},
	} {
		got := (&StageError{Stage: "ctx-budget", Code: 2, Stderr: c.stderr}).Error()
		if got != c.want {
			t.Errorf("stderr %q: %q, want %q", c.stderr, got, c.want)
		}
	}
	if got := (&StageError{Stage: "sh -c", Code: 1, Stderr: "a: error: first\nb: error: second\nhint: x"}).Error(); !strings.HasSuffix(got, "b: error: second") {
		t.Errorf("the last error line is not named: %q", got)
	}
}

// --timeout bounds a shell pipeline even when a program it started holds its output open:
// the whole pipeline is stopped, not only the shell.
func TestShellPipelineTimesOut(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh and sleep")
	}
	p, err := ParsePipe("sleep 10; cat", Tools())
	if err != nil || p.InProcess() {
		t.Fatalf("ParsePipe: %v, in process %v", err, p.InProcess())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Run(ctx, []byte("[]"), func(string) string { return "" }, nil)
	var se *StageError
	if !errors.As(err, &se) || se.Code != -1 || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("err %v, want a stage that did not finish", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the pipeline took %v to stop after a 200ms timeout", d.Round(time.Millisecond))
	}
}

// A tool of Tools keeps its command-line parser from run to run: no run may see the flags,
// the variables or the given-ness of the one before. Each run is held to a fresh Main.
func TestReusedToolsForgetTheRunBefore(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "testdata", "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	env := func(vars ...string) func(string) string {
		m := map[string]string{"CTX_CACHE_DIR": "off", "CTX_STORE": store}
		for i := 0; i+1 < len(vars); i += 2 {
			m[vars[i]] = vars[i+1]
		}
		return func(k string) string { return m[k] }
	}
	run := func(main cli.MainFunc, args []string, getenv func(string) string) (int, string, string) {
		var out, errs bytes.Buffer
		code := main(args, bytes.NewReader(doc), &out, &errs, getenv)
		return code, out.String(), errs.String()
	}
	tools := Tools()
	fresh := map[string]cli.MainFunc{"ctx-trim": trim.Main, "ctx-persist": persist.Main}
	for i, c := range []struct {
		tool string
		args []string
		env  func(string) string
	}{
		{"ctx-trim", []string{"--max-tokens", "300"}, env()},
		{"ctx-trim", nil, env()}, // --max-tokens forgotten: the identity
		{"ctx-trim", nil, env("CTX_TRIM_MAX_TOKENS", "300")},
		{"ctx-trim", nil, env()}, // the variable forgotten
		{"ctx-trim", []string{"--bogus"}, env()},
		{"ctx-trim", []string{"--max-tokens", "200"}, env()},
		{"ctx-persist", []string{"--restore"}, env()},
		{"ctx-persist", []string{"--list"}, env()}, // --restore not still given: no xor clash
		{"ctx-persist", []string{"--help"}, env()},
		{"ctx-persist", []string{"--min-size", "100"}, env()},
	} {
		code, out, errs := run(tools[c.tool], c.args, c.env)
		wantCode, wantOut, wantErrs := run(fresh[c.tool], c.args, c.env)
		if code != wantCode || out != wantOut || errs != wantErrs {
			t.Errorf("run %d, %s %q: exit %d, %d bytes out, stderr %q; a fresh Main: exit %d, %d bytes out, stderr %q",
				i, c.tool, c.args, code, len(out), errs, wantCode, len(wantOut), wantErrs)
		}
	}
	if code, out, _ := run(tools["ctx-trim"], []string{"--max-tokens", "300"}, env()); code != 0 || out == string(doc) {
		t.Errorf("ctx-trim --max-tokens 300 did not trim (exit %d): the test proves nothing", code)
	}
}

// The default pipeline runs its five tiers as values over one document; a stage that is
// not a tier's run (ctx-count, a dry run, --restore, flags the tier refuses) runs as its
// command, which reports a bad flag as it always did; shell syntax runs in the shell.
func TestStagesAreTiersWhereTheyCan(t *testing.T) {
	getenv := func(k string) string {
		if k == "CTX_CACHE_DIR" {
			return "off"
		}
		return ""
	}
	for _, c := range []struct {
		pipe  string
		tiers []bool // per stage: a Tier
	}{
		{DefaultPipe, []bool{true, true, true, true, true}},
		{"ctx-persist --restore | ctx-trim -n | ctx-count -p | ctx-snip --no-such-flag | ctx-budget --cap 2000", []bool{false, false, false, false, true}},
		{"ctx-trim --tokenizer o200k --window 20k | ctx-repair", []bool{true, false}},
	} {
		p, err := ParsePipe(c.pipe, Tools())
		if err != nil {
			t.Fatal(err)
		}
		stages, err := p.Stages(getenv, "")
		if err != nil {
			t.Fatalf("%s: %v", c.pipe, err)
		}
		if len(stages.Stages) != len(c.tiers) {
			t.Fatalf("%s: %d stages", c.pipe, len(stages.Stages))
		}
		for i, s := range stages.Stages {
			if (s.Tier != nil) != c.tiers[i] || s.Main == nil {
				t.Errorf("%s: stage %d (%s): a tier %v, want %v (a command always)", c.pipe, i+1, s.Name, s.Tier != nil, c.tiers[i])
			}
		}
	}
	p, err := ParsePipe("ctx-trim | cat", Tools())
	if err != nil {
		t.Fatal(err)
	}
	if stages, err := p.Stages(getenv, ""); stages != nil || err != nil {
		t.Errorf("a shell pipeline made in-process stages (%v)", err)
	}
}
