package transcript

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/jsonlit"
)

// Edit replaces the bytes of one span of the document.
type Edit struct {
	Span Span
	// With is the new text, already in the document's syntax (a JSON string literal
	// made by Quote, a whole JSON value, or nothing to delete).
	With string
}

// Apply splices edits into the document: the output is the input with only the edited
// spans replaced, so unknown fields survive and everything outside the edits is
// byte-identical. Edits may come in any order but must not overlap.
func (t *Transcript) Apply(edits []Edit) ([]byte, error) {
	if len(edits) == 0 {
		return []byte(t.Doc), nil
	}
	sorted, size, err := t.sortEdits(edits)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	at := 0
	for _, e := range sorted {
		out = append(out, t.Doc[at:e.Span.Start-t.Base]...)
		out = append(out, e.With...)
		at = e.Span.End - t.Base
	}
	return append(out, t.Doc[at:]...), nil
}

// WriteApplied writes to w what Apply returns, a piece at a time, so that the edited
// document is never held in memory beside the input (w may be a file or a spool).
func (t *Transcript) WriteApplied(w io.Writer, edits []Edit) error {
	sorted, _, err := t.sortEdits(edits)
	if err != nil {
		return err
	}
	at := 0
	for _, e := range sorted {
		if _, err := io.WriteString(w, t.Doc[at:e.Span.Start-t.Base]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, e.With); err != nil {
			return err
		}
		at = e.Span.End - t.Base
	}
	_, err = io.WriteString(w, t.Doc[at:])
	return err
}

// sortEdits checks edits against the document and returns them in document order, with
// the size of the edited document.
func (t *Transcript) sortEdits(edits []Edit) ([]Edit, int, error) {
	sorted := append([]Edit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Span.Start < sorted[j].Span.Start })
	size := len(t.Doc)
	for i, e := range sorted {
		if e.Span.Start < t.Base || e.Span.End > t.Base+len(t.Doc) || e.Span.Start > e.Span.End {
			return nil, 0, fmt.Errorf("edit %d: span %d-%d outside the document (%d bytes)", i, e.Span.Start, e.Span.End, len(t.Doc))
		}
		if i > 0 && e.Span.Start < sorted[i-1].Span.End {
			return nil, 0, fmt.Errorf("edits overlap at byte %d", e.Span.Start)
		}
		size += len(e.With) - e.Span.Len()
	}
	return sorted, size, nil
}

// Quoted reports whether lit is Quote(s), without making Quote(s): the test of whether a
// document spells a text the one way (ctx-persist, ctx-snip), made for every tool result,
// costs no copy of the result.
func Quoted(s, lit string) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	lit = lit[1 : len(lit)-1]
	eat := func(p string) bool {
		if len(lit) < len(p) || lit[:len(p)] != p {
			return false
		}
		lit = lit[len(p):]
		return true
	}
	start := 0
	for i := 0; i < len(s); {
		i = plainRun(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if !eat(s[start:i]) || !eat(quoteEscape(c)) {
				return false
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if !eat(s[start:i]) || !eat(`\ufffd`) {
				return false
			}
			start = i + size
		case r == '\u2028' || r == '\u2029':
			if !eat(s[start:i]) || !eat(`\u202`+string(quoteHex[r&0xf])) {
				return false
			}
			start = i + size
		}
		i += size
	}
	return eat(s[start:]) && lit == ""
}

// quoteSpelled is how much of s, a literal's contents, is spelled as Quote spells its
// text: len(s) when all of it is, else where it stops being (a character Quote escapes
// written as itself, an escape Quote does not write, invalid UTF-8, an escape that is
// none). escaped is given each escape on the way: at s[i:i+n], standing for r. Each
// eight-byte word without an escape or a byte above ASCII is crossed at once.
func quoteSpelled(s string, escaped func(i, n int, r rune)) int {
	for i := 0; i < len(s); {
		i = plainRun(s, i) // what Quote writes as itself, crossed a word at a time
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf:
			i++
		case c == '\\':
			// An escape is Quote's when it is how Quote writes the character it stands for:
			// the two-byte ones but \/ are.
			r, n := unescapeAt(s[i:])
			switch {
			case n == 2 && shortEscape[s[i+1]]:
			case n == 0:
				return i
			case r < 0x20 || r == '"' || r == '\\':
				if s[i:i+n] != quoteEscape(byte(r)) {
					return i
				}
			case r == '\u2028' || r == '\u2029':
				if s[i:i+n] != `\u202`+string(quoteHex[r&0xf]) {
					return i
				}
			default:
				return i // Quote writes it as itself
			}
			escaped(i, n, r)
			i += n
		case c < utf8.RuneSelf:
			return i // a control character or a quote as itself
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return i
			}
			i += size
		}
	}
	return len(s)
}

