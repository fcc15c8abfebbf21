package budget

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
)

// A cut result reads
//
//	<head>\n[ctx-budget: cut 52,340 of 80,000 characters here (originally 20,011 tokens, 1,502 lines); ...]\n<tail>
//
// The marker says what was removed and how to get it back (DESIGN §4.9), and it is read
// back: a result cut before is recognised by a marker whose numbers agree with the text
// around it, so a later, tighter cut removes more of the same original and writes one
// marker that accounts for everything removed, never a marker inside a marker.
const markerStart = "[ctx-budget: cut "

var markerSyntax = regexp.MustCompile(`^\[ctx-budget: cut ([0-9,]+) of ([0-9,]+) characters? here \(originally ([0-9,]+) tokens?, ([0-9,]+) lines?\); [^\n]*\]`)

// original describes the text before any cut.
type original struct {
	chars, tokens, lines int
}

// marker writes the marker for a text of which cut characters were removed.
func marker(o original, cut int, tool string) string {
	call := "the tool call"
	if tool != "" {
		call = "the " + tool + " call"
	}
	return markerStart + human.Thousands(cut) + " of " + plural(o.chars, "character") + " here (originally " +
		plural(o.tokens, "token") + ", " + plural(o.lines, "line") + "); to see them, re-run " + call +
		" narrowed to the part you need]"
}

// piece is a text split around the place a cut goes: everything of it that is kept lies
// at the start of head or the end of tail. For a text never cut before, head and tail
// are its two halves; for one cut before, they are what the earlier cut kept on either
// side of its marker.
type piece struct {
	head, tail           string
	headRunes, tailRunes int
	orig                 original
	cutBefore            bool
}

// countLines counts the lines of s: newlines, plus one for a last line without one.
func countLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}

// split reads a text of n characters as a piece: a recognised marker keeps the original's
// size, otherwise the text is measured (tokens by count, called only then).
func split(text string, n int, count func(string) int) piece {
	if p, ok := parseCut(text); ok {
		return p
	}
	at := runeOffset(text, n/2)
	return piece{
		head: text[:at], tail: text[at:],
		headRunes: n / 2, tailRunes: n - n/2,
		orig: original{chars: n, tokens: count(text), lines: countLines(text)},
	}
}

// parseCut recognises a text this tool cut before.
func parseCut(text string) (piece, bool) {
	from := 0
	for {
		i := strings.Index(text[from:], markerStart)
		if i < 0 {
			return piece{}, false
		}
		i += from
		from = i + len(markerStart)
		if i == 0 || text[i-1] != '\n' {
			continue
		}
		m := markerSyntax.FindStringSubmatch(text[i:])
		if m == nil {
			continue
		}
		end := i + len(m[0])
		if end >= len(text) || text[end] != '\n' {
			continue
		}
		cut, of, toks, ls := number(m[1]), number(m[2]), number(m[3]), number(m[4])
		p := piece{head: text[:i-1], tail: text[end+1:], cutBefore: true,
			orig: original{chars: of, tokens: toks, lines: ls}}
		p.headRunes, p.tailRunes = charCount(p.head), charCount(p.tail)
		if cut < 0 || of < 0 || toks < 0 || ls < 0 || p.headRunes+p.tailRunes+cut != of {
			continue
		}
		return p, true
	}
}

func number(s string) int {
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		return -1
	}
	return n
}

// kept is how many characters the piece holds outside any marker.
func (p piece) kept() int { return p.headRunes + p.tailRunes }

// build keeps at most k characters of the piece, about half from the head and half from
// the tail, moving each cut to a line break when one lies within a tenth of the kept size,
// and joins the two with the marker. It never splits a UTF-8 sequence.
func (p piece) build(k int, tool string) string {
	head, m, tail, _ := p.cutAt(k, tool)
	var b strings.Builder
	b.Grow(len(head) + len(m) + len(tail) + 2)
	b.WriteString(head)
	b.WriteByte('\n')
	b.WriteString(m)
	b.WriteByte('\n')
	b.WriteString(tail)
	return b.String()
}

