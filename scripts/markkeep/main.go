// Command markkeep writes the lines of a command's output that a developer needs, the
// .keep file of a case of testdata/real-outputs (scripts/gen-real-outputs.sh runs it):
//
//	markkeep FORMAT < NAME.out > NAME.keep
//
// The rules read the output's format alone, never what ctx-budget keeps, and were written
// before any cut of the set was looked at. Lines are read in the plain view
// (testdata/outputs/README.md): within a line what follows the last carriage return, ANSI
// escapes removed, trailing white space trimmed.
//
// When the output reports a fault (a failing test, a compiler or linter error, a
// traceback, an error of a package manager, a merge conflict, an HTTP error):
//
//   - each fault's naming line (--- FAIL, FAIL:, not ok, ●, N), error[E..], file:line: error),
//     for the first six faults;
//   - for the first three, what explains them: up to three lines of the assertion's message
//     (expected and got, the diff), and the frame where it failed (Python's innermost
//     frame, the first frame of Go's goroutine outside the runtime and testing, jest's
//     line of code);
//   - the closing summary that counts them (at most two lines).
//
// When it reports none, its structure: the first and the last line, the summary lines
// (at most three), and the headers of its groups (a directory in ls -lR, a commit and a
// diff --git, a test file or suite, a package's ok line, a section of git status, a
// top-level key of a JSON document): the first three and the last three of each kind.
//
// A line over 300 characters is never a .keep line, and each line is listed once.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

const (
	faultsNamed     = 6
	faultsExplained = 3
	explainLines    = 3
	summaryFault    = 2
	summaryClean    = 3
	headersEach     = 3
	longLine        = 300
)

var (
	toColumnOne = regexp.MustCompile(`\x1b\[[01]?G`)
	ansiEscape  = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
)

// plain is the view .keep lines are written in (as plainLines in outputs_test.go).
func plain(out string) []string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \t\r\f\v")
		l = toColumnOne.ReplaceAllString(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		l = ansiEscape.ReplaceAllString(l, "")
		lines[i] = strings.TrimRight(l, " \t\r\f\v")
	}
	return lines
}

// fault is one failure: the line that names it and the lines that explain it.
type fault struct {
	name    int
	explain []int
}

// reading is what a format's rules found in an output.
type reading struct {
	faults  []fault
	summary []int            // lines that count the result
	headers map[string][]int // group headers, by kind
}

func (r *reading) header(kind string, i int) {
	if r.headers == nil {
		r.headers = map[string][]int{}
	}
	r.headers[kind] = append(r.headers[kind], i)
}

// onlySummary keeps the summary lines that keep says count the faults (with faults, a
// line that only counts what ran says less).
func (r *reading) onlySummary(lines []string, keep func(string) bool) {
	r.summary = slices.DeleteFunc(r.summary, func(i int) bool { return !keep(lines[i]) })
}

// format rules: each reads the plain lines.
var formats = map[string]func([]string) *reading{
	"gotest":     goTest,
	"buildlog":   buildLog,
	"diag":       diagnostics,
	"tsc":        diagnostics,
	"make":       makeOutput,
	"unittest":   unittest,
	"python":     python,
	"nodetest":   nodeTest,
	"jest":       jest,
	"mocha":      mocha,
	"eslint":     eslint,
	"rusttest":   rustTest,
	"shellcheck": shellcheck,
	"apt":        apt,
	"npm":        npm,
	"gitlog":     gitLog,
	"git":        func([]string) *reading { return &reading{} },
	"gitstatus":  gitStatus,
	"gitmerge":   gitMerge,
	"listing":    listing,
	"find":       find,
	"grep":       grep,
	"json":       jsonDoc,
	"curl":       curl,
}

func main() {
	if len(os.Args) != 2 || formats[os.Args[1]] == nil {
		var names []string
		for n := range formats {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: markkeep FORMAT < output > keep\nformats: %s\n", strings.Join(names, " "))
		os.Exit(2)
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "markkeep: error: read: %v\n", err)
		os.Exit(1)
	}
	lines := plain(string(data))
	w := bufio.NewWriter(os.Stdout)
	for _, l := range keep(lines, formats[os.Args[1]](lines)) {
		fmt.Fprintln(w, l)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "markkeep: error: write: %v\n", err)
		os.Exit(1)
	}
}

