package budget

import (
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/toolvocab"
)

// Normalizing a tool result removes what a terminal would not have shown and what repeats
// without adding anything, before any limit is measured:
//
//   - ANSI escape sequences (colours, cursor moves, window titles);
//   - carriage-return redraws: of a line redrawn in place (progress bars, spinners), the
//     last state, as the terminal showed it;
//   - trailing white space on every line;
//   - more than two blank lines in a row, down to two;
//   - a run of identical lines, down to the line and a note of how many more there were,
//     where the note is shorter than what it replaces.
//
// Nothing else changes, so a model loses nothing it could use, and a normalized text
// normalizes to itself (the repeat note is a line of its own that nothing repeats).
// File reads are not normalized (normalizes): an agent edits a file by quoting it, white
// space and all.

// repeatNote is the line that stands for n more copies of the line above.
func repeatNote(n int) string {
	if n == 1 {
		return "[ctx-budget: the line above repeated 1 more time]"
	}
	return "[ctx-budget: the line above repeated " + strconv.Itoa(n) + " more times]"
}

// normalizes reports whether results of tool are normalized: not a file's contents (a
// read, an editor's view, or the snippet an edit shows of the file it changed), which an
// agent quotes back byte for byte when it edits.
func normalizes(tool string) bool { return !toolvocab.ShowsFile(tool) }

