package budget

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
)

// Cutting by what lines say. The output of a test run, a build or an install fails in the
// middle, where a head-and-tail cut loses it. Over a limit, a result whose lines say
// something (an error, a diagnostic, a failing test, a stack frame) keeps lines in this
// order until the limit: the command's first lines, error and failure lines, file:line
// diagnostics, failing tests, the first and last frames of each stack trace, the summary
// lines at the end, a line of context around each of those, warnings, and then the rest
// from both ends inwards. What is left out is written in its place, one line per gap,
// with its count and the shape most of it has; a last line accounts for the whole cut:
//
//	[ctx-budget: 1,204 lines left out here, 1,180 like "--- PASS: TestParse_0001 (0.00s)"]
//	[ctx-budget: cut 95,310 of 102,004 characters in 3 places (originally 30,117 tokens, 4,018 lines); kept ...]
//
// The choice depends on the text alone, so the same result always gives the same bytes.
// A text without such lines (a file, prose, a JSON document) is cut at head and tail.

// Kinds of line, in the order they are kept.
const (
	kindHead = iota
	kindError
	kindDiagnostic
	kindTest
	kindFrame
	kindTail
	kindContext
	kindWarning
	kindOther
	kinds
)

// kindNames name, in the marker, the lines kept for what they say.
var kindNames = [kinds]string{kindError: "error line", kindDiagnostic: "diagnostic", kindTest: "test failure line", kindFrame: "stack frame"}

const (
	headLines = 5 // the command's first lines
	tailLines = 5 // its summary and exit lines
	// A line longer than this is not chosen for what it says (a minified document that
	// happens to hold "error" would take the whole limit).
	longLine = 1000
)

var (
	// file:line or file:line:col at the start of a line (after white space or an arrow),
	// as compilers, linters and test runners write them.
	diagnosticSyntax = regexp.MustCompile(`^\s*(?:-->\s*|at\s+)?(?:[A-Za-z]:)?[\w./\\@+-]*\w\.[A-Za-z][\w]*:\d+(?::\d+)?(?:[:)\s]|$)`)
	// Failing tests of the common runners.
	testSyntax = regexp.MustCompile(`^\s*(?:--- FAIL:|FAIL\b|FAILED\b|ERROR\b|✕|×|✗|●|not ok\b|test .+ \.\.\. (?:FAILED|failed)|---- .+ stdout ----|failures:|test result: FAILED|Tests run: .*(?:Failures|Errors): [1-9])|^_{3,} .+ _{3,}$`)
	// Stack frames: Python, Go, Java and JavaScript, Rust backtraces.
	frameSyntax = regexp.MustCompile(`^\s+File ".*", line \d+|^\s+/.*\.go:\d+|^goroutine \d+ \[|^\s+at \S|^\s+\d+: \S`)
)

// errorWords mark an error or failure line; each is looked for as written, so that the
// test stays a handful of substring searches per line.
var errorWords = []string{
	"error", "Error", "ERROR", "fail", "Fail", "FAIL", "panic", "Panic", "PANIC", "fatal", "Fatal", "FATAL",
	"exception", "Exception", "Traceback", "assert", "Assert", "undefined", "not found", "denied", "E   ",
}

