package summarize

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// saysFailure reads lines where failureWords reads the whole output: they agree on every
// result of the samples, the corpus and generated documents, whole and as the head
// outcome scans, and on cases at the edges of failureWords' ^\s* and \b. And outcome,
// which reads the first error of a run only when it failed, says what it said when it
// read it of every run.
func TestSaysFailureIsFailureWords(t *testing.T) {
	docs := localDocs(t)
	if testing.Short() || !invariant.IsLong() { // the samples and generated documents only
		docs = slices.DeleteFunc(docs, func(d localDoc) bool { return strings.Contains(filepath.ToSlash(d.name), "/shared/corpus/") })
	}
	t.Run("saysFailure", func(t *testing.T) { saysFailureIsFailureWords(t, docs) })
	t.Run("outcome", func(t *testing.T) { outcomeReadsErrorsOfFailuresOnly(t, docs) })
}

func saysFailureIsFailureWords(t *testing.T, docs []localDoc) {
	cases := []string{
		"", "\n", "ERROR", "ERROR:x", "  \t error x", "\n\n   \n  FAIL", "FAILED\r\n", "FAILX", "FAIL_x", "xFAIL",
		"Error[E0308]: mismatched", "error[\nx]: y", "errors: 0", "\r\rfatal: no", "\f npm ERR! code", "\vERROR x",
		"make: *** [all] Error 2", "make[2]: *** x", "make[x]: ***", "Traceback (most recent call last):",
		"ValueError: bad", "  KeyError:x", "Exception: x", "valueError: x", "x: command not found",
		"failed to solve: x", "ok\nBUILD FAILED", "a\n  \n\tTypeError: x\n", "é\nERROR ", "x\r\nFAIL\r\n",
		"ERROR\n", "Error", "error:", "did not complete successfully", "it returned a non-zero code: 1",
		"\u00a0ERROR x", "ERRORS: 3", "FAILURE", "FAILURES!", "FAILEDx",
	}
	for _, d := range docs {
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

// outcomeEager is outcome as it was, reading the first error of every run.
func outcomeEager(cmd, text string, isError bool) (string, bool, string) {
	code := -1
	if out, meta := transcript.ShellWrapper(text); out.Exists() {
		if c := meta.Get("exit_code"); c.Exists() {
			code = int(c.Int())
		}
		text = out.String()
	}
	head := scanned(text)
	if code < 0 && (strings.Contains(head, "xit") || strings.Contains(head, "XIT")) {
		if m := exitCode.FindStringSubmatch(head); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
	}
	summary, firstErr := budget.Verdict(strings.Split(head, "\n"))
	failed := isError || code > 0
	if !failed && (code < 0 || statusHidden(cmd)) && failureWords.MatchString(head) {
		if program, _ := commandRun(cmd); program != "" && !printsData[program] {
			failed = true
			if firstErr == "" {
				firstErr = failureLine(head)
			}
		}
	}
	if code == 1 && noMatchIsOne(cmd) {
		failed, firstErr = false, ""
	}
	if failed {
		if tb := traceback(text); tb != "" {
			firstErr = tb
		}
	}
	return outcomeLine(text, code, isError, summary, failed, firstErr)
}

// outcome reads the first error only of a run that failed, and says what outcomeEager
// says of every tool result of the samples, the corpus and generated documents, as the
// result of a build, a search and a pipeline, failed or not.
func outcomeReadsErrorsOfFailuresOnly(t *testing.T, docs []localDoc) {
	cmds := []string{"make test", "grep -rn foo .", "go build ./... | tail -5"}
	n, failing := 0, 0
	for _, d := range docs {
		for mi := range d.t.Messages {
			for bi := range d.t.Messages[mi].Blocks {
				b := &d.t.Messages[mi].Blocks[bi]
				if b.Kind != transcript.ToolResult {
					continue
				}
				text := d.t.BodyText(b)
				for _, cmd := range cmds {
					for _, isError := range []bool{false, true} {
						s, f, e := outcome(cmd, text, isError)
						ws, wf, we := outcomeEager(cmd, text, isError)
						if s != ws || f != wf || e != we {
							t.Errorf("%s: outcome(%q, %q, %v) = %q %v %q, want %q %v %q", d.name, cmd, clip(text), isError, s, f, e, ws, wf, we)
						}
						n++
						if wf && !isError {
							failing++
						}
					}
				}
			}
		}
	}
	if failing == 0 {
		t.Errorf("none of %d outcomes failed by its output alone: the test tells little", n)
	}
}