// keep applies the caps of the rule to what a format found and lists the lines in the
// order of the output, each once.
func keep(lines []string, r *reading) []string {
	chosen := map[int]bool{}
	if len(r.faults) > 0 {
		for k, f := range r.faults {
			if k >= faultsNamed {
				break
			}
			chosen[f.name] = true
			if k < faultsExplained {
				for _, e := range f.explain[:min(explainLines, len(f.explain))] {
					chosen[e] = true
				}
			}
		}
		ends(r.summary, summaryFault, chosen)
	} else {
		first, last := -1, -1
		for i, l := range lines {
			if l != "" {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first >= 0 {
			chosen[first], chosen[last] = true, true
		}
		ends(r.summary, summaryClean, chosen)
		for _, hs := range r.headers {
			ends(hs, 2*headersEach, chosen)
		}
	}
	var out []string
	seen := map[string]bool{}
	for i, l := range lines {
		if !chosen[i] || l == "" || len(l) > longLine || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

// ends marks the first and last n/2 of is (all of them when there are no more than n; for
// an odd n the first get one more).
func ends(is []int, n int, chosen map[int]bool) {
	if len(is) <= n {
		for _, i := range is {
			chosen[i] = true
		}
		return
	}
	head := (n + 1) / 2
	for _, i := range is[:head] {
		chosen[i] = true
	}
	for _, i := range is[len(is)-(n-head):] {
		chosen[i] = true
	}
}

// indent is the width of a line's leading white space.
func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// explainAfter lists up to explainLines non-blank lines after line i more indented than it,
// stopping at a line for which stop says so.
func explainAfter(lines []string, i int, stop func(string) bool) []int {
	var out []int
	for j := i + 1; j < len(lines) && len(out) < 2*explainLines; j++ {
		l := lines[j]
		if l == "" {
			continue
		}
		if indent(l) <= indent(lines[i]) || stop(l) {
			break
		}
		out = append(out, j)
	}
	return out
}

// --- Go ----------------------------------------------------------------------------------

var (
	goFail     = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	goRun      = regexp.MustCompile(`^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)`)
	goFrameFn  = regexp.MustCompile(`^[\w./*()-]+\(.*\)$`)
	goFrameAt  = regexp.MustCompile(`^\t\S+\.go:\d+`)
	goCompiler = regexp.MustCompile(`^(?:\./)?\S+\.go:\d+(?::\d+)?: `)
)

func goTest(lines []string) *reading {
	r := &reading{}
	failing := map[string]bool{}
	for _, l := range lines {
		if m := goFail.FindStringSubmatch(l); m != nil {
			failing[m[1]] = true
		}
	}
	// -v: a failing test's messages are the lines printed under its === RUN (or CONT)
	messages := map[string][]int{}
	cur := ""
	for i, l := range lines {
		if m := goRun.FindStringSubmatch(l); m != nil {
			cur = m[1]
			continue
		}
		t := strings.TrimLeft(l, " \t")
		if strings.HasPrefix(t, "--- ") || strings.HasPrefix(l, "PASS") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "ok ") {
			cur = ""
			continue
		}
		if cur != "" && failing[cur] && l != "" {
			messages[cur] = append(messages[cur], i)
		}
	}
	for i, l := range lines {
		m := goFail.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := fault{name: i}
		f.explain = append(f.explain, messages[m[1]]...)
		f.explain = append(f.explain, explainAfter(lines, i, func(s string) bool { return strings.HasPrefix(strings.TrimLeft(s, " \t"), "--- ") })...)
		// a parent whose subtests failed says nothing of its own: its subtests are the faults
		if len(f.explain) == 0 && hasFailingChild(failing, m[1]) {
			continue
		}
		r.faults = append(r.faults, f)
	}
	// a panic: its message and the first frame outside the runtime and testing
	for i, l := range lines {
		if !strings.HasPrefix(l, "panic: ") {
			continue
		}
		f := fault{name: i}
		for j := i + 1; j+1 < len(lines) && j < i+80; j++ {
			if goFrameFn.MatchString(lines[j]) && goFrameAt.MatchString(lines[j+1]) {
				fn := lines[j]
				if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "testing.") || strings.HasPrefix(fn, "panic(") {
					continue
				}
				f.explain = append(f.explain, j, j+1)
				break
			}
		}
		r.faults = append([]fault{f}, r.faults...)
		break
	}
	// a build that failed
	for i, l := range lines {
		if goCompiler.MatchString(l) && !strings.Contains(l, "_test.go:") || strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
			if !strings.Contains(l, "[build failed]") {
				r.faults = append(r.faults, fault{name: i})
			} else {
				r.summary = append(r.summary, i)
			}
		}
	}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FAIL"):
			r.summary = append(r.summary, i)
		case l == "PASS" || strings.HasPrefix(l, "ok "):
			if len(r.faults) == 0 {
				r.summary = append(r.summary, i)
			}
			if strings.HasPrefix(l, "ok ") {
				r.header("package", i)
			}
		case strings.HasPrefix(l, "?   "):
			r.header("package", i)
		case strings.HasPrefix(l, "=== RUN") && !strings.Contains(l, "/"):
			r.header("test", i)
		}
	}
	sort.SliceStable(r.summary, func(a, b int) bool { return r.summary[a] < r.summary[b] })
	return r
}