// mayNeedNormalizing is a cheap test on a result's JSON string literal: false means
// normalize would return the text unchanged. It reads the literal as written, split at
// its escaped newlines: a line is never shorter written than decoded, so where the
// written lines need no normalizing, neither do the decoded ones.
// It runs on every result of a document, so it is one pass from backslash to backslash
// (every escape it looks for starts with one) rather than a search per escape and per
// line: the cost of a result that needs nothing is a few byte scans.
func mayNeedNormalizing(raw string) bool {
	if len(raw) < 2 {
		return false
	}
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, 0x1b) >= 0 || strings.IndexByte(body, '\r') >= 0 {
		return true
	}
	var runs lineRuns
	start := 0
	// Escapes are matched where they are written, as a substring search would match them:
	// each backslash is read on its own, so the "\\r" of an escaped backslash and an "r"
	// counts as a "\r" (a false yes, which normalize settles).
	for i := 0; ; i++ {
		k := strings.IndexByte(body[i:], '\\')
		if k >= 0 {
			i += k
			if i+1 >= len(body) {
				k = -1 // a final backslash ends no escape: the last line holds it
			} else {
				switch body[i+1] {
				case 'r':
					return true
				case 'u':
					if e := body[i+2:]; len(e) >= 4 && e[:3] == "001" && (e[3] == 'b' || e[3] == 'B') {
						return true
					}
					continue
				case 'n':
				default:
					continue
				}
			}
		}
		// a line ends here: at an escaped newline, or at the end of the literal
		end := len(body)
		if k >= 0 {
			end = i
		}
		line := body[start:end]
		switch {
		case strings.HasSuffix(line, `\`) || endsInSpace(line):
			// (a backslash before "n" may be an escaped backslash: rare enough to leave
			// to normalize, which reads the text exactly)
			return true
		case line == "" && k < 0 && start > 0:
			// the empty string after a final newline: not a line
		case runs.add(line):
			return true
		}
		if k < 0 {
			return false
		}
		i++ // past the "n"
		start = i + 1
	}
}

// endsInSpace reports whether a line, as a JSON literal writes it, ends in white space.
func endsInSpace(line string) bool {
	if line == "" {
		return false
	}
	switch line[len(line)-1] {
	case ' ', '\t':
		return true
	case 't', 'f':
		return strings.HasSuffix(line, `\t`) || strings.HasSuffix(line, `\f`)
	case 'b', 'B', 'c', 'C':
		return strings.HasSuffix(line, `\u000b`) || strings.HasSuffix(line, `\u000B`) ||
			strings.HasSuffix(line, `\u000c`) || strings.HasSuffix(line, `\u000C`)
	case '9':
		return strings.HasSuffix(line, `\u0009`)
	}
	return false
}

// needsNormalizing is mayNeedNormalizing's test on a decoded text, exact: whether
// normalize would change it. It allocates nothing, so a text can be tested before it is
// split into lines (a Codex wrapper's output, read after decoding the wrapper).
func needsNormalizing(text string) bool {
	if strings.IndexByte(text, 0x1b) >= 0 || strings.IndexByte(text, '\r') >= 0 {
		return true
	}
	var runs lineRuns
	for first := true; ; first = false {
		i := strings.IndexByte(text, '\n')
		line := text
		if i >= 0 {
			line = text[:i]
		}
		switch {
		case line != "" && strings.ContainsRune(" \t\f\v", rune(line[len(line)-1])):
			return true
		case line == "" && i < 0 && !first:
			// the empty string after a final newline: not a line
		case runs.add(line):
			return true
		}
		if i < 0 {
			return false
		}
		text = text[i+1:]
	}
}

// lineRuns follows the lines of a text in order, for the two tests above: add reports
// whether normalize would act on the lines so far because of the new one, a third blank
// line in a row or a run of equal lines long enough that its note is shorter.
type lineRuns struct {
	prev        string
	run, blanks int
}

func (r *lineRuns) add(line string) bool {
	if line == "" {
		r.blanks++
		r.run = 0
		return r.blanks > 2
	}
	r.blanks = 0
	if r.run > 0 && line == r.prev {
		r.run++
		n := r.run - 1
		return len(repeatNote(n))+1 < n*(len(line)+1)
	}
	r.prev, r.run = line, 1
	return false
}

// normalize returns s normalized.
func normalize(s string) string {
	s = stripANSI(s)
	lines := strings.Split(s, "\n")
	// A final newline ends the last line; the empty string after it is not a line.
	terminated := len(lines) > 1 && lines[len(lines)-1] == ""
	if terminated {
		lines = lines[:len(lines)-1]
	}
	out := make([]string, 0, len(lines)+1)
	blanks := 0
	for i := 0; i < len(lines); i++ {
		line := lastRedraw(lines[i])
		line = strings.TrimRight(line, " \t\r\f\v")
		if line == "" {
			blanks++
			if blanks > 2 {
				continue
			}
			out = append(out, line)
			continue
		}
		blanks = 0
		// The copies of this line that follow it.
		n := 0
		for i+1+n < len(lines) && strings.TrimRight(lastRedraw(lines[i+1+n]), " \t\r\f\v") == line {
			n++
		}
		out = append(out, line)
		if n > 0 && len(repeatNote(n))+1 < n*(len(line)+1) {
			out = append(out, repeatNote(n))
		} else {
			// too short to be worth a note: the copies stay, read once (reading the run
			// again from each copy would take its length squared)
			for range n {
				out = append(out, line)
			}
		}
		i += n
	}
	if terminated {
		out = append(out, "")
	}
	return strings.Join(out, "\n")
}

// lastRedraw is what a terminal shows of a line that carriage returns redraw: the text
// after the last one that is followed by any (a line ending "\r" keeps what it showed).
func lastRedraw(line string) string {
	line = strings.TrimSuffix(line, "\r")
	for {
		i := strings.LastIndexByte(line, '\r')
		if i < 0 {
			return line
		}
		if rest := line[i+1:]; strings.TrimSpace(rest) != "" {
			return rest
		}
		line = line[:i]
	}
}

// stripANSI removes escape sequences: CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or
// ESC \), and the two- and three-byte ones (ESC ( B, ESC =, ESC 7...).
func stripANSI(s string) string {
	i := strings.IndexByte(s, 0x1b)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case s == "":
		case s[0] == '[':
			j := 1
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			// The cursor sent to column 1 (ESC [ G, ESC [ 1 G) redraws the line, as a
			// carriage return does: npm's spinner.
			if j < len(s) && s[j] == 'G' && (j == 1 || j == 2 && (s[1] == '0' || s[1] == '1')) {
				b.WriteByte('\r')
			}
			s = s[min(j+1, len(s)):]
		case s[0] == ']':
			j := 1
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			switch {
			case j >= len(s):
				s = ""
			case s[j] == 0x07:
				s = s[j+1:]
			default:
				s = s[j+2:]
			}
		case s[0] == '(' || s[0] == ')' || s[0] == '#' || s[0] == '%':
			s = s[min(2, len(s)):]
		default:
			s = s[1:]
		}
		i = strings.IndexByte(s, 0x1b)
	}
	b.WriteString(s)
	return b.String()
}