var warningWords = []string{"warning", "Warning", "WARNING", "warn ", "WARN", "deprecated", "DEPRECATED"}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// classify gives each line its kind (the most important that applies) and says whether
// any says something: an error, a diagnostic, a failing test or a frame.
func classify(lines []string) (kind []uint8, signal bool) {
	n := len(lines)
	kind = make([]uint8, n)
	for i, line := range lines {
		k := uint8(kindOther)
		switch {
		case len(line) > longLine:
		case testSyntax.MatchString(line):
			k = kindTest
		case containsAny(line, errorWords):
			k = kindError
		case strings.IndexByte(line, ':') >= 0 && diagnosticSyntax.MatchString(line):
			k = kindDiagnostic
		case frameSyntax.MatchString(line):
			k = kindFrame
		case containsAny(line, warningWords):
			k = kindWarning
		}
		if k <= kindFrame && k != kindHead {
			signal = true
		}
		kind[i] = k
	}
	// Of each run of frames, only the first and the last say where: the others are the
	// way between (context, kept only when there is room).
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
		for m := i + 1; m < last; m++ {
			if kind[m] == kindFrame {
				kind[m] = kindContext
			}
		}
		i = j
	}
	// A line of context on either side of what is kept for what it says.
	for i := range kind {
		if kind[i] >= kindError && kind[i] <= kindFrame {
			for _, j := range []int{i - 1, i + 1} {
				if j >= 0 && j < n && kind[j] > kindContext {
					kind[j] = kindContext
				}
			}
		}
	}
	for i := 0; i < min(headLines, n); i++ {
		kind[i] = kindHead
	}
	for i := max(headLines, n-tailLines); i < n; i++ {
		if kind[i] > kindTail {
			kind[i] = kindTail
		}
	}
	return kind, signal
}

// selection is a text read as lines for a cut by what they say. Entries that stand for
// lines an earlier cut left out (gap) are never kept and count the lines they stand for.
type selection struct {
	lines  []string
	kind   []uint8
	gap    []int // lines an earlier cut's gap line stands for; 0 for a line of the text
	order  []int // entries in the order they are kept
	orig   original
	tool   string
	signal bool
}

var (
	gapSyntax       = regexp.MustCompile(`^\[ctx-budget: ([0-9,]+) lines? left out here`)
	selectionSyntax = regexp.MustCompile(`^\[ctx-budget: cut ([0-9,]+) of ([0-9,]+) characters? in ([0-9,]+) places? \(originally ([0-9,]+) tokens?, ([0-9,]+) lines?\); [^\n]*\]$`)
)

// newSelection reads text for a cut by what its lines say: a text this tool cut so before
// keeps the original's figures, its gaps standing for what they left out.
func newSelection(text string, n int, count func(string) int, tool string) *selection {
	lines := strings.Split(text, "\n")
	s := &selection{tool: tool}
	if last := lines[len(lines)-1]; len(lines) > 1 && selectionSyntax.MatchString(last) {
		m := selectionSyntax.FindStringSubmatch(last)
		s.orig = original{chars: number(m[2]), tokens: number(m[4]), lines: number(m[5])}
		lines = lines[:len(lines)-1]
		s.gap = make([]int, len(lines))
		for i, line := range lines {
			if g := gapSyntax.FindStringSubmatch(line); g != nil {
				s.gap[i] = max(1, number(g[1]))
			}
		}
	} else {
		s.orig = original{chars: n, tokens: count(text), lines: countLines(text)}
		s.gap = make([]int, len(lines))
	}
	s.lines = lines
	s.kind, s.signal = classify(lines)
	// The keeping order: by kind, then, within a kind, from both ends inwards (the head
	// first on a tie), which for the head and tail kinds is their place.
	s.order = make([]int, 0, len(lines))
	for i := range lines {
		if s.gap[i] == 0 {
			s.order = append(s.order, i)
		}
	}
	last := len(lines) - 1
	sort.SliceStable(s.order, func(a, b int) bool {
		i, j := s.order[a], s.order[b]
		if s.kind[i] != s.kind[j] {
			return s.kind[i] < s.kind[j]
		}
		if s.kind[i] == kindOther {
			return min(i, last-i) < min(j, last-j) || min(i, last-i) == min(j, last-j) && i < j
		}
		return i < j
	})
	return s
}

// render writes the text keeping the first k entries of the keeping order.
func (s *selection) render(k int) string {
	keep := make([]bool, len(s.lines))
	for _, i := range s.order[:k] {
		keep[i] = true
	}
	var b strings.Builder
	keptChars, places := 0, 0
	var kept [kinds]int
	for i := 0; i < len(s.lines); {
		if keep[i] {
			b.WriteString(s.lines[i])
			b.WriteByte('\n')
			keptChars += utf8.RuneCountInString(s.lines[i]) + 1
			kept[s.kind[i]]++
			i++
			continue
		}
		j := i
		for j < len(s.lines) && !keep[j] {
			j++
		}
		b.WriteString(s.gapLine(i, j))
		b.WriteByte('\n')
		places++
		i = j
	}
	if keptChars > 0 {
		keptChars-- // the newline after the last kept line is the marker's
	}
	b.WriteString(s.marker(max(0, s.orig.chars-keptChars), places, kept))
	return b.String()
}

