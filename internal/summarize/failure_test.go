package summarize

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// saysFailure reads lines where failureWords reads the whole output: they agree on every
// result of the samples, the corpus and generated documents, whole and as the head
// outcome scans, and on cases at the edges of failureWords' ^\s* and \b.
func TestSaysFailureIsFailureWords(t *testing.T) {
	cases := []string{
		"", "\n", "ERROR", "ERROR:x", "  \t error x", "\n\n   \n  FAIL", "FAILED\r\n", "FAILX", "FAIL_x", "xFAIL",
		"Error[E0308]: mismatched", "error[\nx]: y", "errors: 0", "\r\rfatal: no", "\f npm ERR! code", "\vERROR x",
		"make: *** [all] Error 2", "make[2]: *** x", "make[x]: ***", "Traceback (most recent call last):",
		"ValueError: bad", "  KeyError:x", "Exception: x", "valueError: x", "x: command not found",
		"failed to solve: x", "ok\nBUILD FAILED", "a\n  \n\tTypeError: x\n", "é\nERROR ", "x\r\nFAIL\r\n",
		"ERROR\n", "Error", "error:", "did not complete successfully", "it returned a non-zero code: 1",
		"\u00a0ERROR x", "ERRORS: 3", "FAILURE", "FAILURES!", "FAILEDx",
	}
	for _, d := range localDocs(t) {
		for mi := range d.t.Messages {
			for bi := range d.t.Messages[mi].Blocks {
				b := &d.t.Messages[mi].Blocks[bi]
				if b.Kind == transcript.ToolResult {
					text := d.t.BodyText(b)
					cases = append(cases, text, scanned(text))
				}
			}
		}
	}
	failing := 0
	for _, c := range cases {
		want := failureWords.MatchString(c)
		if got := saysFailure(c); got != want {
			t.Errorf("saysFailure(%q) = %v, failureWords says %v", clip(c), got, want)
		}
		if want {
			failing++
		}
	}
	if failing == 0 || failing == len(cases) {
		t.Errorf("%d of %d texts say they failed: the test tells nothing", failing, len(cases))
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return strings.Clone(s)
}
