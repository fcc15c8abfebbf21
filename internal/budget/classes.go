package budget

import "strings"

// Class is what a line of command output says, as ctx-budget's cut reads it: the one
// classifier of command output (DESIGN §3), which ctx-recall's outline of a stored log
// uses too.
type Class uint8

// The classes a line can have; Other is a line that says nothing in particular.
const (
	Other Class = iota
	TestFailure
	Error
	Diagnostic
	Frame
	Warning
)

// String names the class.
func (c Class) String() string {
	switch c {
	case TestFailure:
		return "test"
	case Error:
		return "error"
	case Diagnostic:
		return "diagnostic"
	case Frame:
		return "frame"
	case Warning:
		return "warning"
	}
	return "other"
}

// Classify gives each line the class ctx-budget's cut gives it for what it says (a failing
// test or a summary of counts, an error, a compiler's or linter's diagnostic, a stack
// frame, a warning), with its rules for lines said again or too often: a repeated line and
// most lines of a shape that many share are Other. Lines kept only as context or as the
// output's first and last lines are Other too.
func Classify(lines []string) []Class {
	kind, _, _ := classify(lines, "", nil, nil, 0)
	out := make([]Class, len(lines))
	for i, k := range kind {
		switch k {
		case kindTest:
			out[i] = TestFailure
		case kindError:
			out[i] = Error
		case kindDiagnostic:
			out[i] = Diagnostic
		case kindFrame:
			out[i] = Frame
		case kindWarning:
			out[i] = Warning
		}
	}
	return out
}

// Verdict reads how a run ended from its output's lines, as Classify reads them: summary is
// the last line that sums the run up (sumsUp), failure the first that says a test
// failed, an error or a compiler's diagnostic (a count says so only when it counts what
// failed: "3 failed", not "10 passed in 0.41s" or "Resolved 28 packages"). Either is ""
// when no line says so.
func Verdict(lines []string) (summary, failure string) {
	return Summary(lines), Failure(lines)
}

// Summary is Verdict's summary alone, which reads each line by itself: a caller that
// needs the failure only when the run failed need not classify the lines of every run.
func Summary(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if sumsUp(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

// Failure is Verdict's failure alone.
func Failure(lines []string) string {
	kind, _, _ := classify(lines, "", nil, nil, 0)
	for i, k := range kind {
		switch line := lines[i]; k {
		case kindError, kindDiagnostic:
			return strings.TrimSpace(line)
		case kindTest:
			if !isSummary(line) || countsFailure(line) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

// countsFailure reports whether a line of counts counts something that failed ("3
// failed, 10 passed"), rather than only what passed or counts of none ("0 errors").
func countsFailure(line string) bool {
	isError, _ := wordsIn(line, errorsOnly)
	return isError && !zeroCountsOnly(line)
}

// sumsUp reports whether a line sums a run up rather than naming what failed in it:
// counts ("3 failed, 1,642 passed", "Ran 12 tests", "# fail 3", "11 upgraded, 314 newly
// installed"), or a runner's verdict on the whole run or a package (go test's "ok  pkg
// 0.3s", "FAIL pkg 0.3s", "PASS"; unittest's "OK", "FAILED (failures=2)").
func sumsUp(line string) bool {
	t := strings.TrimSpace(line)
	return isSummary(t) || isVerdict(t)
}

// isVerdict reports whether a line, white space trimmed, is a runner's verdict on a run
// or a package.
func isVerdict(t string) bool {
	switch t {
	case "PASS", "FAIL", "OK", "FAILED":
		return true
	}
	if rest, ok := strings.CutPrefix(t, "ok "); ok {
		// (TAP's "ok 3 - name" is one test that passed)
		rest = trimBlanks(rest)
		return rest != "" && !isDigit(rest[0])
	}
	if rest, ok := strings.CutPrefix(t, "FAIL"); ok && rest != "" && (rest[0] == '\t' || rest[0] == ' ') {
		// a package, not a test ("FAIL: test_x (m.C.test_x)" names one)
		f := strings.Fields(rest)
		return len(f) > 0 && !strings.ContainsAny(f[0], ":(")
	}
	return strings.HasPrefix(t, "OK (") || strings.HasPrefix(t, "FAILED (")
}
