package budget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// goTestLog is the output of a verbose go test run: n passing tests, and a failing one
// with its assertion message at position at.
func goTestLog(n, at int) string {
	var b strings.Builder
	b.WriteString("go: downloading example.com/dep v1.2.3\n")
	for i := 0; i < n; i++ {
		if i == at {
			b.WriteString("=== RUN   TestParseQuoted\n")
			b.WriteString("    parse_test.go:214: Parse(\"a\\\"b\") = \"a\", want \"a\\\"b\"\n")
			b.WriteString("--- FAIL: TestParseQuoted (0.00s)\n")
			continue
		}
		fmt.Fprintf(&b, "=== RUN   TestParse_%04d\n--- PASS: TestParse_%04d (0.00s)\n", i, i)
	}
	b.WriteString("FAIL\nexit status 1\nFAIL\texample.com/parse\t0.412s\n")
	return b.String()
}

func TestSelectKeepsTheFailure(t *testing.T) {
	log := goTestLog(3000, 1700)
	doc := anthropicDoc(res{"Bash", log, true}, res{"Read", "x", false})
	out, st := plan(t, doc, opts(func(o *Options) { o.Cap = Chars(2000); o.ErrorFactor = 1 }))
	got := resultTexts(t, out)[0]
	for _, want := range []string{
		"go: downloading example.com/dep v1.2.3\n", // the first lines
		"--- FAIL: TestParseQuoted (0.00s)",
		`parse_test.go:214: Parse("a\"b") = "a", want "a\"b"`,
		"FAIL\texample.com/parse\t0.412s", // the last lines
		" lines left out]\n",              // too tight a cap to describe what was left out
		"[ctx-budget: cut ",
		"(originally ",
		"; to see the rest, re-run the Bash call narrowed to the part you need]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the cut lost %q:\n%s", want, got)
		}
	}
	if n := runes(got); n > 2000 || n < 1500 {
		t.Errorf("%d characters for a cap of 2,000", n)
	}
	// With room, a long gap says what most of its lines were like.
	roomy, _ := plan(t, doc, opts(func(o *Options) { o.Cap = Chars(8000); o.ErrorFactor = 1 }))
	if got := resultTexts(t, roomy)[0]; !strings.Contains(got, " lines left out: about ") || !strings.Contains(got, ` like "--- PASS: TestParse_`) {
		t.Errorf("at a cap of 8,000 the gaps are not described:\n%s", got)
	}
	if st.Cut != 1 {
		t.Errorf("stats %+v", st)
	}
	// The same result cut again at the same cap is the same; at a tighter one it keeps the
	// failure and the original's figures.
	if again, _ := plan(t, out, opts(func(o *Options) { o.Cap = Chars(2000); o.ErrorFactor = 1 })); again != out {
		t.Error("not idempotent")
	}
	tighter, st := plan(t, out, opts(func(o *Options) { o.Cap = Chars(1000); o.ErrorFactor = 1 }))
	cut := resultTexts(t, tighter)[0]
	if !strings.Contains(cut, "--- FAIL: TestParseQuoted") || runes(cut) > 1000 || st.Recut != 1 {
		t.Errorf("tighter cut (%+v):\n%s", st, cut)
	}
	orig := fmt.Sprintf("of %s characters in ", human.Thousands(runes(log)))
	if !strings.Contains(cut, orig) || strings.Count(cut, "[ctx-budget: cut ") != 1 {
		t.Errorf("the tighter cut does not account for the original (%s):\n%s", orig, cut)
	}
	// ctx-count reads the original size back from the marker.
	tr, err := transcript.Parse([]byte(tighter), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts := measure.Of(tr, estimate(), false)
	was := 0
	for _, m := range counts.Messages {
		for _, b := range m.Blocks {
			if b.Kind == transcript.ToolResult && b.ToolID == "toolu_0" {
				was = b.Was
			}
		}
	}
	if was != estimate().Count(log) {
		t.Errorf("the marker reads back as %d tokens, the log was %d", was, estimate().Count(log))
	}
}