func hasFailingChild(failing map[string]bool, name string) bool {
	for n := range failing {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

var buildStep = regexp.MustCompile(`^#(\d+) (.*)$`)

// buildLog: numbered steps as container builders log them; the steps are the groups, and
// the faults those of the Go tools run in them.
func buildLog(lines []string) *reading {
	inner := make([]string, len(lines))
	for i, l := range lines {
		if m := buildStep.FindStringSubmatch(l); m != nil {
			inner[i] = m[2]
		} else {
			inner[i] = l
		}
	}
	r := goTest(inner)
	r.headers = nil
	r.summary = nil
	for i, l := range inner {
		switch {
		case strings.HasPrefix(l, "["):
			r.header("step", i)
		case strings.HasPrefix(l, "exit ") && l != "exit 0":
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "FAIL"):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "exporting"):
			r.summary = append(r.summary, i)
		}
	}
	return r
}

// --- compilers and linters ----------------------------------------------------------------

var (
	// file:line[:col]: [severity:] message, as gcc, go vet, javac, shellcheck -f gcc, eslint
	// --format unix write; tsc's file(line,col): error TSn; bash's "f: line N: ..."
	diagLine    = regexp.MustCompile(`^(?:\./)?[\w./+@-]+\.\w+(?::\d+){1,2}: |^[\w./+@-]+\.\w+\(\d+,\d+\): error |^[\w./+@-]+: line \d+: `)
	notFault    = regexp.MustCompile(`(?i)\bwarning\b|: note: |: info: |: style: |\[Warning/`)
	rustError   = regexp.MustCompile(`^error(?:\[E\d+\])?: `)
	diagSummary = regexp.MustCompile(`^\d+ (?:errors?|warnings?)$|^error: could not compile|^Found \d+ errors?|^make: \*\*\*|^(?:error|warning): .* generated \d+ warnings?|^\d+ problems?|^FAIL|^\S+ generated \d+ warnings?`)
)

func diagnostics(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case rustError.MatchString(l) && !strings.HasPrefix(l, "error: could not compile"):
			f := fault{name: i}
			if i+1 < len(lines) && strings.Contains(lines[i+1], "--> ") {
				f.explain = append(f.explain, i+1)
			}
			r.faults = append(r.faults, f)
		case diagLine.MatchString(l) && !notFault.MatchString(l):
			r.faults = append(r.faults, fault{name: i})
		case diagLine.MatchString(l):
			r.header("warning", i)
		case strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "warning: ") && !diagSummary.MatchString(l):
			r.header("group", i)
		}
		if diagSummary.MatchString(l) {
			r.summary = append(r.summary, i)
		}
	}
	return r
}

var (
	makeRecipe = regexp.MustCompile(`^(?:cc|gcc|g\+\+|ar|clang)\s`)
	makeError  = regexp.MustCompile(`: (?:fatal )?error: |undefined reference to |^make(?:\[\d+\])?: \*\*\* `)
)

func makeOutput(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "make") && strings.Contains(l, "***"):
			r.summary = append(r.summary, i)
			if strings.Contains(l, "No rule") {
				r.faults = append(r.faults, fault{name: i})
			}
		case makeError.MatchString(l):
			f := fault{name: i}
			// gcc's excerpt of the code under the error, and its pointer
			for j := i + 1; j < len(lines) && j <= i+2 && strings.HasPrefix(strings.TrimLeft(lines[j], " "), "|") == false && strings.Contains(lines[j], " | "); j++ {
				f.explain = append(f.explain, j)
			}
			r.faults = append(r.faults, f)
		case makeRecipe.MatchString(l):
			r.header("recipe", i)
		}
	}
	return r
}

