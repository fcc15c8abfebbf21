package replay

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
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
	p, err := ParsePipe("sleep 10; cat", Tools)
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