// Text that says nothing in particular keeps its head and tail, as before; so do file
// reads, whatever they hold.
func TestSelectOnlyWhereLinesSaySomething(t *testing.T) {
	plain := numbered(3000)
	out, _ := plan(t, anthropicDoc(res{"Bash", plain, false}, res{"Read", "x", false}), opts(func(o *Options) { o.Cap = Chars(2000) }))
	if got := resultTexts(t, out)[0]; !strings.Contains(got, " characters here (originally") || strings.Contains(got, "left out here") {
		t.Errorf("plain text was not cut at head and tail:\n%s", got)
	}
	for _, tool := range []string{"Read", "Edit"} { // a read, and the snippet an edit shows
		out, _ = plan(t, anthropicDoc(res{tool, goTestLog(3000, 1700) + "  \n", false}, res{"Read", "x", false}), opts(func(o *Options) { o.Cap = Chars(2000) }))
		got := resultTexts(t, out)[0]
		if strings.Contains(got, "TestParseQuoted") || !strings.Contains(got, " characters here (originally") {
			t.Errorf("%s: file contents were cut by what their lines say:\n%s", tool, got)
		}
		if !strings.HasSuffix(got, "  \n") {
			t.Errorf("%s: file contents were normalized (trailing white space gone)", tool)
		}
	}
}

func TestClassify(t *testing.T) {
	lines := strings.Split(`$ make
cc -c main.c
main.c:12:5: error: expected ';' before 'return'
cc -c util.c
util.c:3:1: warning: unused variable 'x'
Traceback (most recent call last):
  File "a.py", line 1, in <module>
  File "b.py", line 2, in f
  File "c.py", line 3, in g
  File "d.py", line 4, in h
ValueError: bad
test tests::parse ... FAILED
all done
one
two
three
four
five`, "\n")
	kind, _, signal := classify(lines, "", nil, nil, 5)
	// The traceback's first two frames are kept as frames; its last frame (the call that
	// failed) is kept with the exception at its end, as the error, and the lines before it
	// (the frame between, the "Traceback" line that opens it) are near it; so is the line
	// after the failing test.
	want := []uint8{kindHead, kindHead, kindHead, kindHead, kindHead,
		kindNear, kindFrame, kindFrame, kindNear, kindError, kindError, kindTest, kindNear,
		kindTail, kindTail, kindTail, kindTail, kindTail}
	if !signal || fmt.Sprint(kind) != fmt.Sprint(want) {
		t.Errorf("kinds\n%v, want\n%v", kind, want)
	}
	if kind, _, signal := classify(strings.Split(numbered(50), "\n"), "", nil, nil, 5); signal {
		t.Errorf("plain lines say something: %v", kind)
	}
}

// TestClassifyRepeats: a line said again is kept once; of a shape too frequent to say
// anything, the first frequentShown lines stay as examples; a Java stack's last frame
// (the runner's entry) is not kept as a frame.
func TestClassifyRepeats(t *testing.T) {
	var lines []string
	lines = append(lines, "  ● tax › charges German VAT", "    Expected: 0.19")
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("lint.go:%d: finding %d", i+1, i))
	}
	lines = append(lines, "java.lang.AssertionError: boom",
		"\tat com.acme.Check.equal(Check.java:5)",
		"\tat com.acme.TaxTest.vat(TaxTest.java:29)",
		"\tat com.acme.Reflect.invoke(Reflect.java:1)",
		"\tat com.acme.Runner.main(Runner.java:23)",
		"Summary of all failing tests",
		"  ● tax › charges German VAT", "    Expected: 0.19")
	kind, _, _ := classify(lines, "", nil, nil, 0)
	n := len(lines)
	if kind[0] != kindTest || kind[1] != kindError {
		t.Errorf("first report: kinds %d %d", kind[0], kind[1])
	}
	if kind[n-2] <= kindFrame || kind[n-1] <= kindFrame {
		t.Errorf("the repeated report kept: kinds %d %d", kind[n-2], kind[n-1])
	}
	for i := 2; i < 102; i++ {
		if want := i < 2+frequentShown; (kind[i] == kindDiagnostic) != want {
			t.Errorf("finding %d: kind %d", i-2, kind[i])
		}
	}
	frames := kind[103:107]
	if frames[0] != kindFrame || frames[1] != kindFrame || frames[3] == kindFrame {
		t.Errorf("Java frames: kinds %v", frames)
	}
}

// TestKeepingOrderBreadthFirst: each failure's first error line is kept before any
// failure's second.
func TestKeepingOrderBreadthFirst(t *testing.T) {
	// (words, not numbers, tell the error lines apart: lines of one shape are noise)
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	line := func(e, f int) string { return fmt.Sprintf("E   error %s of failure %s", words[e], words[f]) }
	var b strings.Builder
	for f := range 3 {
		fmt.Fprintf(&b, "--- FAIL: Test%d (0.00s)\n", f)
		for e := range 6 {
			b.WriteString(line(e, f) + "\n")
		}
		b.WriteString(numbered(40) + "\n")
	}
	text := b.String()
	sc := new(scratch)
	s := newSelection(text, len(text), 800, func(s string) int { return len(s) / 4 }, "Bash", sc)
	if s == nil {
		t.Fatal("no selection")
	}
	out, ok := s.fit(800, nil, false, 0)
	if !ok {
		t.Fatal("nothing fits")
	}
	for f := range 3 {
		if !strings.Contains(out, line(0, f)+"\n") {
			t.Errorf("failure %d's first error line left out:\n%s", f, out)
		}
	}
	if strings.Contains(out, line(5, 0)) {
		t.Errorf("failure 0 told in full before the others were named:\n%s", out)
	}
	// The marker says how many error lines were left out: kept so many of 18 (the first
	// failure line is kept as the first line).
	kept := 0
	for f := range 3 {
		for e := range 6 {
			if strings.Contains(out, line(e, f)+"\n") {
				kept++
			}
		}
	}
	if want := fmt.Sprintf("; kept %d of 18 error lines, 2 test failure lines; ", kept); !strings.Contains(out, want) {
		t.Errorf("the marker does not say %q:\n%s", want, out)
	}
}