// --- Python ---------------------------------------------------------------------------------

var (
	pyException = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failure)\b(?::|$)`)
	pyFrame     = regexp.MustCompile(`^\s+File ".*", line \d+`)
	pyTestLine  = regexp.MustCompile(`^(\w+) \(([\w.]+)\.(\w+)\.\w+\) \.\.\. `)
)

// traceback explains a fault from line i on: the innermost frame and the exception, with
// the lines after it that continue the message (up to the next blank or rule).
func traceback(lines []string, i, end int) []int {
	frame, exc := -1, -1
	for j := i; j < end; j++ {
		if pyFrame.MatchString(lines[j]) {
			frame = j
		}
		if pyException.MatchString(lines[j]) && frame >= 0 && j > frame {
			exc = j
			break
		}
	}
	var out []int
	if exc >= 0 {
		out = append(out, exc)
		for j := exc + 1; j < end && j <= exc+2 && lines[j] != "" && !strings.HasPrefix(lines[j], "---") && !strings.HasPrefix(lines[j], "==="); j++ {
			out = append(out, j)
		}
	}
	if frame >= 0 {
		out = append([]int{frame}, out...)
	}
	// the exception first: with three lines of room, what failed before where
	if len(out) > 1 {
		out = append(out[1:], out[0])
	}
	return out
}

func unittest(lines []string) *reading {
	r := &reading{}
	lastClass := ""
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FAIL: ") || strings.HasPrefix(l, "ERROR: "):
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "=====") && !strings.HasPrefix(lines[end], "-----") || end == i+1 {
				end++
				if end >= len(lines) {
					break
				}
			}
			r.faults = append(r.faults, fault{name: i, explain: traceback(lines, i, min(end, len(lines)))})
		case strings.HasPrefix(l, "FAILED (") || strings.HasPrefix(l, "Ran ") || l == "OK" || strings.HasPrefix(l, "OK ("):
			r.summary = append(r.summary, i)
		}
		if m := pyTestLine.FindStringSubmatch(l); m != nil && m[3] != lastClass {
			lastClass = m[3]
			r.header("class", i)
		}
	}
	if len(r.faults) > 0 {
		// with faults, the count of them; "Ran N tests" says less
		r.onlySummary(lines, func(l string) bool { return strings.HasPrefix(l, "FAILED") })
	}
	return r
}

func python(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			end := i + 1
			for end < len(lines) && (lines[end] == "" || indent(lines[end]) > 0 || strings.HasPrefix(lines[end], "[Previous")) {
				end++
			}
			r.faults = append(r.faults, fault{name: min(end, len(lines)-1), explain: traceback(lines, i, min(end+3, len(lines)))})
		}
		if strings.HasPrefix(l, "total ") {
			r.summary = append(r.summary, i)
		}
		if strings.Contains(l, ": median qty") {
			r.header("file", i)
		}
	}
	// the exception line is the fault's name; its explanation the innermost frame
	for k, f := range r.faults {
		var ex []int
		for _, e := range f.explain {
			if e != f.name {
				ex = append(ex, e)
			}
		}
		r.faults[k].explain = ex
	}
	// a chained error: the last traceback is the one raised; the first, its cause
	if len(r.faults) > 1 {
		r.faults[0], r.faults[len(r.faults)-1] = r.faults[len(r.faults)-1], r.faults[0]
	}
	return r
}

// --- JavaScript -----------------------------------------------------------------------------

var (
	tapNotOK    = regexp.MustCompile(`^\s*not ok \d+ - `)
	tapField    = regexp.MustCompile(`^\s+(?:error|expected|actual|location): `)
	specFail    = regexp.MustCompile(`^\s*✖ `)
	nodeSummary = regexp.MustCompile(`^(?:# |ℹ )(?:tests|pass|fail|suites) \d+$`)
)

