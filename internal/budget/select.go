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

// testStarts are how the lines testSyntax matches start, white space trimmed.
var testStarts = []string{"--- FAIL", "FAIL", "ERROR", "✕", "×", "✗", "●", "not ok", "test ", "---- ", "failures:", "Tests run:", "___"}

var testFirst = func() (first [256]bool) {
	for _, p := range testStarts {
		first[p[0]] = true
	}
	return first
}()

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

// mayBeFrame: every frame syntax is "goroutine " or white space then `File "`, a path, "at "
// or a number.
func mayBeFrame(line string) bool {
	if strings.HasPrefix(line, "goroutine ") {
		return true
	}
	if line == "" || line[0] != ' ' && line[0] != '\t' {
		return false
	}
	t := strings.TrimLeft(line, " \t")
	return strings.HasPrefix(t, `File "`) || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "at ") || t != "" && t[0] >= '0' && t[0] <= '9'
}

// isDiagnostic reports whether a line starts (after white space, and an arrow "-->" or
// "at ") with file:line or file:line:col, as compilers, linters and test runners write
// them: a path of no spaces whose name has an extension, a colon, digits, maybe a colon
// and digits again, then ":", ")", white space or the end.
func isDiagnostic(line string) bool {
	t := strings.TrimLeft(line, " \t")
	switch {
	case strings.HasPrefix(t, "-->"):
		t = strings.TrimLeft(t[3:], " \t")
	case strings.HasPrefix(t, "at "):
		t = strings.TrimLeft(t[3:], " \t")
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
// lists them by first byte for the check.
type wordIndex struct {
	trigrams [1 << 16 / 64]uint64
	words    [256][]string
}

func trigram(a, b, c byte) uint32 {
	return (uint32(a)*31*31 + uint32(b)*31 + uint32(c)) & (1<<16 - 1)
}

func indexWords(words []string) *wordIndex {
	var ix wordIndex
	for _, w := range words {
		h := trigram(w[0], w[1], w[2])
		ix.trigrams[h/64] |= 1 << (h % 64)
		ix.words[w[0]] = append(ix.words[w[0]], w)
	}
	return &ix
}

var errorIndex, warningIndex = indexWords(errorWords), indexWords(warningWords)

// containsAny reports whether s holds any of the index's words: one pass over s, each
// byte that starts a word tried against those words.
func containsAny(s string, ix *wordIndex) bool {
	for i := 0; i+2 < len(s); i++ {
		if h := trigram(s[i], s[i+1], s[i+2]); ix.trigrams[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, w := range ix.words[s[i]] {
			if strings.HasPrefix(s[i:], w) {
				return true
			}
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
		// Each regular expression runs only on lines a cheap test lets through: most lines
		// of a long output are none of these.
		switch {
		case len(line) > longLine:
		case mayBeTest(line) && testSyntax.MatchString(line):
			k = kindTest
		case containsAny(line, errorIndex):
			k = kindError
		case isDiagnostic(line):
			k = kindDiagnostic
		case mayBeFrame(line) && frameSyntax.MatchString(line):
			k = kindFrame
		case containsAny(line, warningIndex):
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
	lines []string
	kind  []uint8
	gap   []int // lines an earlier cut's gap line stands for; 0 for a line of the text (nil: none is a gap)
	order []int // entries in the order they are kept
	// The commonest shapes of the text's lines, worked out when a gap first needs them,
	// with how many lines before each index have each (so a gap counts them in O(1)), and
	// an example of each.
	common     []uint64
	shapeCount [][]int32
	keep       []bool            // walk's scratch
	gapLines   map[[2]int]string // gapLine's, by where the gap starts and ends
	runes      []int             // each line's length in characters
	orig       original
	tool       string
	signal     bool
}

var (
	gapSyntax       = regexp.MustCompile(`^\[ctx-budget: ([0-9,]+) lines? left out here`)
	selectionSyntax = regexp.MustCompile(`^\[ctx-budget: cut ([0-9,]+) of ([0-9,]+) characters? in ([0-9,]+) places? \(originally ([0-9,]+) tokens?, ([0-9,]+) lines?\); [^\n]*\]$`)
)

// newSelection reads text for a cut by what its lines say: a text this tool cut so before
// keeps the original's figures, its gaps standing for what they left out. It returns nil
// for a text whose lines say nothing in particular, which is cut at head and tail.
func newSelection(text string, n int, count func(string) int, tool string) *selection {
	lines := strings.Split(text, "\n")
	s := &selection{tool: tool}
	again := len(lines) > 1 && selectionSyntax.MatchString(lines[len(lines)-1])
	if again {
		lines = lines[:len(lines)-1]
	}
	s.kind, s.signal = classify(lines)
	if !s.signal && !again {
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
	var at [kinds]int
	for k := 1; k < kinds; k++ {
		at[k] = at[k-1] + perKind[k-1]
	}
	s.order = make([]int, at[kinds-1]+perKind[kinds-1])
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

// gapOf is the number of lines entry i stands for as an earlier cut's gap, or 0.
func (s *selection) gapOf(i int) int {
	if s.gap == nil {
		return 0
	}
	return s.gap[i]
}

// render writes the text keeping the first k entries of the keeping order.
func (s *selection) render(k int) string {
	var b strings.Builder
	s.walk(k, &b)
	return b.String()
}

// walk writes the text keeping the first k entries of the keeping order to b, or with b
// nil only measures it, and returns its length in characters.
func (s *selection) walk(k int, b *strings.Builder) int {
	if s.keep == nil {
		s.keep = make([]bool, len(s.lines))
		s.runes = make([]int, len(s.lines))
		for i, line := range s.lines {
			s.runes[i] = utf8.RuneCountInString(line)
		}
	}
	keep := s.keep
	clear(keep)
	for _, i := range s.order[:k] {
		keep[i] = true
	}
	write := func(text string) {
		if b != nil {
			b.WriteString(text)
		}
	}
	size, keptChars, places := 0, 0, 0
	var kept [kinds]int
	for i := 0; i < len(s.lines); {
		if keep[i] {
			write(s.lines[i])
			write("\n")
			keptChars += s.runes[i] + 1
			kept[s.kind[i]]++
			i++
			continue
		}
		j := i
		for j < len(s.lines) && !keep[j] {
			j++
		}
		gap := s.gapLine(i, j)
		write(gap)
		write("\n")
		size += utf8.RuneCountInString(gap) + 1
		places++
		i = j
	}
	size += keptChars
	if keptChars > 0 {
		keptChars-- // the newline after the last kept line is the marker's
	}
	m := s.marker(max(0, s.orig.chars-keptChars), places, kept)
	write(m)
	return size + utf8.RuneCountInString(m)
}

// gapLine stands for entries i..j-1: how many lines, and the one or two shapes most of
// them have, with an example of each.
func (s *selection) gapLine(i, j int) string {
	if line, ok := s.gapLines[[2]int{i, j}]; ok {
		return line
	}
	line := s.describeGap(i, j)
	if s.gapLines == nil {
		s.gapLines = map[[2]int]string{}
	}
	s.gapLines[[2]int{i, j}] = line
	return line
}

func (s *selection) describeGap(i, j int) string {
	n := 0
	for m := i; m < j; m++ {
		n += max(1, s.gapOf(m))
	}
	line := "[ctx-budget: " + plural(n, "line") + " left out here"
	if j-i >= 3 {
		s.countShapes()
		type common struct{ shape, count int }
		var top []common
		for k := range s.common {
			if c := int(s.shapeCount[k][j] - s.shapeCount[k][i]); c >= 3 {
				top = append(top, common{k, c})
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
			for k, c := range top {
				// the first line of the shape in the gap
				ex := ""
				for m := i; m < j; m++ {
					if s.gapOf(m) == 0 && s.shapeCount[c.shape][m+1] > s.shapeCount[c.shape][m] {
						ex = s.lines[m]
						break
					}
				}
				if utf8.RuneCountInString(ex) > 80 {
					ex = ex[:runeOffset(ex, 77)] + "..."
				}
				sep := ", "
				if k == 0 {
					sep = ": "
				}
				line += fmt.Sprintf("%s%s like %q", sep, human.Thousands(c.count), ex)
			}
		}
	}
	return line + "]"
}

// commonShapes is how many of the text's commonest shapes gaps are described by.
const commonShapes = 6

// countShapes works out the commonest shapes and their running counts, once. The
// candidates come from at most shapeSample lines spread over the text (a long output's
// common shapes are common in any sample of it); then one pass counts them everywhere.
func (s *selection) countShapes() {
	if s.shapeCount != nil {
		return
	}
	const shapeSample = 1024
	step := max(1, len(s.lines)/shapeSample)
	freq := map[uint64]int{}
	for m := 0; m < len(s.lines); m += step {
		if s.gapOf(m) == 0 {
			freq[shapeHash(s.lines[m])]++
		}
	}
	for sh, c := range freq {
		if c >= 2 || step == 1 && c >= 3 {
			s.common = append(s.common, sh)
		}
	}
	sort.Slice(s.common, func(a, b int) bool {
		return freq[s.common[a]] > freq[s.common[b]] || freq[s.common[a]] == freq[s.common[b]] && s.common[a] < s.common[b]
	})
	s.common = s.common[:min(commonShapes, len(s.common))]
	s.shapeCount = make([][]int32, len(s.common))
	for k := range s.common {
		s.shapeCount[k] = make([]int32, len(s.lines)+1)
	}
	for m, line := range s.lines {
		for k := range s.common {
			s.shapeCount[k][m+1] = s.shapeCount[k][m]
		}
		if s.gapOf(m) != 0 || len(s.common) == 0 {
			continue
		}
		h := shapeHash(line)
		for k, sh := range s.common {
			if h == sh {
				s.shapeCount[k][m+1]++
				break
			}
		}
	}
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
// A limit in characters is met by measuring without writing: fits of the text are
// found with walk alone, and the text written once.
func (s *selection) fit(limit int, measure func(string) int, inTokens bool) (string, bool) {
	fits := func(k int) bool {
		if !inTokens {
			return s.walk(k, nil) <= limit
		}
		return measure(s.render(k)) <= limit
	}
	if !fits(0) {
		return "", false
	}
	lo, hi := 0, len(s.order) // lo fits; nothing above hi exists
	for lo < hi {
		if mid := (lo + hi + 1) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
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
	add := func(c byte) { h = (h ^ uint64(c)) * prime }
	if len(line) > 200 {
		line = line[:200]
	}
	for i := 0; i < len(line); {
		if !isWordByte(line[i]) {
			add(line[i])
			i++
			continue
		}
		j := i
		path, hex := false, true
		for j < len(line) && isWordByte(line[j]) {
			c := line[j]
			path = path || c == '/'
			hex = hex && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f')
			j++
		}
		if path || hex && j-i >= 7 {
			add('#')
		} else {
			for k := i; k < j; {
				if line[k] >= '0' && line[k] <= '9' {
					for k < j && line[k] >= '0' && line[k] <= '9' {
						k++
					}
					add('#')
					continue
				}
				add(line[k])
				k++
			}
		}
		i = j
	}
	return h
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '/'
}

// hasSelection reports whether text is the output of a cut by what lines say.
func hasSelection(text string) bool {
	i := strings.LastIndexByte(text, '\n')
	return i >= 0 && selectionSyntax.MatchString(text[i+1:])
}