func TestIsDiagnostic(t *testing.T) {
	for line, want := range map[string]bool{
		"main.c:12:5: warning: unused":          true,
		"  --> src/main.rs:3:5":                 true,
		"    at Object.<anonymous> (x.js:1:2)":  false, // a frame, not a file:line at the start
		"\tat pkg/file.go:12":                   true,
		"internal/x/y_test.go:214: want 3":      true,
		"C:\\src\\a.cs:10:1: error":             true,
		"./build.sh:7:1: note":                  true,
		"Makefile:12: recipe failed":            false, // no extension
		"12:30:00 server started":               false,
		"see the docs at http://x.io:80/a.html": false,
		"a.go:12x":                              false,
		"file.go:":                              false,
		"file.go:7":                             true,
		"tests/test_a.py:41: AssertionError":    true,
		"version 1.2:3":                         false,
	} {
		if got := isDiagnostic(line); got != want {
			t.Errorf("isDiagnostic(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestLineKinds: one line of each runner and trace the man page names is read as what it
// is.
func TestLineKinds(t *testing.T) {
	for line, want := range map[string]uint8{
		"--- FAIL: TestParse (0.00s)":                    kindTest, // go test
		"FAILED tests/test_a.py::test_x - assert 1 == 2": kindTest, // pytest
		"  ✕ rounds half up (3 ms)":                      kindTest, // jest
		"   × rounds half up 3ms":                        kindTest, // vitest
		"test tax::rate ... FAILED":                      kindTest, // cargo test
		"not ok 3 - parses a whole amount":               kindTest, // TAP
		"Tests run: 5, Failures: 1, Errors: 0":           kindTest, // JUnit
		"Tests run: 5, Failures: 0, Errors: 0":           kindOther,
		"12 passed, 3 failed in 0.52s":                   kindTest,  // a summary, though it says "failed"
		"1,642 passed in 2.10s":                          kindTest,  // a summary's counts
		"E       assert 0.16 == 0.19":                    kindError, // pytest's E lines
		"\t/home/u/shop/cart.go:42 +0x1d":                kindFrame, // Go
		"\tat com.acme.Cart.total(Cart.java:42)":         kindFrame, // Java
		"    at total (src/cart.js:42:7)":                kindFrame, // JavaScript
		"   3: shop::cart::total":                        kindFrame, // Rust backtrace
		"  File \"cart.py\", line 42, in total":          kindFrame, // Python
		"goroutine 7 [running]:":                         kindFrame,
		"      |     ^~~~":                               kindContext, // a compiler's pointer
		"util.c:3:1: warning: unused variable":           kindWarning,
		"just some output":                               kindOther,
		// what a failing assertion expected and got: jest, go, Rust
		"    Expected: 0.19":          kindError,
		"    Received: 0.16":          kindError,
		"        -want sku-137;qty=4": kindError,
		"  left: 4":                   kindError,
		"Expected: 0.19":              kindOther, // not indented: prose
		// pytest's line of code above its E lines: code, not the error
		">       assert rate(country) == want": kindContext,
		// a section's title, not an error; a summary between rules still counts
		"=================================== FAILURES ===================================": kindOther,
		"======================== 3 failed, 1642 passed in 0.42s ========================": kindTest,
		// node's test runner: a field naming a kind of failure is not an error, its
		// location is a place, its message an error
		"      failureType: 'testCodeFailure'":         kindOther,
		"      location: '/src/test/tax.test.js:79:3'": kindDiagnostic,
		"      error: '1 subtest failed'":              kindError,
		"KeyError: 'XAF'":                              kindError,
		// an error word inside a lower-case name is not one; a capital one in a name is
		"npm http fetch GET 200 https://registry.npmjs.org/verror 12ms": kindOther,
		"ValueError: invalid amount":                                    kindError,
		// TAP's closing counts: those of none say nothing
		"# pass 984":    kindTest,
		"# fail 3":      kindTest,
		"# cancelled 0": kindOther,
		"# todo 0":      kindOther,
		// pytest's blank line inside its E block keeps the block one run
		"E": kindError,
		// pytest's notes about its diff are not what differs
		"E         Omitting 3 identical items, use -vv to show":    kindContext,
		"E         Differing items:":                               kindContext,
		"E         {'gross': 11600} != {'gross': 11900}":           kindError,
		"E         ...Full output truncated (3 lines hidden), use": kindContext,
		// a linter's finding under the code, whatever its severity
		"     ^-- SC2086 (info): Double quote to prevent globbing and word splitting.": kindDiagnostic,
		"         ^-- SC2044 (warning): For loops over find output are fragile.":       kindDiagnostic,
	} {
		kind := make([]uint8, 1)
		lineKinds([]string{line}, kind)
		if kind[0] != want {
			t.Errorf("%q: kind %d, want %d", line, kind[0], want)
		}
	}
}

// TestFindingTakesItsPlace: a kept finding keeps the line naming the place its block is
// about, though that shape is too frequent to be kept for itself.
func TestFindingTakesItsPlace(t *testing.T) {
	var lines []string
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("In deploy/s%d.sh line %d:", i, i), "cd $TARGET", "   ^-----^ SC2086 (info): Double quote to prevent globbing.", "")
	}
	lines = append(lines, "In deploy/auth.sh line 11:", "if [ $? -ne 0 ]; then exit 1; fi", "     ^-- SC2181 (style): Check exit code directly.", "")
	kind, _, _ := classify(lines, "", nil, nil, 2)
	at := len(lines) - 4
	if kind[at] != kindDiagnostic || kind[at+2] != kindDiagnostic {
		t.Errorf("the last finding's place has kind %d and the finding %d, want both %d", kind[at], kind[at+2], kindDiagnostic)
	}
}

// TestShortGapKeepsTheLines: lines no longer than the note that would stand for them are
// kept in its place.
func TestShortGapKeepsTheLines(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "ok %d - case %d of 200\n", i, i)
		if i == 100 {
			b.WriteString("not ok 101 - totals\n---\nb\nc\n...\nerror: 'wrong total'\n")
		}
	}
	text := b.String()
	s := newSelection(text, len(text), 600, func(s string) int { return len(s) / 4 }, "Bash", new(scratch))
	out, ok := s.fit(600, nil, false, 0)
	if !ok || !strings.Contains(out, "not ok 101 - totals\n---\nb\nc\n...\nerror: 'wrong total'\n") {
		t.Errorf("the two short lines between the failure and its error were not kept as themselves:\n%s", out)
	}
}