func nodeTest(lines []string) *reading {
	r := &reading{}
	seen := map[string]bool{}
	for i, l := range lines {
		switch {
		case tapNotOK.MatchString(l):
			f := fault{name: i}
			for j := i + 1; j < len(lines) && j < i+40 && !strings.Contains(lines[j], "...") || j == i+1; j++ {
				if j >= len(lines) {
					break
				}
				if tapField.MatchString(lines[j]) {
					f.explain = append(f.explain, j)
				}
			}
			// a suite that failed because a test in it did is not a fault of its own
			if len(f.explain) > 0 && !strings.Contains(strings.Join(lineSet(lines, f.explain), " "), "'1 subtest failed'") {
				r.faults = append(r.faults, f)
			}
		case specFail.MatchString(l) && !strings.Contains(l, "failing tests"):
			name := strings.TrimSpace(l)
			if seen[name] {
				// the failures listed again at the end, each with its assertion
				f := fault{name: i}
				for j := i + 1; j < len(lines) && j < i+12 && !specFail.MatchString(lines[j]); j++ {
					t := strings.TrimSpace(lines[j])
					if strings.HasPrefix(t, "AssertionError") || strings.HasPrefix(t, "+ ") || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "at TestContext.") {
						f.explain = append(f.explain, j)
					}
				}
				if len(f.explain) > 0 {
					r.faults = append(r.faults, f)
				}
			}
			seen[name] = true
		case strings.HasPrefix(l, "# Subtest: ") || strings.HasPrefix(l, "▶ "):
			r.header("suite", i)
		}
		if nodeSummary.MatchString(l) && (!strings.Contains(l, "fail") || !strings.HasSuffix(l, " 0")) {
			r.summary = append(r.summary, i)
		}
	}
	if len(r.faults) > 0 {
		r.onlySummary(lines, func(l string) bool { return strings.Contains(l, "fail") })
	}
	return r
}

func lineSet(lines []string, is []int) []string {
	var out []string
	for _, i := range is {
		out = append(out, lines[i])
	}
	return out
}

var (
	jestFailure = regexp.MustCompile(`^\s+● `)
	jestSummary = regexp.MustCompile(`^(?:Tests|Test Suites):\s`)
)

func jest(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case jestFailure.MatchString(l) && !strings.Contains(l, "Console"):
			f := fault{name: i}
			for j := i + 1; j < len(lines) && j < i+30 && !jestFailure.MatchString(lines[j]); j++ {
				t := strings.TrimSpace(lines[j])
				if strings.HasPrefix(t, "Expected:") || strings.HasPrefix(t, "Received:") || strings.HasPrefix(t, ">") {
					f.explain = append(f.explain, j)
				}
			}
			r.faults = append(r.faults, f)
		case jestSummary.MatchString(l):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "PASS ") || strings.HasPrefix(l, "FAIL "):
			r.header("file", i)
		}
	}
	return r
}

var (
	mochaFailure = regexp.MustCompile(`^\s+\d+\) \S`)
	mochaSummary = regexp.MustCompile(`^\s+\d+ (?:passing|failing|pending)`)
)

func mocha(lines []string) *reading {
	r := &reading{}
	failures := false
	for i, l := range lines {
		if mochaSummary.MatchString(l) {
			r.summary = append(r.summary, i)
			if strings.Contains(l, "failing") {
				failures = true
			}
			continue
		}
		if failures && mochaFailure.MatchString(l) {
			f := fault{name: i}
			for j := i + 1; j < len(lines) && j < i+20 && !mochaFailure.MatchString(lines[j]); j++ {
				t := strings.TrimSpace(lines[j])
				if strings.HasPrefix(t, "AssertionError") || strings.HasPrefix(t, "+") && !strings.HasPrefix(t, "+ expected") || strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "- actual") {
					f.explain = append(f.explain, j)
				}
			}
			r.faults = append(r.faults, f)
			continue
		}
		if !failures && indent(l) == 2 && !strings.HasPrefix(strings.TrimSpace(l), "✔") && strings.TrimSpace(l) != "" {
			r.header("suite", i)
		}
	}
	if len(r.faults) > 0 {
		r.onlySummary(lines, func(l string) bool { return strings.Contains(l, "failing") })
	}
	return r
}

var eslintProblem = regexp.MustCompile(`^\s+\d+:\d+\s+(error|warning)\s`)