// gapLine stands for entries i..j-1: how many lines, and the shape most of them have.
func (s *selection) gapLine(i, j int) string {
	n := 0
	shapes := map[string]int{}
	example := map[string]string{}
	for m := i; m < j; m++ {
		if s.gap[m] > 0 {
			n += s.gap[m]
			continue
		}
		n++
		if j-i >= 3 {
			sh := shape(s.lines[m])
			shapes[sh]++
			if _, ok := example[sh]; !ok {
				example[sh] = s.lines[m]
			}
		}
	}
	line := "[ctx-budget: " + plural(n, "line") + " left out here"
	// The two commonest shapes, when they make up half of the gap.
	type common struct {
		shape string
		count int
	}
	var top []common
	for sh, c := range shapes {
		if c >= 3 {
			top = append(top, common{sh, c})
		}
	}
	sort.Slice(top, func(a, b int) bool {
		return top[a].count > top[b].count || top[a].count == top[b].count && top[a].shape < top[b].shape
	})
	top = top[:min(2, len(top))]
	covered := 0
	for _, c := range top {
		covered += c.count
	}
	if covered > 0 && 2*covered >= n {
		for i, c := range top {
			ex := example[c.shape]
			if utf8.RuneCountInString(ex) > 80 {
				ex = ex[:runeOffset(ex, 77)] + "..."
			}
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			line += fmt.Sprintf("%s%s like %q", sep, human.Thousands(c.count), ex)
		}
	}
	return line + "]"
}

// marker accounts for a cut by what lines say.
func (s *selection) marker(cut, places int, kept [kinds]int) string {
	var parts []string
	for k := kindError; k <= kindFrame; k++ {
		if kept[k] > 0 {
			parts = append(parts, plural(kept[k], kindNames[k]))
		}
	}
	what := "the first and last lines"
	if len(parts) > 0 {
		what = strings.Join(parts, ", ") + ", with the first and last lines"
	}
	call := "the tool call"
	if s.tool != "" {
		call = "the " + s.tool + " call"
	}
	return "[ctx-budget: cut " + human.Thousands(cut) + " of " + plural(s.orig.chars, "character") + " in " +
		plural(places, "place") + " (originally " + plural(s.orig.tokens, "token") + ", " + plural(s.orig.lines, "line") +
		"); kept " + what + "; to see the rest, re-run " + call + " narrowed to the part you need]"
}

// fit keeps the most entries, in the keeping order, whose text measures within limit;
// ok is false when not even the marker alone fits.
func (s *selection) fit(limit int, measure func(string) int) (string, bool) {
	lo, hi := 0, len(s.order) // render(lo) fits, if anything does; render(hi+1) does not exist
	first := s.render(0)
	if measure(first) > limit {
		return "", false
	}
	best := first
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if out := s.render(mid); measure(out) <= limit {
			lo, best = mid, out
		} else {
			hi = mid - 1
		}
	}
	return best, true
}

// shape is a line with its numbers, hexadecimal hashes and paths masked, so that lines
// that differ only in those group together.
var shapeSyntax = regexp.MustCompile(`(?:[\w.-]*/)+[\w.-]+|\b[0-9a-f]{7,}\b|\d+`)

func shape(line string) string {
	if len(line) > 200 {
		line = line[:200]
	}
	return shapeSyntax.ReplaceAllString(line, "#")
}

// hasSelection reports whether text is the output of a cut by what lines say.
func hasSelection(text string) bool {
	i := strings.LastIndexByte(text, '\n')
	return i >= 0 && selectionSyntax.MatchString(text[i+1:])
}