// TestCutHasNoMoreTokensThanHeadAndTail: a cut in characters that keeps dense lines keeps
// fewer of them rather than more tokens than the head and tail of the raw result would.
func TestCutHasNoMoreTokensThanHeadAndTail(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		if i%300 == 150 {
			fmt.Fprintf(&b, "E       AssertionError: assert {'a': %d, 'b': [1, 2, 3], 'c': {'d': %d}} == {'a': %d}\n", i, i, i+1)
			continue
		}
		b.WriteString("tests/test_mod.py::test_case PASSED                                      [ 50%]\n")
	}
	text := b.String()
	c := tokens.Claude("")
	measure := func(s string) int { return len([]rune(s)) }
	n := measure(text)
	byLines := fitText(text, n, 2000, measure, false, "Bash", c, false, text, n)
	headTail := fitText(text, n, 2000, measure, false, "Bash", c, true, text, n)
	if !strings.Contains(byLines, "{'a': 150,") {
		t.Fatalf("no error line kept:\n%s", byLines)
	}
	if a, b := c.Count(byLines), c.Count(headTail); a > b {
		t.Errorf("cut by lines %d tokens, head and tail %d", a, b)
	}
	unbounded := newSelection(text, n, 2000, c.Count, "Bash", new(scratch))
	if out, _ := unbounded.fit(2000, measure, false, 0); c.Count(out) <= c.Count(headTail) {
		t.Skipf("the lines are not denser than the head and tail here (%d ≤ %d tokens): the bound is not exercised", c.Count(out), c.Count(headTail))
	}
}

func TestClassifyForOthers(t *testing.T) {
	lines := []string{"ok  \tgithub.com/x/y\t0.1s", "--- FAIL: TestParse (0.00s)", "    parse_test.go:12: got 3, want 4", "main.go:3:2: undefined: foo", "", "", "warning: unused variable", "", "plain text"}
	got := Classify(lines)
	want := []Class{Other, TestFailure, Error, Error, Other, Other, Warning, Other, Other}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %q: %v, want %v", lines[i], got[i], want[i])
		}
	}
}