func eslint(lines []string) *reading {
	r := &reading{}
	file := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "/"):
			file = i
			r.header("file", i)
		case eslintProblem.MatchString(l):
			if eslintProblem.FindStringSubmatch(l)[1] == "error" {
				f := fault{name: i}
				if file >= 0 {
					f = fault{name: file, explain: []int{i}}
					file = -1 // the file named once, with its first error
				}
				r.faults = append(r.faults, f)
			}
		case strings.HasPrefix(l, "✖ "):
			r.summary = append(r.summary, i)
		}
	}
	return r
}

// --- Rust -----------------------------------------------------------------------------------

var rustPanicked = regexp.MustCompile(`^thread '.*' panicked at `)

func rustTest(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "---- ") && strings.HasSuffix(l, " stdout ----"):
			f := fault{name: i}
			for j := i + 1; j < len(lines) && j < i+8 && !strings.HasPrefix(lines[j], "---- "); j++ {
				t := strings.TrimSpace(lines[j])
				if rustPanicked.MatchString(t) || strings.HasPrefix(t, "left:") || strings.HasPrefix(t, "right:") || strings.HasPrefix(t, "assertion") {
					f.explain = append(f.explain, j)
				}
			}
			r.faults = append(r.faults, f)
		case strings.HasPrefix(l, "test result: ") || strings.HasPrefix(l, "error: test failed"):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "running ") || strings.HasPrefix(l, "     Running ") || strings.HasPrefix(l, "   Doc-tests"):
			r.header("target", i)
		}
	}
	return r
}

// --- shell ----------------------------------------------------------------------------------

var (
	shellcheckPlace   = regexp.MustCompile(`^In \S+ line \d+:$`)
	shellcheckFinding = regexp.MustCompile(`SC\d+ \((error|warning|info|style)\): `)
)

func shellcheck(lines []string) *reading {
	r := &reading{}
	place := -1
	for i, l := range lines {
		switch {
		case shellcheckPlace.MatchString(l):
			place = i
			r.header("place", i)
		case shellcheckFinding.MatchString(l):
			if shellcheckFinding.FindStringSubmatch(l)[1] == "error" && place >= 0 {
				r.faults = append(r.faults, fault{name: place, explain: []int{i}})
			}
		case strings.HasPrefix(l, "For more information:"):
			r.summary = append(r.summary, i)
		}
	}
	return r
}

// --- packages -------------------------------------------------------------------------------

var aptSummary = regexp.MustCompile(`^\d+ upgraded, \d+ newly installed`)

func apt(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "E: "):
			r.faults = append(r.faults, fault{name: i})
		case strings.HasPrefix(l, "Package ") && strings.Contains(l, "is not available"),
			strings.Contains(l, " : Depends: ") || strings.Contains(l, " : Conflicts: ") || strings.Contains(l, " : Breaks: "):
			r.faults = append(r.faults, fault{name: i})
		case aptSummary.MatchString(l):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "The following ") || strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") && len(l) < 40:
			r.header("section", i)
		}
	}
	return r
}

var npmError = regexp.MustCompile(`^npm (?:error|ERR!) `)

func npm(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case npmError.MatchString(l):
			t := npmError.ReplaceAllString(l, "")
			switch {
			case strings.HasPrefix(t, "A complete log"), strings.HasPrefix(t, "code "):
				r.summary = append(r.summary, i)
			case t != "" && !strings.HasPrefix(t, "    ") && !strings.HasPrefix(t, "  "):
				r.faults = append(r.faults, fault{name: i})
			}
		case strings.HasPrefix(l, "added ") || strings.HasPrefix(l, "up to date") || strings.HasPrefix(l, "removed ") || strings.HasPrefix(l, "changed "):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "├── ") || strings.HasPrefix(l, "└── ") || strings.HasPrefix(l, "+-- ") || strings.HasPrefix(l, "`-- "):
			r.header("package", i)
		case strings.HasPrefix(l, "npm http fetch GET 200"):
			r.header("fetch", i)
		}
	}
	return r
}

// --- git ------------------------------------------------------------------------------------

var (
	gitCommit  = regexp.MustCompile(`^commit [0-9a-f]{40}`)
	gitChanged = regexp.MustCompile(`^ \d+ files? changed`)
)

func gitLog(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case gitCommit.MatchString(l):
			r.header("commit", i)
		case strings.HasPrefix(l, "diff --git "):
			r.header("diff", i)
		case gitChanged.MatchString(l):
			r.summary = append(r.summary, i)
		}
	}
	return r
}

