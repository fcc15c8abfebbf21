package replay

import (
	"strings"
	"testing"
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