// TestVerdict (issue 39): how a run ended, as ctx-summarize reads it through the classifier
// of command output: the last line that sums it up and the first that says what failed; a
// count of what passed or was resolved, a warning, a passing pytest -v test whose name
// holds "exception" and a plugin's section title are not the failure.
func TestVerdict(t *testing.T) {
	for _, c := range []struct{ out, summary, failure string }{
		{"ok  \tgithub.com/x/y\t0.1s", "ok  \tgithub.com/x/y\t0.1s", ""},
		{"--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3, want 4\nFAIL\nFAIL\tgithub.com/x/y\t0.1s", "FAIL\tgithub.com/x/y\t0.1s", "--- FAIL: TestParse (0.00s)"},
		{"Resolved 28 packages in 36ms\nwarning: Failed to hardlink files; falling back to full copy\n" +
			"tests/test_cache.py::TestCache::test_exception_handling PASSED [ 50%]\n" +
			"tests/test_cache.py::TestCache::test_load FAILED [100%]\n" +
			"_______________ coverage: platform linux, python 3.12.3-final-0 ________________\n" +
			"E       AssertionError: assert 3 == 4\n1 failed, 1 passed in 0.21s",
			"1 failed, 1 passed in 0.21s", "tests/test_cache.py::TestCache::test_load FAILED [100%]"},
		{"/usr/bin/python: No module named mypy", "", "/usr/bin/python: No module named mypy"},
		{"Ran 12 tests in 0.031s\n\nOK", "OK", ""},
		{"3 errors, 0 warnings, 0 informations", "3 errors, 0 warnings, 0 informations", "3 errors, 0 warnings, 0 informations"},
		{"0 errors, 0 warnings, 0 informations", "0 errors, 0 warnings, 0 informations", ""},
		{"ok 1 - parses a date\nok 2 - rejects an Error object", "", ""},
	} {
		summary, failure := Verdict(strings.Split(c.out, "\n"))
		if summary != c.summary || failure != c.failure {
			t.Errorf("%q:\nsummary %q, failure %q\nwant    %q, %q", c.out, summary, failure, c.summary, c.failure)
		}
	}
}

// TestMessageBlockIsOneRun (issue 38): the lines of one message of a failing test, indented
// in one block ("got:" and its value, then "want:"), are one run of error lines: the first
// message's "got:" is kept before the "want:" of every other.
func TestMessageBlockIsOneRun(t *testing.T) {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	var b strings.Builder
	b.WriteString("--- FAIL: TestDump (0.00s)\n")
	for _, w := range words {
		fmt.Fprintf(&b, "    dump_test.go:988: Dump %s\n         got: ([]%s) {\n         <max depth reached>\n        }\n         want: ([]%s) {\n         (%s) 1\n        }\n", w, w, w, w)
	}
	b.WriteString("FAIL\nFAIL\texample.com/spew\t0.01s\n")
	text := b.String()
	s := newSelection(text, len(text), 2000, func(s string) int { return len(s) / 4 }, "Bash", new(scratch))
	if s == nil {
		t.Fatal("no selection")
	}
	place := map[string]int{}
	for n, i := range s.order {
		place[s.lines[i]] = n
	}
	got, ok := place["         got: ([]alpha) {"]
	if !ok {
		t.Fatal("the first message's got: line is not in the keeping order")
	}
	for _, w := range words[1:] {
		if want, ok := place["         want: (["+"]"+w+") {"]; ok && want < got {
			t.Errorf("message %s's want: (place %d) before the first message's got: (place %d)", w, want, got)
		}
	}
}

// TestDoctestReportIsNoFailure (issue 38): doctest's report of a run with no failure
// names things and counts them; the items it found no tests in are names, the rows under
// a count are no failure's explanation, and a mapping's "25: 172," is no stack frame.
func TestDoctestReportIsNoFailure(t *testing.T) {
	lines := []string{
		"    statistics.NormalDist",
		"    statistics.StatisticsError",
		"    statistics._fail_neg",
		"21 items passed all tests:",
		"  12 tests in statistics",
		"   3 tests in statistics.NormalDist.overlap",
		"   1 tests in statistics._exact_ratio",
		"   25: 172,   # 20 to 30 years old",
		"82 passed and 0 failed.",
	}
	kind, _, _ := classify(lines, "", nil, nil, 0)
	for i, k := range kind {
		if k == kindError || k == kindFrame || k == kindDiagnostic {
			t.Errorf("%q: kind %d", lines[i], k)
		}
	}
	if failed(lines, kind) {
		t.Error("the report reads as failed")
	}
	if !isFrame("  12: std::panicking::begin_panic") {
		t.Error("a Rust backtrace's frame is no longer one")
	}
}

