package budget

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Cutting by what lines say. The output of a test run, a build or an install fails in the
// middle, where a head-and-tail cut loses it. Over a limit, a result whose lines say
// something (an error, a failing test, a diagnostic, a stack frame) keeps lines in the
// order of their kinds (below) until the limit, the rest from both ends inwards. What is
// left out is written in its place, one line per gap, with its count and the shapes most
// of it has; a last line accounts for the whole cut:
//
//	[ctx-budget: 1,204 lines left out here: about 1,200 like "--- PASS: TestParse_0001 (0.00s)"]
//	[ctx-budget: cut 95,310 of 102,004 characters in 3 places (originally 30,117 tokens, 4,018 lines); kept ...]
//
// The choice depends on the text alone, so the same result always gives the same bytes.
// A text without such lines (a file, prose) is cut at head and tail; so is a JSON document
// written on many lines, whose words are data, with its top-level keys kept besides.

// Kinds of line, in the order they are kept: a line of a lower kind goes before any of a
// higher one, so comparing kinds compares their places.
const (
	kindHead = iota // the command's first lines
	kindTest        // failing tests and summary counts: what failed, in the fewest lines
	kindError
	kindDiagnostic
	kindFrame
	kindTail   // its last lines
	kindNear   // a line around an error or a failing test
	kindHeader // a line that opens a group: a commit, a file's diff, a directory, a test, a step
	kindContext
	kindWarning
	kindOther
	kinds
)

// kindNames name, in the marker, the lines kept for what they say.
var kindNames = [kinds]string{kindError: "error line", kindDiagnostic: "diagnostic", kindTest: "test failure line", kindFrame: "stack frame", kindHeader: "group header"}

const (
	// The command's first lines and its last (summary and exit) lines kept first: endLines
	// of each, fewer under a tight limit (one per endChars of it, at least 2), where they
	// would take a quarter of the room.
	endLines = 5
	endChars = 1500
	// A line longer than this is not chosen for what it says (a minified document that
	// happens to hold "error" would take the whole limit).
	longLine = 1000
)

var (
	// Failing tests of the common runners.
	testSyntax = regexp.MustCompile(`^\s*(?:--- FAIL:|FAIL\b|FAILED\b|ERROR\b|✕|✖|×|✗|●|not ok\b|test .+ \.\.\. (?:FAILED|failed)|---- .+ stdout ----|failures:|test result: FAILED|Tests run: .*(?:Failures|Errors): [1-9])|^_{3,} .+ _{3,}$`)
	// A linter's finding written under the code it is about: its code and severity.
	findingSyntax = regexp.MustCompile(`[\^~-] [A-Z]+[0-9]+ \([a-z]+\): `)
)

// errorWords mark an error or failure line; each is looked for as written, so that the
// test stays a handful of substring searches per line.
var errorWords = []string{
	"error", "Error", "ERROR", "fail", "Fail", "FAIL", "panic", "Panic", "PANIC", "fatal", "Fatal", "FATAL",
	"exception", "Exception", "Traceback", "assert", "Assert", "undefined", "not found", "denied", "E   ", " !== ",
	"No such file", "No module named", "cannot",
}

var warningWords = []string{"warning", "Warning", "WARNING", "warn ", "WARN", "deprecated", "DEPRECATED"}

// testStarts are how the lines testSyntax matches start, white space trimmed.
var testStarts = []string{"--- FAIL", "FAIL", "ERROR", "✕", "✖", "×", "✗", "●", "not ok", "test ", "---- ", "failures:", "Tests run:", "___"}

var testFirst = firstBytes(testStarts, 0)

// firstBytes marks the byte at offset at of each word: a table that lets a check skip a
// line at once when no word can start there.
func firstBytes(words []string, at int) (first [256]bool) {
	for _, w := range words {
		first[w[at]] = true
	}
	return first
}