// cutAt is what build(k) joins, and the characters of the result: those kept, the
// marker's and two newlines (a newline never ends or starts a UTF-8 sequence, so the
// characters of a text joined by newlines are the sum of its parts').
func (p piece) cutAt(k int, tool string) (head, m, tail string, chars int) {
	k = max(0, min(k, p.kept()))
	h := min(p.headRunes, (k+1)/2)
	t := min(p.tailRunes, k-h)
	h = min(p.headRunes, k-t)

	head = p.head[:runeOffset(p.head, h)]
	tail = p.tail[len(p.tail)-runeOffsetFromEnd(p.tail, t):]
	// A cut may move back to a line break up to a tenth of the kept size away.
	w := (len(head) + len(tail)) / 10
	if hb := len(head); hb < len(p.head) && p.head[hb] != '\n' {
		if w := min(w, hb); w > 0 {
			if j := strings.LastIndexByte(head[hb-w:], '\n'); j >= 0 {
				head = head[:hb-w+j] // the separator before the marker ends the line
			}
		}
	}
	if start := len(p.tail) - len(tail); start > 0 && p.tail[start-1] != '\n' {
		if w := min(w, len(tail)); w > 0 {
			if j := strings.IndexByte(tail[:w], '\n'); j >= 0 {
				tail = tail[j+1:]
			}
		}
	}
	// No white space before the marker: normalizing would take it off on the next run.
	head = strings.TrimRight(head, " \t")
	kept := charCount(head) + charCount(tail)
	m = marker(p.orig, p.orig.chars-kept, tool)
	return head, m, tail, kept + charCount(m) + 2
}

// asciiMask has the high bit of each of eight bytes: a word of ASCII has none of them.
const asciiMask = 0x8080808080808080

// runeOffset is the byte offset of the n-th rune of s (len(s) when s is shorter).
func runeOffset(s string, n int) int {
	if n <= 0 {
		return 0
	}
	i := 0
	for n > 0 && i < len(s) {
		// Eight bytes of ASCII at a time: the text before a cut is most often long and
		// all ASCII, and this walk over half of it was a tenth of a cut.
		for n >= 8 && i+8 <= len(s) && binary.LittleEndian.Uint64([]byte(s[i:i+8]))&asciiMask == 0 {
			i, n = i+8, n-8
		}
		if n == 0 || i >= len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		n--
	}
	return i
}

// runeOffsetFromEnd is the byte length of the last n runes of s.
func runeOffsetFromEnd(s string, n int) int {
	i := len(s)
	for n > 0 && i > 0 {
		for n >= 8 && i >= 8 && binary.LittleEndian.Uint64([]byte(s[i-8:i]))&asciiMask == 0 {
			i, n = i-8, n-8
		}
		if n == 0 || i == 0 {
			break
		}
		if s[i-1] < utf8.RuneSelf {
			i--
		} else {
			_, size := utf8.DecodeLastRuneInString(s[:i])
			i -= size
		}
		n--
	}
	return len(s) - i
}

// fit cuts the piece so that measure(result) <= limit, keeping as much as it can: the
// most characters whose result fits, found in a few measured steps (for tokens, each step
// counts the candidate with the real counter rather than trusting a fixed ratio). When
// not even the marker alone fits, the result is the marker alone. A limit in characters
// (tokens false) is measured in characters, as measure would: each step by cutAt, without
// joining its text, which is joined once.
func (p piece) fit(limit int, measure func(string) int, tokens bool, tool string) string {
	total := p.kept()
	// Characters per unit of the limit, from the kept text itself.
	ratio := 1.0
	switch {
	case !tokens:
	case !p.cutBefore && p.orig.tokens > 0:
		ratio = float64(p.orig.chars) / float64(p.orig.tokens)
	default:
		if mk := measure(p.head) + measure(p.tail); mk > 0 {
			ratio = float64(total) / float64(mk)
		}
	}
	overhead := measure("\n" + marker(p.orig, p.orig.chars, tool) + "\n")
	lo, hi := -1, total+1 // lo: the largest k known to fit; hi: the smallest known not to
	best := ""
	k := int(float64(limit-overhead) * ratio)
	for range 24 {
		if k <= lo || k >= hi {
			k = lo + (hi-lo)/2
		}
		if k <= lo || k >= hi {
			break
		}
		var out string
		var m int
		if tokens {
			out = p.build(k, tool)
			m = measure(out)
		} else {
			_, _, _, m = p.cutAt(k, tool)
		}
		if m <= limit {
			lo, best = k, out
			// Close enough: within 1% of the limit (the line-break rule moves cuts by
			// more than that anyway).
			if limit-m <= limit/100 {
				break
			}
			k += max(1, int(float64(limit-m)*ratio))
		} else {
			hi = k
			k -= max(1, int(float64(m-limit)*ratio))
		}
	}
	if lo < 0 {
		return p.build(0, tool)
	}
	if !tokens {
		return p.build(lo, tool)
	}
	return best
}

// charCount is the characters of s (utf8.RuneCountInString), eight bytes at a time where
// they are ASCII: the characters of every result cut and of every cut tried are counted.
func charCount(s string) int { return measure.RuneCount(s) }