// TestUnittestDocstringNames (issue 38): unittest -v writes a test with a docstring on two
// lines, its name and then the docstring with the verdict; a passing test's name and
// docstring are no error, whatever words they hold ("failure", "fails"), and the output,
// reporting no failure, keeps its structure.
func TestUnittestDocstringNames(t *testing.T) {
	lines := []string{
		"test_getattr_failure (test.test_urlparse.UrlParseTestCase.test_getattr_failure)",
		"Test that urllib.parse.__getattr__() fails correctly. ... ok",
		"_calc_errors (test.test_statistics)",
		"Doctest: test.test_statistics._calc_errors ... ok",
		"test_raises_error (test.test_x.C.test_raises_error)",
		"Test that it raises an error. ... FAIL",
	}
	kind, _, _ := classify(lines, "", nil, nil, 0)
	for i := range 4 {
		if kind[i] != kindOther && kind[i] != kindHeader {
			t.Errorf("%q: kind %d, a passing test's name or docstring", lines[i], kind[i])
		}
	}
	if kind[4] == kindOther && kind[5] == kindOther {
		t.Errorf("a failing test's name and docstring both read as saying nothing")
	}
}

// TestNamesAndQuotesAreNotErrors (issue 38): a passing test whose name holds "Error", a
// t.Errorf added by a commit in git log -p, a file named errors.go in ls -l and a line grep
// found are not errors of the run.
func TestNamesAndQuotesAreNotErrors(t *testing.T) {
	for line, want := range map[string]uint8{
		"--- PASS: TestParseError (0.00s)":                                         kindOther,
		"    --- PASS: TestDecodeError/unterminated (0.00s)":                       kindOther,
		"=== RUN   TestParseError":                                                 kindOther,
		"ok 12 - rejects an Error object":                                          kindOther,
		"test_error_handling (test.test_json.TestFail.test_error_handling) ... ok": kindOther,
		"  ✔ throws a TypeError on a bad range (0.12ms)":                           kindOther,
		"-rw-r--r-- 1 root root  4120 Nov  1 12:00 errors.go":                      kindOther,
		"toml/decode.go:212:\t\treturn fmt.Errorf(\"toml: %w\", err)":              kindOther,
		"--- FAIL: TestParseError (0.00s)":                                         kindTest,
		"toml/decode.go:212:5: missing return":                                     kindDiagnostic,
		"grep: nosuchdir: No such file or directory":                               kindError,
	} {
		kind := make([]uint8, 1)
		lineKinds([]string{line}, kind)
		if kind[0] != want {
			t.Errorf("%q: kind %d, want %d", line, kind[0], want)
		}
	}
	log := strings.Split(`commit 0123456789abcdef0123456789abcdef01234567
Author: A <a@example.com>
Date:   Sun Nov 1 12:00:00 2026 +0000

    test: fail when the parser panics

diff --git a/parse_test.go b/parse_test.go
index 1111111..2222222 100644
--- a/parse_test.go
+++ b/parse_test.go
@@ -10,6 +10,9 @@ func TestParse(t *testing.T) {
 	got := Parse(in)
+	if got != want {
+		t.Errorf("Parse = %q, want %q", got, want)
+	}
 }`, "\n")
	kind, _, _ := classify(log, "", nil, nil, 0)
	for i, k := range kind {
		if k >= kindTest && k <= kindFrame {
			t.Errorf("git log -p line %q: kind %d, kept for what it says", log[i], k)
		}
	}
	if kind[6] != kindHeader {
		t.Errorf("diff --git is not a header: kind %d", kind[6])
	}
}

// TestGoVerboseMessages (issue 38): in go test -v the lines a failing test printed under
// its === RUN say why it failed, and are kept as error lines; a passing test's logging is
// not kept for the words it holds.
func TestGoVerboseMessages(t *testing.T) {
	lines := strings.Split(`=== RUN   TestDecode
=== RUN   TestDecode/ok
    decode_test.go:40: decoding error-free input
=== RUN   TestDecode/bad
    decode_test.go:52: Decode() mismatch (-want +got):
          map[string]any{
        - 	"a": int64(1),
        + 	"a": int64(2),
          }
--- FAIL: TestDecode (0.00s)
    --- PASS: TestDecode/ok (0.00s)
    --- FAIL: TestDecode/bad (0.00s)
FAIL`, "\n")
	kind, _, _ := classify(lines, "", nil, nil, 0)
	if kind[2] == kindError || kind[2] == kindDiagnostic {
		t.Errorf("a passing test's log kept as %d", kind[2])
	}
	for i := 4; i <= 8; i++ {
		if kind[i] != kindError {
			t.Errorf("failing test's message %q: kind %d", lines[i], kind[i])
		}
	}
}