// DecodeQuotedInto is the text lit, a JSON string literal, stands for, and whether lit is
// Quote of that text (Quoted), found in one pass: for a caller that needs both of a
// result it keeps (ctx-snip), which decoding it and then reading it again did in two. The text is decoded as BodyTextInto decodes a body: a slice of lit when lit
// holds no escape, else decoded into scratch (grown, to be reused), valid until scratch
// is used again.
func DecodeQuotedInto(scratch []byte, lit string) (text string, grown []byte, quoted bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return "", scratch, false
	}
	s := lit[1 : len(lit)-1]
	out, start := scratch[:0], 0 // out holds s[:start] decoded
	end := len(s) + 1            // (a literal not closed by a quote is not Quote's)
	if lit[len(lit)-1] == '"' {
		end = quoteSpelled(s, func(i, n int, r rune) {
			out = append(out, s[start:i]...)
			if r < utf8.RuneSelf {
				out = append(out, byte(r))
			} else {
				out = utf8.AppendRune(out, r)
			}
			start = i + n
		})
	}
	switch {
	case end == len(s) && start == 0:
		return s, scratch, true // no escape
	case end == len(s):
		out = append(out, s[start:]...)
	case start == 0 && strings.IndexByte(s, '\\') < 0:
		return s, scratch, false
	default:
		// Not Quote's from end on: the rest decoded as any literal is.
		out = jsonlit.AppendDecoded(out, s[start:])
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), out, end == len(s)
}

// shortEscape marks the letters of the two-byte escapes Quote writes.
var shortEscape = [256]bool{'"': true, '\\': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// plainRun is where, from s[i], the first eight-byte word of s starts that may hold a byte
// Quote writes otherwise than as itself (a quote, a backslash, a control character, or
// one that is not ASCII), or the last bytes of s that do not make a word: the bytes before
// it are crossed a word at a time (validString's test, with the high bits of the word
// itself), not a byte at a time. A result is mostly such bytes, and ctx-persist asks
// Quoted of every result it stores, twice of a Codex one.
func plainRun(s string, i int) int {
	for i+8 <= len(s) {
		x := load64(s, i)
		q, b := x^quotes, x^slashs
		if ((q-ones)&^q|(b-ones)&^b|(x-spaces)&^x|x)&highs != 0 {
			return i
		}
		i += 8
	}
	return i
}

// quoteHex is the digits of Quote's \u escapes.
const quoteHex = "0123456789abcdef"

// quoteEscape is Quote's escape of an ASCII byte it does not write as itself.
func quoteEscape(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	}
	return controlEscapes[c]
}

// controlEscapes are Quote's escapes of the control characters, made once: a terminal's
// output holds an escape character in every colour change.
var controlEscapes = func() (e [0x20]string) {
	for c := range e {
		e[c] = `\u00` + string(quoteHex[c>>4]) + string(quoteHex[c&0xf])
	}
	e['\b'], e['\f'], e['\n'], e['\r'], e['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	return e
}()

// Quote makes a JSON string literal of s in ctxkit's one spelling, fixed here rather than
// left to a library version because ctx-persist relies on re-encoding a stored text to the
// same bytes: `"` and `\` escaped, \b \f \n \r \t by their short escapes, other control
// characters and U+2028, U+2029 as \u00xx / \u2028 / \u2029 (lowercase hex), invalid UTF-8
// as \ufffd, everything else as itself (no HTML escaping, so code stays readable).
func Quote(s string) string {
	b := make([]byte, 0, len(s)+len(s)/16+2)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i = plainRun(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			b = append(b, quoteEscape(c)...)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', quoteHex[r&0xf])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return string(append(b, '"'))
}