func mayBeTest(line string) bool {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == len(line) || !testFirst[line[i]] {
		return false
	}
	t := line[i:]
	for _, p := range testStarts {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// zeroCounts are the ways a summary says nothing failed.
var zeroCounts = []string{"failures: 0", "errors: 0", "failed: 0", "failures=0", "errors=0", "0 failed", "0 failures", "0 failing", "0 errors", "0 error"}

// zeroCountsOnly reports whether a line's error words are all counts of none ("Tests run:
// 25, Failures: 0, Errors: 0"): a summary of what passed, not an error.
func zeroCountsOnly(line string) bool {
	if strings.IndexByte(line, '0') < 0 {
		return false // every count of none has a "0": most error lines are done here
	}
	lower := strings.ToLower(line)
	found := false
	for _, z := range zeroCounts {
		if strings.Contains(lower, z) {
			lower = strings.ReplaceAll(lower, z, "")
			found = true
		}
	}
	isError, _ := wordsIn(lower, errorsOnly)
	return found && !isError
}

// indented reports whether a line starts with white space or a "|" margin.
func indented(line string) bool {
	return line != "" && (line[0] == ' ' || line[0] == '\t' || line[0] == '|')
}

// isPointer reports whether a line points at code: after white space, a "|" margin or a
// line number, carets (with dashes and tildes) before any word, as compilers and linters
// write them under the code they mean ("^~~~", "---   ^^^^ expected u32").
func isPointer(line string) bool {
	if strings.IndexByte(line, '^') < 0 && strings.IndexByte(line, '~') < 0 {
		return false
	}
	t := trimLeftSet(line, &pointerLead)
	if t == "" || !strings.ContainsRune("^~-", rune(t[0])) {
		return false
	}
	for i := 0; i < len(t) && !isLetter(t[i]); i++ {
		if t[i] == '^' {
			return true
		}
	}
	return strings.HasPrefix(t, "~~~")
}

// isSourceExcerpt: pytest marks the line of code that failed with ">" and spaces, above
// the E lines that say why; an "assert" in it is code, not the error.
func isSourceExcerpt(line string) bool {
	return strings.HasPrefix(line, ">   ")
}

// pytestNotes are the lines pytest writes among its E lines about its own diff rather than
// the values compared ("Omitting 3 identical items, use -vv to show"): read first, they
// would take the room of the differing items that follow them.
var pytestNotes = []string{"Omitting ", "Differing items:", "Full diff:", "...Full output truncated", "Use -v to get", "Common items:"}

// isPytestNote reports whether a line is one of pytestNotes inside pytest's E block.
func isPytestNote(line string) bool {
	if !strings.HasPrefix(line, "E ") {
		return false
	}
	t := strings.TrimLeft(line[1:], " ")
	for _, p := range pytestNotes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// isPytestSection: a title between rules of "_" that names a section rather than a test
// that failed, as plugins write theirs ("____ coverage: platform linux, python 3.12 ____"):
// a key and a colon, where a failing test's title is its name ("____ TestX.test_y ____",
// "____ ERROR at setup of test_y ____").
func isPytestSection(line string) bool {
	if !strings.HasPrefix(line, "___") {
		return false
	}
	title := strings.Trim(line, "_ ")
	if i := strings.IndexByte(title, '['); i >= 0 {
		title = title[:i] // (a parametrized test's arguments may hold anything)
	}
	return strings.Contains(title, ": ")
}

// isBanner: a section title between rules of "=", as pytest and others head their
// sections; one with a digit is a summary ("=== 3 failed, 1,642 passed ===").
func isBanner(line string) bool {
	if !strings.HasPrefix(line, "=====") {
		return false
	}
	for i := 0; i < len(line); i++ {
		if isDigit(line[i]) {
			return false
		}
	}
	return true
}

// isQuotedName: a key and a quoted name of one word, as node's test runner lists a
// failure's fields (failureType: 'testCodeFailure'); a message has spaces, a place a
// "/" or ":".
func isQuotedName(line string) bool {
	if !strings.HasSuffix(line, "'") {
		return false // (the cheap test first: few lines end in a quote)
	}
	t := trimBlanks(line)
	colon := strings.Index(t, ": '")
	// (a lower-case key: "KeyError: 'XAF'" is Python's error)
	if colon <= 0 || t[0] < 'a' || t[0] > 'z' || !strings.HasSuffix(t, "'") || len(t) < colon+4 {
		return false
	}
	for i := 0; i < colon; i++ {
		if !isLetter(t[i]) {
			return false
		}
	}
	return !strings.ContainsAny(t[colon+3:len(t)-1], " '/:.")
}

// assertionStarts begin the lines in which test runners say what a failing assertion
// expected and what it got (jest, go's cmp and want/got, JUnit, Rust's assert_eq).
var assertionStarts = []string{"Expected:", "Received:", "expected:", "actual:", "Actual:", "-want", "+got", "want:", "got:", "- Expected", "+ Received", "left:", "right:"}

var assertionFirst = firstBytes(assertionStarts, 0)

// isAssertion reports whether an indented line starts with one of assertionStarts.
func isAssertion(line string) bool {
	if !indented(line) {
		return false
	}
	t := trimBlanks(line)
	if t == "" || !assertionFirst[t[0]] {
		return false
	}
	for _, p := range assertionStarts {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// endsInPlace: a frame written as "name (path:line:col)", indented, as node's TAP output
// and others write them without "at".
func endsInPlace(line string) bool {
	if !strings.HasSuffix(line, ")") {
		return false
	}
	open := strings.LastIndexByte(line, '(')
	return open >= 0 && isDiagnostic(line[open+1:len(line)-1]+" ")
}

// endsInQuotedPlace: a place given as a quoted value at the end of a line, as node's
// test runner writes where a test failed ("location: '/src/tax.test.js:79:3'").
func endsInQuotedPlace(line string) bool {
	if len(line) < 2 || line[len(line)-1] != '\'' && line[len(line)-1] != '"' {
		return false
	}
	open := strings.LastIndexByte(line[:len(line)-1], line[len(line)-1])
	return open >= 0 && isDiagnostic(line[open+1:len(line)-1]+" ")
}

// isShellcheckPlace: shellcheck's "In deploy/auth.sh line 7:".
func isShellcheckPlace(line string) bool {
	return strings.HasPrefix(line, "In ") && strings.HasSuffix(line, ":") && strings.Contains(line, " line ")
}

// summaryWords follow a count in the summary lines of test runners, builds and package
// managers ("3 failed, 1,642 passed", "575 warnings generated", "11 upgraded, 314 newly
// installed").
var summaryWords = []string{" passed", " failed", " failing", " failures", " errors", " error", " warnings", " warning", " skipped", " tests", " test", " upgraded", " newly installed", " removed", " packages", " suites"}

// summaryFirst marks the letters summaryWords start with (after their space).
var summaryFirst = firstBytes(summaryWords, 1)

// isSummary reports whether a line counts something a summary counts: digits, then one
// of summaryWords.
func isSummary(line string) bool {
	if strings.HasPrefix(line, "# ") {
		return isTAPCount(line)
	}
	for i := 0; i+2 < len(line); i++ {
		// a digit, a space, a letter a summary word starts with
		if !isDigit(line[i]) || line[i+1] != ' ' || !summaryFirst[line[i+2]] {
			continue
		}
		rest := line[i+1:]
		for _, w := range summaryWords {
			if strings.HasPrefix(rest, w) && (len(w) == len(rest) || !isLetter(rest[len(w)])) {
				return true
			}
		}
	}
	return false
}

// tapCounts are the counts TAP producers (node --test, tap, prove) end with, one a line:
// "# pass 984"; one of nought says nothing.
var tapCounts = []string{"# tests ", "# pass ", "# fail ", "# failed ", "# suites "}

func isTAPCount(line string) bool {
	for _, w := range tapCounts {
		if n, ok := strings.CutPrefix(line, w); ok && n != "0" && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// isFrame reports whether a line is a stack frame of Python, Go, Java and JavaScript, or a
// Rust backtrace: after white space, `File "...", line N`, a path ending in .go:N, "at "
// and a word, or "N: " and a word; or "goroutine N [". (A scanner rather than a regular
// expression: it runs on every line of every result cut, and most lines fail at their
// first byte.)
func isFrame(line string) bool {
	if rest, ok := strings.CutPrefix(line, "goroutine "); ok {
		d := digits(rest)
		return d > 0 && strings.HasPrefix(rest[d:], " [")
	}
	if line == "" || line[0] != ' ' && line[0] != '\t' {
		return false
	}
	t := trimBlanks(line)
	switch {
	case strings.HasPrefix(t, `File "`):
		return followedByDigit(t[len(`File "`):], `", line `)
	case strings.HasPrefix(t, "/"):
		return followedByDigit(t, ".go:")
	case strings.HasPrefix(t, "at "):
		return len(t) > 3 && !isSpace(t[3])
	default:
		d := digits(t)
		// (a Rust backtrace's "  12: std::panicking::begin_panic", a name; not a
		// mapping's "  25: 172," of numbers)
		return d > 0 && strings.HasPrefix(t[d:], ": ") && len(t) > d+2 && !isSpace(t[d+2]) && !isDigit(t[d+2])
	}
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// followedByDigit reports whether s holds sep with a digit right after it.
func followedByDigit(s, sep string) bool {
	for {
		i := strings.Index(s, sep)
		if i < 0 {
			return false
		}
		s = s[i+len(sep):]
		if s != "" && isDigit(s[0]) {
			return true
		}
	}
}

// isSpace is a byte of white space as regular expressions read \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isDiagnostic reports whether a line starts (after white space, and an arrow "-->" or
// "at ") with file:line or file:line:col, as compilers, linters and test runners write
// them: a path of no spaces whose name has an extension, a colon, digits, maybe a colon
// and digits again, then ":", ")", white space or the end.
func isDiagnostic(line string) bool {
	t := trimBlanks(line)
	switch {
	case strings.HasPrefix(t, "-->"):
		t = trimBlanks(t[3:])
	case strings.HasPrefix(t, "at "):
		t = trimBlanks(t[3:])
	}
	if len(t) > 2 && isLetter(t[0]) && t[1] == ':' && (t[2] == '\\' || t[2] == '/') {
		t = t[2:] // a drive letter
	}
	// the path: up to the first colon, none of its bytes a space
	i := 0
	for i < len(t) && t[i] != ':' {
		if !isPathByte(t[i]) {
			return false
		}
		i++
	}
	// its name ends with "." and a letter, then letters and digits
	j := i - 1
	for j >= 0 && (isLetter(t[j]) || isDigit(t[j]) || t[j] == '_') {
		j--
	}
	if j < 1 || t[j] != '.' || j+1 >= i || !isLetter(t[j+1]) || !(isLetter(t[j-1]) || isDigit(t[j-1]) || t[j-1] == '_') {
		return false
	}
	rest := t[i:]
	for range 2 {
		if len(rest) < 2 || rest[0] != ':' || !isDigit(rest[1]) {
			break
		}
		k := 1
		for k < len(rest) && isDigit(rest[k]) {
			k++
		}
		if k == len(rest) {
			return true
		}
		if c := rest[k]; c == ')' || c == ' ' || c == '\t' || c == '\r' {
			return true
		}
		rest = rest[k:]
		if rest[0] == ':' && (len(rest) == 1 || !isDigit(rest[1])) {
			return true
		}
	}
	return false
}

func isPathByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '/' || c == '\\' || c == '@' || c == '+' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// wordIndex finds which of a few words a line holds in one pass: a bit set of the words'
// first three bytes (hashed) lets the pass skip every place no word starts at, and words
// lists them by first byte for the check, each with its class.
type wordIndex struct {
	trigrams [1 << 16 / 64]uint64
	words    [256][]classWord
}

type classWord struct {
	word  string
	error bool // an error word; else a warning word
}

func trigram(a, b, c byte) uint32 {
	return (uint32(a)*31*31 + uint32(b)*31 + uint32(c)) & (1<<16 - 1)
}

func indexWords(errors, warnings []string) *wordIndex {
	var ix wordIndex
	add := func(w string, isError bool) {
		h := trigram(w[0], w[1], w[2])
		ix.trigrams[h/64] |= 1 << (h % 64)
		ix.words[w[0]] = append(ix.words[w[0]], classWord{w, isError})
	}
	for _, w := range errors {
		add(w, true)
	}
	for _, w := range warnings {
		add(w, false)
	}
	return &ix
}

var wordsIndex, errorsOnly = indexWords(errorWords, warningWords), indexWords(errorWords, nil)

// wordsIn reports whether s holds an error word, or else a warning word: one pass over s.
// A word in lower case counts only at the start of a word ("verror" and "stderror" are
// names); one with a capital also inside a name ("ValueError").
func wordsIn(s string, ix *wordIndex) (isError, isWarning bool) {
	for i := 0; i+2 < len(s); i++ {
		if h := trigram(s[i], s[i+1], s[i+2]); ix.trigrams[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		if i > 0 && s[i] >= 'a' && s[i] <= 'z' && isLetter(s[i-1]) {
			continue
		}
		for _, w := range ix.words[s[i]] {
			if strings.HasPrefix(s[i:], w.word) {
				if w.error {
					return true, isWarning
				}
				isWarning = true
			}
		}
	}
	return false, isWarning
}

// frequentShown is how many lines of a shape too frequent to say anything keep their
// kind all the same, as examples of it.
const frequentShown = 3

// explainLines is how many lines indented under a failing test's name are kept as its
// error lines.
const explainLines = 3

// minRepeated is the length from which a line said again is not kept again for what it
// says: a short one ("FAIL") belongs to the lines around it.
const minRepeated = 8

// parallelLines is the size of output, in lines, from which classify reads it in two
// halves at once.
const parallelLines = 1024

// lineKinds gives each line the kind its own text says.
func lineKinds(lines []string, kind []uint8) {
	for i, line := range lines {
		k := uint8(kindOther)
		if len(line) <= longLine {
			// (a line longer than that says nothing)
			k = saysKind(line)
		}
		// A test that passed ("--- PASS: TestParseError"), a file listed ("-rw-r--r-- 1
		// u u 120 Nov 1 errors.go"), a line grep found: what they say is a name or the
		// text searched, not an error of this run. (Asked last: most lines say nothing,
		// and this changes only a line that does; the cheapest checks first.)
		if k != kindOther && (isListed(line) || isGrepMatch(line) || isListedName(line) || isPassing(line)) {
			k = kindOther
		}
		kind[i] = k
	}
}

// saysKind is the kind a line's words and shape give it, a passing test's, a listed
// file's or a grep match's aside (lineKinds).
func saysKind(line string) uint8 {
	isError, isWarning := wordsIn(line, wordsIndex)
	pointer := isPointer(line) // (asked twice below)
	// Each regular expression runs only on lines a cheap test lets through: most lines
	// of a long output are none of these.
	switch {
	case isSourceExcerpt(line), isPytestNote(line):
		return kindContext // pytest's "> " line of code above its E lines, its notes among them
	case line == "E":
		// pytest's blank line among its E lines (its trailing spaces normalized away):
		// one block of error lines, whose lines are kept in their order
		return kindError
	case isBanner(line), isQuotedName(line):
		// a section's title ("==== FAILURES ===="), or a name given as a value
		// ("code: 'ERR_TEST_FAILURE'"): not an error of its own
	case isAssertion(line):
		return kindError // what a failing test expected and what it got
	case mayBeTest(line) && testSyntax.MatchString(line) && !isPytestSection(line),
		strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
		// (and a Go program's crash: what failed, as a failing test's name says)
		return kindTest
	case isError && severityNotError(line):
		return kindWarning // "f.sh:3:1: warning: ... syntax error ...": its severity says
	case isError && !zeroCountsOnly(line):
		if isSummary(line) {
			return kindTest // "3 failed, 1,642 passed"
		}
		return kindError
	case pointer && findingSyntax.MatchString(line):
		return kindDiagnostic // a linter's finding under the code: "^-- SC2086 (info): ..."
	case isWarning:
		return kindWarning // a warning: a diagnostic, but not one that fails
	// (a frame before a diagnostic: Go writes its frames as indented file:line)
	case isFrame(line), indented(line) && endsInPlace(line):
		return kindFrame
	case isDiagnostic(line), isShellcheckPlace(line), endsInQuotedPlace(line):
		return kindDiagnostic
	case isSummary(line):
		return kindTest // a summary's counts
	case pointer:
		return kindContext // a compiler's ^~~~ under the code it means
	}
	return kindOther
}

// classify gives each line its kind (the most important that applies) and says whether
// any says something: an error, a diagnostic, a failing test or a frame.
// The shapeHash of each line it reads for its shape it leaves in hashes (as shapeOf keeps
// them: never 0, 0 for a line not read), grown from buf, or nil when it read none: the
// selection reuses them to describe its gaps rather than hash those lines again.
// joined is the text lines were split from (splitLines), or "" (prettyJSON).
func classify(lines []string, joined string, kind []uint8, buf []uint64, ends int) (_ []uint8, hashes []uint64, signal bool) {
	n := len(lines)
	kind = grow(kind, n)
	if prettyJSON(lines, joined) {
		// A document of JSON is data: its words are names and values (Go's package
		// "errors" in go list -json, npm's "es-errors"), not errors of the run that
		// printed it. It says what it is by its structure: its top-level keys, kept as
		// headers below, with its first and last lines. (Its lines are not read one by
		// one: whatever they say, they say nothing here.)
		for i := range kind {
			kind[i] = kindOther
		}
	} else {
		// Each line's kind depends on the line alone: a long output is read in two
		// halves at once (the machine has two cores; the result is the same either way).
		if n >= parallelLines {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				lineKinds(lines[:n/2], kind[:n/2])
			}()
			lineKinds(lines[n/2:], kind[n/2:])
			wg.Wait()
		} else {
			lineKinds(lines, kind)
		}
		quoted(lines, kind)
		testOutput(lines, kind)
		unittestNames(lines, kind)
		countTables(lines, kind)
		verdictsTold(lines, kind)
		pythonSource(lines, kind)
	}
	// A line that says something says less when a great many lines say the same: 240
	// lines of a test's own logging ("codec_test.go:82: record 12: ...") are not 240
	// diagnostics, and would crowd out the one failure. Of the shapes of the lines kept
	// for what they say, one that more than 5 lines and a fiftieth of all have is read as
	// any other line but for its first frequentShown; failing tests excepted, which are
	// never noise.
	counts := map[uint64]int{}
	for i := range kind {
		if kind[i] >= kindError && kind[i] <= kindWarning && kind[i] != kindTail {
			if hashes == nil {
				hashes = grow(buf, n)
				clear(hashes)
			}
			hashes[i] = shapeHash(lines[i]) | 1
			counts[hashes[i]]++
		}
	}
	// A line said again says nothing new: jest repeats every failure in its closing
	// summary, and a second copy would take the room of another failure's message.
	var said map[string]bool
	for i := range kind {
		if kind[i] < kindTest || kind[i] > kindWarning || kind[i] == kindTail || len(lines[i]) < minRepeated {
			continue
		}
		if said == nil {
			said = map[string]bool{}
		}
		if said[lines[i]] {
			kind[i] = kindOther
		}
		said[lines[i]] = true
	}
	var shown map[uint64]int
	for i := range kind {
		if hashes != nil && hashes[i] != 0 {
			if c := counts[hashes[i]]; c > 5 && c*50 > n {
				// (its first few stay, as examples: a linter's first findings)
				if shown == nil {
					shown = map[uint64]int{}
				}
				if shown[hashes[i]]++; shown[hashes[i]] > frequentShown {
					kind[i] = kindOther
				}
			}
		}
		if kind[i] >= kindTest && kind[i] <= kindFrame {
			signal = true
		}
	}
	// Of each run of frames, only the first two and (in Python) the last say where: the
	// others are the way between (context, kept only when there is room).
	for i := 0; i < n; {
		if kind[i] != kindFrame {
			i++
			continue
		}
		j := i
		for j < n && (kind[j] == kindFrame || kind[j] == kindOther && j+1 < n && kind[j+1] == kindFrame) {
			j++
		}
		last := j - 1
		for last > i && kind[last] != kindFrame {
			last--
		}
		// (and the second: Java and JavaScript print the innermost call first, often an
		// assertion helper, then the test's own frame)
		second := true
		for m := i + 1; m < last; m++ {
			if kind[m] == kindFrame {
				if second {
					second = false
					continue
				}
				kind[m] = kindContext
			}
		}
		// The last frame says where only in Python's order (innermost last), where it is
		// the call that failed, kept with the exception under it; in the others' it is the
		// program's entry or the test runner's.
		if last > i+1 && !strings.Contains(lines[i], `File "`) {
			kind[last] = kindContext
		} else if strings.Contains(lines[last], `File "`) {
			kind[last] = kindError
		}
		i = j
	}
	// Context around what is kept for what it says: the line before, and the line after or,
	// when they are indented, up to contextAfter lines after (a compiler's code excerpt and
	// pointer, a test's want and got).
	// The context of an error or a failing test is kept right after the errors.
	const contextAfter = 4
	source := slices.Clone(kind)
	for i, k := range source {
		near := uint8(kindContext)
		switch k {
		case kindError, kindTest:
			near = kindNear
		case kindDiagnostic, kindFrame:
		default:
			continue
		}
		mark := func(j int) {
			if kind[j] > near {
				kind[j] = near
			}
		}
		// before: the line before; for an indented line (inside a block: a compiler's
		// excerpt, a linter's finding) back to the line that names the place the block is
		// about (file:line, shellcheck's "In f line N:"), at most 4 lines, not across a
		// blank one
		for j := i - 1; j >= 0 && j >= i-4 && lines[j] != ""; j-- {
			if isPassing(lines[j]) {
				break // (another test's lines, or the start of this one's)
			}
			mark(j)
			if !indented(lines[i]) {
				break
			}
			if isDiagnostic(lines[j]) || isShellcheckPlace(lines[j]) {
				// the place the block is about says as much as the line kept from it
				// (a finding with no file and line is no use), though its shape be
				// frequent
				if kind[j] > k {
					kind[j] = k
				}
				break
			}
		}
		for j := i + 1; j < n && j <= i+contextAfter; j++ {
			if j > i+1 && !indented(lines[j]) {
				break
			}
			mark(j)
		}
		// The lines under a failing test's name, indented under it, say why it failed
		// (go test's "x_test.go:52: got 3, want 4"): the first explainLines are kept with
		// the errors, though their shape be frequent.
		// (a count is no failing test: "12 tests in statistics" over doctest's table)
		explains := k == kindTest && (!isSummary(lines[i]) || countsFailure(lines[i]))
		for j := i + 1; explains && j < n && j <= i+explainLines && lines[j] != "" && leading(lines[j]) > leading(lines[i]); j++ {
			if kind[j] > kindError {
				kind[j] = kindError
			}
		}
	}
	// A text that reports no failure says what it is by its structure: the headers of its
	// groups, kept from both ends inwards. (One that does keeps the room for what failed.)
	// (Counts of what passed, "82 passed and 0 failed", report no failure.)
	// Its first and last lines are kept as a cut at head and tail would keep them, the
	// headers between.
	if !failed(lines, kind) && markHeaders(lines, kind) >= 2 {
		signal = true
		ends = max(ends, endLines)
	}
	// (a section's title between rules, pytest's "=== test session starts ===", is not
	// one of them: it says less than the lines after it, and at a tight limit its rules
	// cost the room of an error line)
	for i := 0; i < min(ends, n); i++ {
		if !isBanner(lines[i]) {
			kind[i] = kindHead
		}
	}
	// (the last lines that say something: a blank line at the end is not one)
	last := n
	for last > ends && lines[last-1] == "" {
		last--
	}
	for i := max(ends, last-ends); i < last; i++ {
		if kind[i] > kindTail {
			kind[i] = kindTail
		}
	}
	return kind, hashes, signal
}

// selection is a text read as lines for a cut by what they say. Entries that stand for
// lines an earlier cut left out (gap) are never kept and count the lines they stand for.
type selection struct {
	sc       *scratch
	lines    []string
	kind     []uint8
	gap      []int              // lines an earlier cut's gap line stands for; 0 for a line of the text (nil: none is a gap)
	order    []int              // entries in the order they are kept
	keep     []bool             // walk's scratch
	hashes   []uint64           // each line's shapeHash, once worked out (0: not yet)
	gapLines map[[2]int]gapNote // gapLine's, by where the gap starts and ends
	runes    []int              // each line's length in characters
	orig     original
	tool     string
	count    func(string) int // the tokens of a text
	fitted   int              // the entries kept by the last fit
	// describing is how many characters a gap's note may spend on the shapes of the lines
	// it stands for: a 35th of the limit (about 110 characters, one or two shapes, from a
	// limit of 4,000), so that under a tight one the room goes to lines kept rather than
	// to describing the others.
	describing int
	// perKind counts the lines of each kind (an earlier cut's gaps aside), for the marker
	// to say how many of a kind were left out.
	perKind [kinds]int
	// described says whether the text last written describes a gap by its shapes.
	described bool
	// ascii: each of the text's characters is one byte, so a line's length is its count
	// of characters.
	ascii bool
}

// saying is how many of the first k entries of the keeping order are lines kept for what
// they say or where they are (first and last lines, and those near an error), rather
// than for room left.
func (s *selection) saying(k int) int {
	n := 0
	for kind := range kindContext {
		n += s.perKind[kind]
	}
	return min(k, n)
}

// countGapsOnly makes every gap's note its count of lines alone, without the shapes.
func (s *selection) countGapsOnly() {
	s.describing, s.gapLines = 0, nil
}

var (
	gapSyntax       = regexp.MustCompile(`^\[(?:ctx-budget: )?([0-9,]+) lines? left out`)
	selectionSyntax = regexp.MustCompile(`^\[ctx-budget: cut ([0-9,]+) of ([0-9,]+) characters? in ([0-9,]+) places? \(originally ([0-9,]+) tokens?, ([0-9,]+) lines?\); [^\n]*\]$`)
)

// newSelection reads text, of n characters, for a cut by what its lines say: a text this
// tool cut so before keeps the original's figures, its gaps standing for what they left
// out. It returns nil for a text whose lines say nothing in particular, which is cut at
// head and tail.
// The selection's buffers come from sc and are the selection's until release.
func newSelection(text string, n, limit int, count func(string) int, tool string, sc *scratch) *selection {
	lines := splitLines(sc.lines[:0], text)
	sc.lines = lines
	s := &selection{tool: tool, sc: sc, describing: limit / 35, count: count, ascii: n == len(text)}
	again := len(lines) > 1 && selectionSyntax.MatchString(lines[len(lines)-1])
	joined := text
	if again {
		lines = lines[:len(lines)-1]
		joined = text[:strings.LastIndexByte(text, '\n')]
	}
	kind, hashes, signal := classify(lines, joined, sc.kind, sc.hashes, endsFor(limit))
	s.kind, sc.kind = kind, kind
	if hashes != nil {
		s.hashes, sc.hashes = hashes, hashes
	}
	if !signal && !again {
		return nil
	}
	if again {
		last := text[strings.LastIndexByte(text, '\n')+1:]
		m := selectionSyntax.FindStringSubmatch(last)
		s.orig = original{chars: number(m[2]), tokens: number(m[4]), lines: number(m[5])}
		s.gap = make([]int, len(lines))
		for i, line := range lines {
			if g := gapSyntax.FindStringSubmatch(line); g != nil {
				s.gap[i] = max(1, number(g[1]))
			}
		}
	} else {
		s.orig = original{chars: n, tokens: count(text), lines: countLines(text)}
	}
	s.lines = lines
	// The keeping order: by kind, in place within a kind, but the other lines from both
	// ends inwards (the head first on a tie).
	var perKind [kinds]int
	for i := range lines {
		if s.gapOf(i) == 0 {
			perKind[s.kind[i]]++
		}
	}
	s.perKind = perKind
	var at [kinds]int
	for k := 1; k < kinds; k++ {
		at[k] = at[k-1] + perKind[k-1]
	}
	s.order = grow(sc.order, at[kinds-1]+perKind[kinds-1])
	sc.order = s.order
	take := func(i int) {
		if s.gapOf(i) == 0 {
			s.order[at[s.kind[i]]] = i
			at[s.kind[i]]++
		}
	}
	for i := range lines {
		if s.kind[i] != kindOther {
			take(i)
		}
	}
	// Within a kind, a line's place in its run of lines of that kind comes before its place
	// in the text: each failure's first error line, then each one's second, so that every
	// failure is named before any is told in full. (The first and last lines stay in order.)
	depth := grow(sc.depth, len(lines))
	sc.depth = depth
	for i := range lines {
		depth[i] = 0
		if s.kind[i] == kindOther {
			continue // (the other lines are kept by place alone)
		}
		// (pytest's notes among its E lines do not end their block: the differing items
		// after "Differing items:" are the block's second line, not a new block's first)
		p := i - 1
		for p >= 0 && isPytestNote(lines[p]) {
			p--
		}
		// (a line that names a failure starts a run of its own: go's "--- FAIL: Test" after
		// the failures a framework listed inside it)
		// (and so does a finding that names its place, "a.ts(3,7): error TS2451: ...": a
		// compiler's list of errors is a list of failures, each its own)
		if p >= 0 && s.kind[i] == s.kind[p] && !(s.kind[i] == kindTest && namesFailure(lines[i])) && !startsWithPlace(lines[i]) {
			depth[i] = depth[p] + 1
		} else if s.kind[i] == kindError && indented(lines[i]) && !isFrame(lines[i]) {
			// (an indented error line a few lines under another, in one block of its
			// failure's message: "got:" and its value, then "want:")
			for q := p; q >= 0 && q >= i-6 && lines[q] != "" && indented(lines[q]); q-- {
				if s.kind[q] == kindError {
					depth[i] = depth[q] + 1
					break
				}
			}
		}
	}
	start := 0
	for k := 0; k < kindOther; k++ {
		end := start + perKind[k]
		switch k {
		case kindHead, kindTail:
		case kindHeader:
			// the groups' headers from both ends inwards, as a cut at head and tail
			// would keep them, but all the way to the middle
			bothEnds(s.order[start:end], sc)
		default:
			part := s.order[start:end]
			sort.SliceStable(part, func(a, b int) bool { return depth[part[a]] < depth[part[b]] })
			// (the failing tests of one depth from both ends of the list inwards: a
			// framework's long list of failures inside one go test would otherwise take
			// the room of how the run ended, go's own "--- FAIL" of each test after it)
			if k == kindTest {
				for a := 0; a < len(part); {
					b := a
					for b < len(part) && depth[part[b]] == depth[part[a]] {
						b++
					}
					bothEnds(part[a:b], sc)
					a = b
				}
			}
		}
		start = end
	}
	for i, j := 0, len(lines)-1; i <= j; i, j = i+1, j-1 {
		if s.kind[i] == kindOther {
			take(i)
		}
		if j != i && s.kind[j] == kindOther {
			take(j)
		}
	}
	return s
}

// shapeOf is line m's shapeHash, worked out once.
func (s *selection) shapeOf(m int) uint64 {
	if s.hashes == nil {
		s.hashes = grow(s.sc.hashes, len(s.lines))
		clear(s.hashes)
		s.sc.hashes = s.hashes
	}
	if s.hashes[m] == 0 {
		s.hashes[m] = shapeHash(s.lines[m]) | 1 // never 0
	}
	return s.hashes[m]
}

// endsFor is how many first and last lines are kept first under a limit (see endLines).
// A limit in tokens reads as about 4 characters a token.
func endsFor(limit int) int {
	return min(endLines, max(1, limit/endChars))
}

// scratch holds the buffers selections reuse from one result to the next: cutting a
// long output line by line allocates a few slices as long as the output, and a plan cuts
// hundreds of them one after another.
type scratch struct {
	lines  []string
	kind   []uint8
	order  []int
	hashes []uint64
	keep   []bool
	runes  []int
	depth  []int
	ends   []int
	out    []byte // the text a walk writes
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// grow returns buf resized to n, reallocated only when it is too small. Its contents are
// whatever was there: callers set every element.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// splitLines appends text's lines (split on "\n", as strings.Split does) to dst.
func splitLines(dst []string, text string) []string {
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return append(dst, text)
		}
		dst = append(dst, text[:i])
		text = text[i+1:]
	}
}

// gapOf is the number of lines entry i stands for as an earlier cut's gap, or 0.
func (s *selection) gapOf(i int) int {
	if s.gap == nil {
		return 0
	}
	return s.gap[i]
}

// render writes the text keeping the first k entries of the keeping order.
func (s *selection) render(k int) string {
	s.walk(k, true)
	return string(s.sc.out)
}

// walk writes the text keeping the first k entries of the keeping order to the scratch
// buffer (sc.out), or without write only measures it, and returns its length in
// characters.
func (s *selection) walk(k int, write bool) int {
	if s.keep == nil {
		s.keep = grow(s.sc.keep, len(s.lines))
		s.runes = grow(s.sc.runes, len(s.lines))
		s.sc.keep, s.sc.runes = s.keep, s.runes
		for i, line := range s.lines {
			s.runes[i] = len(line)
			if !s.ascii {
				s.runes[i] = charCount(line)
			}
		}
	}
	out := s.sc.out[:0]
	if write {
		s.described = false
	}
	keep := s.keep
	clear(keep)
	for _, i := range s.order[:k] {
		keep[i] = true
	}
	size, keptChars, places := 0, 0, 0
	var kept [kinds]int
	keepLine := func(i int) {
		if write {
			out = append(append(out, s.lines[i]...), '\n')
		}
		keptChars += s.runes[i] + 1
		kept[s.kind[i]]++
	}
	for i := 0; i < len(s.lines); {
		if keep[i] {
			keepLine(i)
			i++
			continue
		}
		j := i
		for j < len(s.lines) && !keep[j] {
			j++
		}
		gap, gapRunes := s.gapLine(i, j)
		if write && !strings.HasSuffix(gap, " left out]") {
			s.described = true
		}
		if s.shortGap(i, j, gapRunes) {
			// Lines no longer than the note that would stand for them: the lines.
			for ; i < j; i++ {
				keepLine(i)
			}
			continue
		}
		if write {
			out = append(append(out, gap...), '\n')
		}
		size += gapRunes + 1
		places++
		i = j
	}
	size += keptChars
	if keptChars > 0 {
		keptChars-- // the newline after the last kept line is the marker's
	}
	m := s.marker(max(0, s.orig.chars-keptChars), places, kept)
	if write {
		s.sc.out = append(out, m...)
	}
	return size + charCount(m)
}

// shortGap reports whether lines i..j-1 of the text (no earlier gap among them) take no
// more characters, with their newlines, than a note of noteChars would.
func (s *selection) shortGap(i, j, noteChars int) bool {
	chars := 0
	for m := i; m < j; m++ {
		if s.gapOf(m) != 0 {
			return false
		}
		if chars += s.runes[m] + 1; chars > noteChars+1 {
			return false
		}
	}
	return true
}

// gapLine stands for entries i..j-1: how many lines, and the one or two shapes most of
// them have, with an example of each; and its length in characters, which every step of a
// fit measures.
func (s *selection) gapLine(i, j int) (string, int) {
	if note, ok := s.gapLines[[2]int{i, j}]; ok {
		return note.line, note.runes
	}
	line := s.describeGap(i, j)
	if s.gapLines == nil {
		s.gapLines = map[[2]int]gapNote{}
	}
	runes := charCount(line)
	s.gapLines[[2]int{i, j}] = gapNote{line, runes}
	return line, runes
}

// gapNote is a gap's line, kept with its length in characters.
type gapNote struct {
	line  string
	runes int
}

func (s *selection) describeGap(i, j int) string {
	n := j - i // (each a line of the text, but an earlier cut's gap, which stands for its own)
	for m := i; s.gap != nil && m < j; m++ {
		n += max(1, s.gap[m]) - 1
	}
	line := "[" + plural(n, "line") + " left out"
	plain := line
	if j-i < describedGap {
		return line + "]"
	}
	// The shapes of the gap's lines: all of them in a short gap, gapSample of them
	// spread over a long one, whose counts are then estimates ("about 1,700").
	step, about := 1, ""
	if j-i > gapSample {
		step, about = (j-i)/gapSample, "about "
	}
	type common struct {
		shape   uint64
		count   int
		example string
	}
	// (at most 64 shapes, on the stack: this runs for every gap at every step of a fit;
	// found by a table of twice as many slots, each 0 or a shape's place in room plus 1)
	var room [64]common
	var slots [128]uint8
	shapes := room[:0]
	seen := 0
	for k := 0; k*step < j-i; k++ {
		// one line of each step-long stretch, at a place that varies from stretch to
		// stretch (a fixed stride would see only one of two alternating shapes)
		m := i + k*step
		if step > 1 {
			m += int(uint32(k)*2654435761>>8) % step
		}
		if m >= j || s.gapOf(m) != 0 {
			continue
		}
		seen++
		h := s.shapeOf(m)
		slot := h >> 1 // (the low bit is always set)
		for slots[slot%128] != 0 && shapes[slots[slot%128]-1].shape != h {
			slot++
		}
		switch at := slots[slot%128]; {
		case at != 0:
			shapes[at-1].count++
		case len(shapes) < len(room):
			shapes = append(shapes, common{h, 1, s.lines[m]})
			slots[slot%128] = uint8(len(shapes))
		}
	}
	// The most common first, in the order first seen on a tie: an insertion sort, stable
	// as sort.SliceStable, without its allocations.
	for a := 1; a < len(shapes); a++ {
		for b := a; b > 0 && shapes[b].count > shapes[b-1].count; b-- {
			shapes[b], shapes[b-1] = shapes[b-1], shapes[b]
		}
	}
	top, covered := shapes[:0:0], 0
	for _, c := range shapes[:min(2, len(shapes))] {
		if c.count >= 3 {
			top = append(top, c)
			covered += c.count
		}
	}
	if covered == 0 || 2*covered < seen {
		return line + "]"
	}
	for k, c := range top {
		count := c.count
		if step > 1 {
			// scaled to the gap, to two significant figures
			count = roundTo2(c.count * (j - i) / seen)
		}
		ex := c.example
		if charCount(ex) > 80 {
			ex = ex[:runeOffset(ex, 77)] + "..."
		}
		sep := ", "
		if k == 0 {
			sep = ": "
		}
		line += fmt.Sprintf("%s%s%s like %q", sep, about, human.Thousands(count), ex)
	}
	if len(line)-len(plain) > s.describing {
		return plain + "]"
	}
	return line + "]"
}

// roundTo2 rounds n to two significant figures.
func roundTo2(n int) int {
	unit := 1
	for n/unit >= 100 {
		unit *= 10
	}
	return (n + unit/2) / unit * unit
}

// describedGap is the fewest lines a gap must leave out to be described by its shapes:
// a shorter one is told by its count alone, which costs less of the limit.
const describedGap = 10

// gapSample is how many lines of a long gap are read for its shapes.
const gapSample = 64

// marker accounts for a cut by what lines say.
func (s *selection) marker(cut, places int, kept [kinds]int) string {
	// What it kept for what it says, and of those kinds how many it left out: "kept 8 of
	// 10 error lines" says the cut dropped errors, where a re-run would find them.
	var parts []string
	for _, k := range []int{kindError, kindDiagnostic, kindTest, kindFrame, kindHeader} {
		switch {
		case kept[k] > 0 && kept[k] < s.perKind[k]:
			parts = append(parts, human.Thousands(kept[k])+" of "+plural(s.perKind[k], kindNames[k]))
		case kept[k] > 0:
			parts = append(parts, plural(kept[k], kindNames[k]))
		case s.perKind[k] > 0:
			parts = append(parts, "none of "+plural(s.perKind[k], kindNames[k]))
		}
	}
	what := "the first and last lines"
	if len(parts) > 0 {
		what = strings.Join(parts, ", ")
	}
	call := "the tool call"
	if s.tool != "" {
		call = "the " + s.tool + " call"
	}
	return "[ctx-budget: cut " + human.Thousands(cut) + " of " + plural(s.orig.chars, "character") + " in " +
		plural(places, "place") + " (originally " + plural(s.orig.tokens, "token") + ", " + plural(s.orig.lines, "line") +
		"); kept " + what + "; to see the rest, re-run " + call + " narrowed to the part you need]"
}

// fit keeps the most entries, in the keeping order, whose text measures within limit
// (and, with a limit in characters and most > 0, counts at most most tokens); ok is
// false when not even the marker alone fits.
// A limit in characters is met by measuring without writing: fits of the text are
// found with walk alone, and the text written once; under a bound in tokens too, each
// text tried is written by the walk that measures it, and counted.
func (s *selection) fit(limit int, measure func(string) int, inTokens bool, most int) (string, bool) {
	fits := func(k int) bool {
		switch {
		case inTokens:
			return measure(s.render(k)) <= limit
		case most == 0:
			return s.walk(k, false) <= limit
		}
		// (measured as it is written: one walk)
		return s.walk(k, true) <= limit && s.count(string(s.sc.out)) <= most
	}
	if !fits(0) {
		return "", false
	}
	lo, hi := 0, len(s.order) // lo fits; nothing above hi does
	if most > 0 && s.fitted > 0 {
		// Fitted again under a token bound, after a fit to the characters alone that kept
		// too many tokens: a few lines too many, most often, so look down from there in
		// growing steps before halving.
		hi = s.fitted - 1
		for step := 1; hi-step > 0; step *= 2 {
			if fits(hi - step + 1) {
				lo = hi - step + 1
				break
			}
			hi -= step
		}
	}
	if !inTokens {
		// The kept lines alone must fit: no more of them than their lengths allow.
		sum := 0
		for k, i := range s.order {
			if sum += s.runes[i] + 1; sum > limit { // (runes: set by the walk of fits(0))
				hi = min(hi, k)
				break
			}
		}
	}
	for lo < hi {
		if mid := (lo + hi + 1) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	s.fitted = lo
	return s.render(lo), true
}

// shapeHash is a hash of a line's shape: the line with its numbers, hexadecimal hashes
// and paths masked (each read as one "#"), so that lines that differ only in those group
// together. A word here is a run of letters, digits and "_.-/": with a "/" it is a path,
// all hexadecimal and 7 long or more a hash; else only its runs of digits are masked.
// (FNV-1a, computed as the line is read: no masked copy is made.)
func shapeHash(line string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	// The first shapeBytes bytes are enough to tell lines apart.
	if len(line) > shapeBytes {
		line = line[:shapeBytes]
	}
	for i := 0; i < len(line); {
		c := line[i]
		if !wordByte[c] {
			h = (h ^ uint64(c)) * prime
			i++
			continue
		}
		// One pass over the word: whether it is a path or a hash, and the hash it would
		// give with its runs of digits masked, of which one is kept at its end (the line
		// read twice cost a tenth of a cut).
		j := i
		path, hex := false, true
		hw, digit := h, false
		for j < len(line) && wordByte[line[j]] {
			c := line[j]
			path = path || c == '/'
			hex = hex && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f')
			j++
			if isDigit(c) {
				if digit {
					continue // one "#" for a run of digits
				}
				digit, c = true, '#'
			} else {
				digit = false
			}
			hw = (hw ^ uint64(c)) * prime
		}
		if path || hex && j-i >= 7 {
			h = (h ^ '#') * prime
		} else {
			h = hw
		}
		i = j
	}
	return h
}

// shapeBytes is how much of a line its shape reads.
const shapeBytes = 96

// wordByte marks the bytes of a word as shapeHash reads words.
var wordByte = func() (w [256]bool) {
	for c := 0; c < 256; c++ {
		w[c] = isWordByte(byte(c))
	}
	return w
}()

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/'
}

// hasSelection reports whether text is the output of a cut by what lines say.
func hasSelection(text string) bool {
	i := strings.LastIndexByte(text, '\n')
	return i >= 0 && selectionSyntax.MatchString(text[i+1:])
}

// passStarts begin the lines in which test runners report a test that passed or started:
// go test (-v), TAP, node's spec reporter, mocha, jest's file line.
var passStarts = []string{"--- PASS:", "--- SKIP:", "=== RUN", "=== CONT", "=== PAUSE", "=== NAME", "ok  ", "ok \t", "✔ ", "✓ ", "√ ", "PASS "}

// isPassing reports whether a line reports a test that passed or started: one of
// passStarts after white space, TAP's "ok N - name", or a name followed by " ... ok"
// (unittest, cargo test).
func isPassing(line string) bool {
	t := trimBlanks(line)
	if t == "" {
		return false
	}
	switch t[0] {
	case '-', '=', 'o', 'P', 0xe2: // (0xe2: the first byte of ✔, ✓ and √)
		for _, p := range passStarts {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
		if rest, ok := strings.CutPrefix(t, "ok "); ok {
			d := digits(rest)
			return d > 0 && strings.HasPrefix(rest[d:], " - ")
		}
	}
	return strings.HasSuffix(t, " ... ok") || strings.HasSuffix(t, " ... skipped") || strings.Contains(t, " ... skipped ") ||
		pytestPassed(t)
}

// pytestPassed: pytest -v's "tests/test_x.py::TestCache::test_error_handling PASSED [ 66%]",
// a test's id (its file, "::", its name) and a verdict that is not a failure.
func pytestPassed(t string) bool {
	i := strings.Index(t, "::")
	if i <= 0 || strings.ContainsAny(t[:i], " \t") {
		return false
	}
	rest := t[i:]
	for _, v := range []string{" PASSED", " SKIPPED", " XFAIL", " XPASS"} {
		if j := strings.Index(rest, v); j > 0 && !strings.ContainsAny(rest[:j], " \t") {
			return true
		}
	}
	return false
}

// isListed reports whether a line is an entry of a long listing (ls -l): a file type and
// nine permission letters, then white space.
func isListed(line string) bool {
	if len(line) < 11 || !strings.ContainsRune("-dlcbps", rune(line[0])) {
		return false
	}
	for i := 1; i < 10; i++ {
		if !strings.ContainsRune("rwxsStT-", rune(line[i])) {
			return false
		}
	}
	c := line[10]
	return c == ' ' || (c == '.' || c == '+' || c == '@') && len(line) > 11 && line[11] == ' '
}

// isGrepMatch reports whether a line is one grep -n found: a path of no spaces, a colon, a
// line number and a colon, then the line's text at once (a compiler or a test log puts a
// space or a column number there).
func isGrepMatch(line string) bool {
	i := strings.IndexByte(line, ':')
	if i <= 0 || strings.IndexByte(line[:i], ' ') >= 0 || strings.IndexByte(line[:i], '\t') >= 0 {
		return false
	}
	d := digits(line[i+1:])
	j := i + 1 + d
	return d > 0 && j+1 < len(line) && line[j] == ':' && line[j+1] != ' ' && !isDigit(line[j+1])
}

// isCommit reports whether a line opens a commit in git log or git show: "commit" and a
// hash of at least 7 hexadecimal digits.
func isCommit(line string) bool {
	rest, ok := strings.CutPrefix(line, "commit ")
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && (isDigit(rest[n]) || rest[n] >= 'a' && rest[n] <= 'f') {
		n++
	}
	return n >= 7 && (n == len(rest) || rest[n] == ' ')
}

// diffHeads are the lines of a diff's header between "diff --git" and its first hunk.
var diffHeads = []string{"index ", "new file", "deleted file", "old mode", "new mode", "similarity ", "rename ", "copy ", "Binary files", "--- ", "+++ ", "@@ "}

// quoted reads the lines that quote other text rather than report on this run: a commit's
// message and stat lines in git log, the lines of a diff (added, removed, context). An
// error word there ("t.Errorf" added by a commit) is the text's, not an error.
func quoted(lines []string, kind []uint8) {
	inCommit, inDiff := false, false
	for i, l := range lines {
		switch {
		case isCommit(l):
			inCommit, inDiff = true, false
		case strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "diff -") || strings.HasPrefix(l, "@@ "):
			// (a file's name, a hunk's function: "@@ -12,6 +12,9 @@ func f() error {")
			inDiff = true
		case l == "":
			continue
		case inDiff && (l[0] == '+' || l[0] == '-' || l[0] == ' ' || l[0] == '\\'):
		case inDiff && hasAnyPrefix(l, diffHeads):
			continue
		case inCommit && (l[0] == ' ' || strings.HasPrefix(l, "Author:") || strings.HasPrefix(l, "Date:") || strings.HasPrefix(l, "Merge:")):
			inDiff = false
		default:
			inCommit, inDiff = false, false
			continue
		}
		if kind[i] >= kindTest && kind[i] <= kindWarning {
			kind[i] = kindOther
		}
	}
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// unittestNames reads unittest -v's tests whose docstring takes the verdict's line: the
// name alone, "test_getattr_failure (test.test_urlparse.UrlParseTestCase.test_getattr_failure)"
// or a doctest's "_calc_errors (test.test_statistics)", and under it the docstring's first
// line, "Test that __getattr__() fails correctly. ... ok". The test passed: its name and its
// docstring are no error, whatever words they hold.
func unittestNames(lines []string, kind []uint8) {
	for i := 0; i+1 < len(lines); i++ {
		if kind[i] == kindOther && kind[i+1] == kindOther || !isPassing(lines[i+1]) || !isBareTestName(lines[i]) {
			continue
		}
		kind[i], kind[i+1] = kindOther, kindOther
	}
}

// isListedName reports whether a line is an indented dotted name and nothing else, as
// doctest lists the items it found no tests in ("    statistics.StatisticsError"): a name,
// not an error. (A traceback's exception line is not indented, and has its message.)
func isListedName(line string) bool {
	if !indented(line) {
		return false
	}
	t := trimBlanks(line)
	if !strings.Contains(t, ".") || t[0] == '.' || t[len(t)-1] == '.' {
		return false
	}
	for _, c := range []byte(t) {
		if c != '.' && c != '_' && !isLetter(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

// isBareTestName reports whether a line is a test's name and where it is, as unittest
// writes them, and nothing else: "name (dotted.path)".
func isBareTestName(line string) bool {
	open := strings.Index(line, " (")
	if open <= 0 || !strings.HasSuffix(line, ")") || strings.ContainsAny(line[:open], " \t") {
		return false
	}
	for _, c := range []byte(line[open+2 : len(line)-1]) {
		if c != '.' && c != '_' && !isLetter(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

// testOutput reads go test -v: the lines a test prints come under its "=== RUN" (or "===
// CONT"), before its verdict. Those of a test that failed say why it failed (an
// assertion's message, a diff of what it wanted and got), each kept as an error line; those
// of a test that passed are its logging, not errors of the run, whatever words they hold.
func testOutput(lines []string, kind []uint8) {
	var failing map[string]bool
	for _, l := range lines {
		t := trimBlanks(l)
		if rest, ok := strings.CutPrefix(t, "--- FAIL: "); ok {
			if failing == nil {
				failing = map[string]bool{}
			}
			name, _, _ := strings.Cut(rest, " ")
			failing[name] = true
		}
	}
	cur := ""
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "=== "); ok {
			f := strings.Fields(rest)
			cur = ""
			if len(f) == 2 && (f[0] == "RUN" || f[0] == "CONT" || f[0] == "NAME") {
				cur = f[1]
			}
			continue
		}
		t := trimBlanks(l)
		if strings.HasPrefix(t, "--- ") || l == "PASS" || l == "FAIL" || strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "panic: ") {
			cur = ""
			continue
		}
		if cur == "" || l == "" {
			continue
		}
		switch {
		case failing[cur]:
			if kind[i] > kindError {
				kind[i] = kindError
			}
		case kind[i] >= kindError && kind[i] <= kindWarning:
			kind[i] = kindOther
		}
	}
}

// isHeader reports whether line i opens a group of the lines after it, as tools that list
// many of something head each: a commit, a file's diff, a directory of ls -R, a top-level
// test of go test -v, a test file of jest or a suite of node's runner, a section of git
// status or apt-get, a numbered build step, a request and a response of curl -v, a key of a
// JSON document's top level, a package at the top of npm ls.
func isHeader(lines []string, i int) bool {
	l := lines[i]
	switch {
	case l == "":
		return false
	case !headerFirst[l[0]]:
		return sectionTitle(lines, i) // (no other case can hold: most lines are done here)
	case isCommit(l), strings.HasPrefix(l, "diff --git "):
		return true
	case strings.HasPrefix(l, "=== RUN   "):
		return !strings.Contains(l, "/")
	case strings.HasPrefix(l, "# Subtest: "), strings.HasPrefix(l, "▶ "), strings.HasPrefix(l, "PASS "), strings.HasPrefix(l, "FAIL "):
		return true
	case strings.HasPrefix(l, "> GET "), strings.HasPrefix(l, "> POST "), strings.HasPrefix(l, "< HTTP/"):
		return true
	case strings.HasPrefix(l, "├── "), strings.HasPrefix(l, "└── "):
		return true
	case l[0] == '#' && len(l) > 2 && isDigit(l[1]):
		// a build step: "#3 [3/6] RUN go vet ./..."
		d := digits(l[1:])
		return strings.HasPrefix(l[1+d:], " [")
	case strings.HasPrefix(l, "Step ") && strings.Contains(l, " : "):
		return true
	case l[0] == ' ' || l[0] == '\t':
		// a key of a JSON document's top level
		t := trimBlanks(l)
		in := len(l) - len(t)
		if l[0] == ' ' && in > 2 || l[0] == '\t' && in > 1 || !strings.HasPrefix(t, `"`) {
			return false
		}
		end := strings.Index(t[1:], `": `)
		return end > 0 && !strings.Contains(t[1:end+1], `"`)
	case l[0] == '/' && !strings.ContainsAny(l, " \t:") && i+1 < len(lines) && indented(lines[i+1]):
		// a file and the findings indented under it, as eslint writes them
		return true
	}
	return sectionTitle(lines, i)
}

// headerFirst marks the bytes a line that isHeader reads other than by sectionTitle may
// start with: keep it in step with isHeader's cases.
var headerFirst = firstBytes([]string{"commit ", "diff --git ", "=== RUN", "# Subtest: ", "▶ ", "PASS ", "FAIL ", "> ", "< ", "├── ", "└── ", "Step ", " ", "\t", "/"}, 0)

// sectionTitle reports whether line i, not empty, ends with a colon and titles the lines
// after it: ls -R's directory, then "total N"; a section of git status or apt-get, then
// its indented entries or hints.
func sectionTitle(lines []string, i int) bool {
	l := lines[i]
	if !strings.HasSuffix(l, ":") || i+1 >= len(lines) {
		return false
	}
	next := lines[i+1]
	return strings.HasPrefix(next, "total ") && !strings.Contains(l, " ") ||
		!isDiagnostic(l) && (strings.HasPrefix(next, "  (use ") || strings.HasPrefix(next, "\t") || strings.HasPrefix(l, "The following "))
}

// markHeaders gives the kind of a group's header to the lines that open groups (isHeader),
// of those not kept for what they say, and returns how many there are.
func markHeaders(lines []string, kind []uint8) int {
	n := 0
	class, file := "", ""
	for i := range lines {
		// grep -n: the first match in each file heads the file's matches
		if isGrepMatch(lines[i]) {
			f := lines[i][:strings.IndexByte(lines[i], ':')]
			if f != file && kind[i] > kindHeader {
				kind[i] = kindHeader
				n++
			}
			file = f
			continue
		}
		// unittest -v: the first test of each class heads the class's tests
		if c := unittestClass(lines[i]); c != "" {
			if c != class && kind[i] > kindHeader {
				kind[i] = kindHeader
				n++
			}
			class = c
			continue
		}
		if kind[i] > kindHeader && len(lines[i]) <= longLine && isHeader(lines, i) {
			kind[i] = kindHeader
			n++
		}
	}
	return n
}

// bothEnds reorders part (in the order of the text) first, last, second, second to last,
// and so on.
func bothEnds(part []int, sc *scratch) {
	in := append(sc.ends[:0], part...)
	sc.ends = in
	for k, i, j := 0, 0, len(in)-1; i <= j; i, j = i+1, j-1 {
		part[k] = in[i]
		k++
		if j != i {
			part[k] = in[j]
			k++
		}
	}
}

// unittestClass is the class of a test in unittest -v's listing, "name (module.Class.name)
// ... ok", or "".
func unittestClass(line string) string {
	open := strings.Index(line, " (")
	if open <= 0 || !strings.Contains(line, ") ... ") || strings.ContainsAny(line[:open], " \t") {
		return ""
	}
	end := strings.IndexByte(line[open:], ')')
	full := line[open+2 : open+end]
	dot := strings.LastIndexByte(full, '.')
	if dot <= 0 || strings.ContainsAny(full, " ") {
		return ""
	}
	return full[:dot]
}

// failed reports whether a text's kinds report a failure: an error, a diagnostic, a frame, or
// a test line other than a count of what passed.
func failed(lines []string, kind []uint8) bool {
	for i, k := range kind {
		switch k {
		case kindError, kindDiagnostic, kindFrame:
			return true
		case kindTest:
			if !isSummary(lines[i]) || countsFailure(lines[i]) {
				return true
			}
		}
	}
	return false
}

// leading is the width of a line's leading white space.
func leading(line string) int { return len(line) - len(trimBlanks(line)) }

// countTables reads a run of more than three counts of one thing, one a line ("3 tests in
// statistics.mode", doctest's table by function), as a table (TAP's closing counts, "#
// pass 984", "# fail 3", count different things): its first and last lines are
// summary counts, those between are the table's rows.
func countTables(lines []string, kind []uint8) {
	for i := 0; i < len(lines); {
		if kind[i] != kindTest {
			i++ // (no table starts here)
			continue
		}
		j := i
		noun := countedNoun(lines[i])
		for j < len(lines) && kind[j] == kindTest && isSummary(lines[j]) && countedNoun(lines[j]) == noun {
			j++
		}
		if j-i > 3 && noun != "" {
			for m := i + 1; m < j-1; m++ {
				if isError, _ := wordsIn(lines[m], errorsOnly); !isError || zeroCountsOnly(lines[m]) {
					kind[m] = kindOther
				}
			}
		}
		i = max(j, i+1)
	}
}

// verdictsTold reads unittest -v's verdict lines, "test_x (m.C.test_x) ... FAIL", of
// tests whose failure it reports again at the end under "FAIL: test_x (m.C.test_x)" with
// the traceback: the name is kept there, with what explains it.
func verdictsTold(lines []string, kind []uint8) {
	var told map[string]bool
	for _, l := range lines {
		for _, p := range []string{"FAIL: ", "ERROR: "} {
			if name, ok := strings.CutPrefix(l, p); ok {
				if told == nil {
					told = map[string]bool{}
				}
				told[name] = true
			}
		}
	}
	if told == nil {
		return
	}
	for i, l := range lines {
		name, verdict, ok := strings.Cut(l, " ... ")
		if ok && told[name] && (verdict == "FAIL" || verdict == "ERROR") {
			kind[i] = kindOther
		}
	}
}

// pythonSource reads a Python traceback: the line of code under each frame ("    self.
// assertEqual(x, 4)") is code, its "assert" no error, and the "Traceback (most recent call
// last):" that opens it says less than the exception at its end; both are kept as context
// of the error.
func pythonSource(lines []string, kind []uint8) {
	for i, l := range lines {
		// the diff unittest writes under "AssertionError: 'a' != 'b'" ("- a", "+ b", "? ^"):
		// what it expected and what it got
		if i > 0 && kind[i] > kindError && len(l) > 1 && strings.ContainsRune("-+?", rune(l[0])) && l[1] == ' ' {
			j := i - 1
			for j > 0 && j > i-6 && len(lines[j]) > 1 && strings.ContainsRune("-+?", rune(lines[j][0])) && lines[j][1] == ' ' {
				j--
			}
			if kind[j] == kindError && strings.Contains(lines[j], "Error: ") && !indented(lines[j]) {
				kind[i] = kindError
			}
		}
		if l == "Traceback (most recent call last):" && kind[i] == kindError {
			kind[i] = kindContext
			continue
		}
		if i == 0 || kind[i] < kindError || kind[i] > kindDiagnostic {
			continue
		}
		p := strings.TrimLeft(lines[i-1], " ")
		if strings.HasPrefix(p, `File "`) && leading(l) > leading(lines[i-1]) {
			kind[i] = kindContext
		}
	}
}

// countedNoun is the word after a line's first number: what it counts.
func countedNoun(line string) string {
	for i := 0; i < len(line); i++ {
		if isDigit(line[i]) {
			rest := trimLeftSet(line[i:], &numberBytes)
			rest = strings.TrimLeft(rest, " ")
			end := 0
			for end < len(rest) && isLetter(rest[end]) {
				end++
			}
			return rest[:end]
		}
	}
	return ""
}

// notErrors are the severities a compiler or a linter writes after a place for a finding
// that does not fail the build.
var notErrors = []string{": warning: ", ": note: ", ": info: ", ": style: "}

// severityFirst are the severities a tool starts its own line with when it is not an
// error (cargo's and uv's "warning: ...", "note: ...").
var severityFirst = []string{"warning: ", "warning[", "WARNING: ", "note: ", "info: "}

// severityNotError reports whether a diagnostic line says, after its file:line or as its
// first word, that it is a warning or a note: its message may name an error ("the
// mentioned syntax error", "Failed to hardlink files; falling back") without being one.
func severityNotError(line string) bool {
	for _, w := range severityFirst {
		if strings.HasPrefix(line, w) {
			return true
		}
	}
	for _, w := range notErrors {
		if i := strings.Index(line, w); i > 0 && isDiagnostic(line[:i+1]+" ") {
			return true
		}
	}
	return false
}

// prettyJSON reports whether lines are JSON written on many lines, one document or a
// stream of them (go list -json, npm ls --json, jq): the first line that is not blank is a
// lone "{" or "[", and the whole text reads as JSON values. (JSON written one value a line,
// a structured log, is read line by line as any log: its "level":"error" is an error.)
//
// joined is lines joined by "\n" when the caller has it (the text they were split from),
// which spares joining them again; "" to have them joined here.
func prettyJSON(lines []string, joined string) bool {
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return false
	}
	if t := strings.TrimSpace(lines[first]); t != "{" && t != "[" {
		return false
	}
	var text string
	if joined != "" {
		at := 0
		for _, l := range lines[:first] {
			at += len(l) + 1
		}
		text = joined[at:]
	} else {
		text = strings.Join(lines[first:], "\n")
	}
	// One value, read once, where decoding reads it twice: transcript.Valid reads it by
	// the grammar encoding/json's Valid reads it by (neither checks the bytes of a string
	// as UTF-8), several times as fast; but encoding/json refuses a value nested deeper
	// than 10,000, which a text with no more than 10,000 brackets cannot be.
	if transcript.Valid(text) && (strings.Count(text, "[")+strings.Count(text, "{") <= 10_000 || json.Valid([]byte(text))) {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(text))
	for values := 0; ; values++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return values > 0
		} else if err != nil {
			return false
		}
	}
}

// namesFailure reports whether a line names a failing test in go test's own words ("---
// FAIL: TestX"), the verdict that sums up what a test framework printed inside it.
func namesFailure(line string) bool {
	return strings.HasPrefix(trimBlanks(line), "--- FAIL: ")
}

// startsWithPlace reports whether a line starts at its first byte with the file and line it
// is about: file:line[:col] or file(line,col), as compilers and linters write a finding.
func startsWithPlace(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	if isDiagnostic(line) {
		return true
	}
	open := strings.IndexByte(line, '(')
	if open <= 0 || strings.ContainsAny(line[:open], " \t") {
		return false
	}
	rest := line[open+1:]
	d := digits(rest)
	if d == 0 || len(rest) <= d || rest[d] != ',' {
		return false
	}
	e := digits(rest[d+1:])
	return e > 0 && strings.HasPrefix(rest[d+1+e:], "):")
}

// trimBlanks is strings.TrimLeft(s, " \t"), which builds its set of bytes on every call:
// classifying the lines of outputs called it on most lines, a tenth of the time it took.
func trimBlanks(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}

// byteSet is a set of ASCII bytes, for trimLeftSet.
type byteSet [utf8.RuneSelf]bool

func newByteSet(bytes string) (set byteSet) {
	for i := range len(bytes) {
		set[bytes[i]] = true
	}
	return set
}

// trimLeftSet is strings.TrimLeft(s, cutset) for a cutset of ASCII bytes made once.
func trimLeftSet(s string, set *byteSet) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && set[s[i]] {
		i++
	}
	return s[i:]
}

var (
	pointerLead = newByteSet(" \t|0123456789") // what may come before a pointer's ^ or ~ (isPointer)
	numberBytes = newByteSet("0123456789,.")   // a number as counts write it (countedNoun)
)