// TestListingKeepsItsStructure (issue 38): an ls -lR listing with files named after errors
// is cut keeping its directories' headers, and the marker claims no error lines.
func TestListingKeepsItsStructure(t *testing.T) {
	var b strings.Builder
	for d := range 40 {
		fmt.Fprintf(&b, "./pkg%02d:\ntotal 48\n", d)
		for f := range 12 {
			fmt.Fprintf(&b, "-rw-r--r-- 1 root root %5d Nov  1 12:00 error_%02d.go\n", 100*f+d, f)
		}
		b.WriteString("\n")
	}
	text := b.String()
	sc := new(scratch)
	s := newSelection(text, len(text), 4000, func(s string) int { return len(s) / 4 }, "Bash", sc)
	if s == nil {
		t.Fatal("a listing of directories is cut at head and tail")
	}
	out, _ := s.fit(4000, nil, false, 0)
	if strings.Contains(out, "error line") {
		t.Errorf("the marker claims error lines:\n%s", out)
	}
	if !strings.Contains(out, " group headers; ") {
		t.Errorf("the marker does not say it kept the groups' headers:\n%s", out)
	}
	for _, d := range []string{"./pkg00:", "./pkg01:", "./pkg02:", "./pkg37:", "./pkg38:", "./pkg39:"} {
		if !strings.Contains(out, "\n"+d+"\n") && !strings.HasPrefix(out, d+"\n") {
			t.Errorf("directory %s lost:\n%s", d, out)
		}
	}
}

// TestCompilerErrorsInOrder (issue 38): a compiler's list of errors, one a line, each
// naming its place, is a list of failures: under a tight limit its first errors are kept,
// not one here and one there.
func TestCompilerErrorsInOrder(t *testing.T) {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima"}
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "building step %d of the project\n", i)
	}
	for i, w := range words {
		fmt.Fprintf(&b, "ts/range.ts(%d,%d): error TS2339: Property '%s' does not exist on type 'Range'.\n", 10*i+3, i+1, w)
		fmt.Fprintf(&b, "src/%s.c:%d:5: error: unknown type name '%s_t'\n", w, i+7, w)
	}
	// later, errors of one frequent shape, each followed by one of its own
	for i := range 60 {
		fmt.Fprintf(&b, "ts/semver.ts(%d,9): error TS7006: Parameter 'v' implicitly has an 'any' type.\n", 300+i)
		fmt.Fprintf(&b, "ts/semver.ts(%d,2): error TS2304: Cannot find name 'later%c%c'.\n", 300+i, 'a'+i%26, 'a'+i/26)
	}
	b.WriteString(numbered(200))
	text := b.String()
	s := newSelection(text, len(text), 1500, func(s string) int { return len(s) / 4 }, "Bash", new(scratch))
	if s == nil {
		t.Fatal("no selection")
	}
	out, _ := s.fit(1500, nil, false, 0)
	for _, w := range words[:4] {
		if !strings.Contains(out, "Property '"+w+"'") || !strings.Contains(out, "src/"+w+".c:") {
			t.Errorf("an early error about %s left out:\n%s", w, out)
		}
	}
}

// TestJSONIsData (issue 38): a document of JSON written on many lines (npm ls --json, go
// list -json) is data: packages named "es-errors" or "errors" are not error lines, and the
// cut keeps its structure, its top-level keys; a JSON log, one value a line, is still read
// for what its lines say.
func TestJSONIsData(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\n  \"version\": \"1.0.0\",\n  \"name\": \"app\",\n  \"dependencies\": {\n")
	for i := range 60 {
		fmt.Fprintf(&b, "    \"pkg-%02d\": {\n      \"version\": \"1.%d.0\",\n      \"dependencies\": {\n        \"es-errors\": {\n          \"version\": \"1.3.0\"\n        }\n      }\n    },\n", i, i)
	}
	b.WriteString("    \"last\": {\n      \"version\": \"2.0.0\"\n    }\n  },\n  \"problems\": []\n}\n")
	// (go list -json writes one document after another)
	b.WriteString("{\n\t\"ImportPath\": \"example.com/app\",\n\t\"Imports\": [\n\t\t\"errors\",\n\t\t\"fmt\"\n\t]\n}\n")
	text := b.String()
	lines := strings.Split(text, "\n")
	kind, _, _ := classify(lines, "", nil, nil, 0)
	for i, k := range kind {
		if k >= kindTest && k <= kindFrame || k == kindWarning {
			t.Errorf("JSON line %q: kind %d, kept for what it says", lines[i], k)
		}
	}
	sc := new(scratch)
	s := newSelection(text, len(text), 2000, func(s string) int { return len(s) / 4 }, "Bash", sc)
	if s == nil {
		t.Fatal("a JSON document with top-level keys is cut at head and tail")
	}
	out, _ := s.fit(2000, nil, false, 0)
	for _, key := range []string{`  "dependencies": {`, `  "problems": []`, `	"Imports": [`} {
		if !strings.Contains(out, "\n"+key+"\n") {
			t.Errorf("top-level key %s lost:\n%s", key, out)
		}
	}
	if strings.Contains(out, "error line") {
		t.Errorf("the marker claims error lines:\n%s", out)
	}
	logLines := []string{`{"level":"info","msg":"listening on :8080"}`, `{"level":"error","msg":"dial tcp 10.0.0.1:5432: connection refused"}`}
	if kind, _, _ := classify(logLines, "", nil, nil, 0); kind[1] != kindError {
		t.Errorf("a JSON log's error: kind %d", kind[1])
	}
}