func gitStatus(lines []string) *reading {
	r := &reading{}
	section := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "\tboth modified:") || strings.HasPrefix(l, "\tboth added:"):
			r.faults = append(r.faults, fault{name: i})
		case strings.HasPrefix(l, "On branch") || strings.HasPrefix(l, "HEAD detached"):
			r.header("branch", i)
		case l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") && strings.HasSuffix(l, ":"):
			r.header("section", i)
			section = true
		case section && strings.HasPrefix(l, "\t"):
			// the first entry of a section
			r.header("entry", i)
			section = false
		case strings.HasPrefix(l, "no changes added") || strings.HasPrefix(l, "nothing to commit") || strings.HasPrefix(l, "Your branch"):
			r.summary = append(r.summary, i)
		}
	}
	return r
}

func gitMerge(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "CONFLICT "):
			r.faults = append(r.faults, fault{name: i})
		case strings.HasPrefix(l, "Automatic merge failed") || strings.HasPrefix(l, "error: "):
			r.summary = append(r.summary, i)
		case strings.HasPrefix(l, "Auto-merging "):
			r.header("file", i)
		}
	}
	return r
}

// --- files ----------------------------------------------------------------------------------

func listing(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case l != "" && !strings.HasPrefix(l, " ") && strings.HasSuffix(l, ":") && !strings.Contains(l, " "):
			r.header("directory", i)
		case strings.HasSuffix(l, " total") || strings.HasPrefix(l, "total ") && i > 0 && strings.HasSuffix(lines[i-1], ":"):
			if strings.HasSuffix(l, " total") {
				r.summary = append(r.summary, i)
			}
		case strings.HasPrefix(l, "ls: ") || strings.HasPrefix(l, "du: ") || strings.HasPrefix(l, "find: "):
			r.faults = append(r.faults, fault{name: i})
		}
	}
	// a listing without headers (find, du): its top-level entries are its groups
	if len(r.headers) == 0 {
		top(lines, r)
	}
	return r
}

// top marks the entries one level below the root of a listing of paths as its groups.
func top(lines []string, r *reading) {
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		p := f[len(f)-1]
		if strings.Count(p, "/") == 1 {
			r.header("entry", i)
		}
	}
}

func find(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		if strings.HasPrefix(l, "find: ") {
			r.faults = append(r.faults, fault{name: i})
		}
	}
	top(lines, r)
	return r
}

func grep(lines []string) *reading {
	r := &reading{}
	last := ""
	for i, l := range lines {
		if strings.HasPrefix(l, "grep: ") && !strings.Contains(l, "binary file matches") {
			r.faults = append(r.faults, fault{name: i})
			continue
		}
		file, _, ok := strings.Cut(l, ":")
		if !ok {
			file = l
		}
		if file != last {
			r.header("file", i) // the first match in each file
			last = file
		}
	}
	return r
}

var (
	jsonTopKey = regexp.MustCompile(`^(?: {1,2}|\t)"[^"]+": `)
	jsonError  = regexp.MustCompile(`: line \d+ column \d+ \(char \d+\)$|^Expecting |^json: `)
)

func jsonDoc(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case jsonError.MatchString(l):
			r.faults = append(r.faults, fault{name: i})
		case jsonTopKey.MatchString(l):
			r.header("key", i)
		case l == "{" || strings.HasPrefix(l, "  {") && strings.TrimSpace(l) == "{":
			r.header("object", i)
		}
	}
	return r
}

// --- HTTP -----------------------------------------------------------------------------------

var (
	curlStatus = regexp.MustCompile(`^< HTTP/\S+ (\d)\d\d`)
	curlError  = regexp.MustCompile(`^curl: \(\d+\) `)
)

func curl(lines []string) *reading {
	r := &reading{}
	for i, l := range lines {
		switch {
		case curlError.MatchString(l):
			r.faults = append(r.faults, fault{name: i})
		case curlStatus.MatchString(l):
			if c := curlStatus.FindStringSubmatch(l)[1]; c == "4" || c == "5" {
				r.faults = append(r.faults, fault{name: i})
			}
			r.header("response", i)
		case strings.HasPrefix(l, "> GET ") || strings.HasPrefix(l, "> POST "):
			r.header("request", i)
		case strings.HasPrefix(l, "* Connected to") || strings.HasPrefix(l, "*   Trying"):
			r.header("connect", i)
		}
	}
	return r
}