// TestClosingVerdictsKept (issue 38): a test framework that lists its many failures inside
// one go test (gocheck's "FAIL: file:line: S.TestX") does not crowd out how the run ended:
// the failing tests are named from both ends of the list inwards, so the last ones (go's
// own "--- FAIL" of each test) are kept with the first.
func TestClosingVerdictsKept(t *testing.T) {
	var b strings.Builder
	b.WriteString("=== RUN   Test\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "%s\nFAIL: decode_test.go:%d: S.TestDecode%02d\n\ndecode_test.go:%d:\n    c.Assert(v, DeepEquals, want)\n... obtained int = %d\n... expected int = %d\n\n\n", strings.Repeat("-", 70), 100+i, i, 110+i, i, i+1)
	}
	b.WriteString("OOPS: 10 passed, 40 FAILED\n--- FAIL: Test (0.01s)\n=== RUN   ExampleUnmarshal\n--- FAIL: ExampleUnmarshal (0.00s)\ngot:\n\nwant:\nhello\nFAIL\nFAIL\texample.com/yaml\t0.012s\nFAIL\n")
	text := b.String()
	sc := new(scratch)
	s := newSelection(text, len(text), 2000, func(s string) int { return len(s) / 4 }, "Bash", sc)
	if s == nil {
		t.Fatal("no selection")
	}
	out, _ := s.fit(2000, nil, false, 0)
	for _, want := range []string{"FAIL: decode_test.go:100: S.TestDecode00", "--- FAIL: Test (0.01s)", "--- FAIL: ExampleUnmarshal (0.00s)"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("lost %q:\n%s", want, out)
		}
	}
}

// TestIsHeaderEveryKind: a line of each kind isHeader reads as a group's header is one,
// and a line like it but for its first byte is not. headerFirst, the bytes such a line
// may start with (a table kept by hand beside isHeader's cases), fails this when a case
// starts with a byte it lacks.
func TestIsHeaderEveryKind(t *testing.T) {
	for _, c := range [][2]string{
		{"commit 3f2a9c1b7e", "Author: A <a@b>"},
		{"diff --git a/x.go b/x.go", "index 1..2"},
		{"=== RUN   TestParse", "--- PASS: TestParse"},
		{"# Subtest: parses", "    ok 1 - parses"},
		{"▶ suite", "  ✔ a test"},
		{"PASS src/a.test.js", "  ✓ works"},
		{"FAIL src/b.test.js", "  ✕ fails"},
		{"> GET / HTTP/1.1", "> Host: x"},
		{"< HTTP/1.1 200 OK", "< Server: x"},
		{"├── a@1.0.0", "│ └── c@1.0.0"},
		{"└── b@2.0.0", ""},
		{"#3 [3/6] RUN go vet ./...", "#3 DONE 0.4s"},
		{"Step 1/5 : FROM golang", " ---> abc"},
		{`  "name": "x",`, `  "version": "1"`},
		{"\t\"name\": \"x\",", "\t\"version\": \"1\""},
		{"/src/a.js", "  1:1  error  no-undef"},
		{"./dir:", "total 8"},
		{"Changes not staged for commit:", "  (use \"git add <file>...\")"},
	} {
		if !isHeader(c[:], 0) {
			t.Errorf("isHeader(%q, then %q) = false", c[0], c[1])
		}
		if other := "x" + c[0][1:]; c[0][0] != '.' && c[0][0] != 'C' && isHeader([]string{other, c[1]}, 0) {
			t.Errorf("isHeader(%q, then %q) = true", other, c[1])
		}
	}
}
