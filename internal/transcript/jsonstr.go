package transcript

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/jsonlit"
)

// JSON string literals of a validated document, decoded the way gjson decodes them (which
// is what the readers did before they had their own scanner, and what every stored text and
// count so far was made from): escapes are replaced, a UTF-16 surrogate pair becomes its
// rune, a lone surrogate becomes U+FFFD, and bytes that are not UTF-8 stay as they are.
// The decoder is jsonlit.AppendDecoded.

// decodeString decodes a JSON string literal (quotes included); it avoids allocating when
// the literal has no escapes, and allocates once when it has.
func decodeString(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := jsonlit.AppendDecoded(make([]byte, 0, len(s)), s)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is the string's alone
}

// BodyTextPrefix is the start of BodyText(b), decoded alone: all of it, or at least its
// first n+1 bytes, enough for human.Clip to n bytes to clip it as it would the whole text.
// A preview of the first words of a long text need not decode the rest.
func (t *Transcript) BodyTextPrefix(b *Block, n int) string {
	if b.Body.IsZero() {
		return ""
	}
	raw := t.Slice(b.Body)
	// An escape takes at most 6 bytes of the literal for each byte it stands for (\u0001),
	// so this much of the literal decodes to n+1 bytes or more, when the text has them.
	if enough := 6*(n+1) + 2; len(raw) > enough && !b.BodyJSON && raw[0] == '"' {
		s := raw[1:enough]
		if strings.IndexByte(s, '\\') < 0 {
			return s
		}
		return string(jsonlit.AppendDecoded(make([]byte, 0, len(s)), s))
	}
	return t.BodyText(b)
}

// BodyTextInto is BodyText(b) decoded into scratch when it must be decoded, for a caller
// that needs the text only for a moment (to count it) and reuses scratch for the next:
// text is in scratch (as grown, to be reused) or a slice of the document.
func (t *Transcript) BodyTextInto(scratch []byte, b *Block) (text string, grown []byte) {
	dst := scratch
	if b.Body.IsZero() {
		return "", dst
	}
	raw := t.Slice(b.Body)
	if b.BodyJSON {
		return raw, dst
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", dst
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s, dst
	}
	grown = jsonlit.AppendDecoded(dst[:0], s)
	return unsafe.String(unsafe.SliceData(grown), len(grown)), grown
}

// unescapeAt reads the escape that s starts with (see jsonlit.Unescape).
func unescapeAt(s string) (r rune, n int) { return jsonlit.Unescape(s) }

// stringSize is the length in bytes, and in runes as utf8.RuneCountInString counts them, of
// what decodeString(raw) returns, worked out without building it.
func stringSize(raw string) (size, runes int) {
	if len(raw) < 2 || raw[0] != '"' {
		return 0, 0
	}
	s := raw[1 : len(raw)-1]
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return size + len(s), runes + utf8.RuneCountInString(s)
		}
		// An escape decodes to ASCII or to a whole UTF-8 sequence, so it never joins the
		// bytes around it into one rune: the counts of the pieces add up.
		size += i
		runes += utf8.RuneCountInString(s[:i])
		r, n := unescapeAt(s[i:])
		if n == 0 {
			return size, runes
		}
		if l := utf8.RuneLen(r); l > 0 {
			size += l
		} else {
			size += utf8.RuneLen(utf8.RuneError) // a lone surrogate
		}
		runes++
		s = s[i+n:]
	}
}

// stringLen is the length in bytes of what decodeString(raw) returns, without building it.
func stringLen(raw string) int {
	if len(raw) < 2 || raw[0] != '"' {
		return 0
	}
	s := raw[1 : len(raw)-1]
	size := 0
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return size + len(s)
		}
		size += i
		r, n := unescapeAt(s[i:])
		if n == 0 {
			return size
		}
		if l := utf8.RuneLen(r); l > 0 {
			size += l
		} else {
			size += utf8.RuneLen(utf8.RuneError)
		}
		s = s[i+n:]
	}
}

// Canonical reports whether the JSON string literal lit (quotes included) is spelled
// exactly as Quote spells what it decodes to, Quote(decodeString(lit)) == lit, so that a
// writer may copy it as it is instead of decoding and quoting it again. It reads lit once
// and allocates nothing. A literal with an escape Quote does not write (\/, \u00e9, a
// surrogate pair, \u000a for \n, uppercase hex) or a character Quote escapes (a control
// character, U+2028, U+2029, invalid UTF-8) is not canonical; nor is anything that is not
// one whole literal.
func Canonical(lit string) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return false // the closing quote is escaped: not one literal
			}
			switch s[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
				if i+6 > len(s) || !quotedAsU(s[i+2:i+6]) {
					return false
				}
				i += 6
				continue
			}
			return false
		case c < utf8.RuneSelf:
			return false // a raw control character or quote
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// quotedAsU reports whether Quote writes the character of the four hex digits h as \uh:
// a control character without a short escape (lowercase hex), U+2028 or U+2029.
func quotedAsU(h string) bool {
	if h == "2028" || h == "2029" {
		return true
	}
	if h[0] != '0' || h[1] != '0' || (h[2] != '0' && h[2] != '1') {
		return false
	}
	var lo byte
	switch c := h[3]; {
	case '0' <= c && c <= '9':
		lo = c - '0'
	case 'a' <= c && c <= 'f':
		lo = c - 'a' + 10
	default:
		return false
	}
	switch (h[2]-'0')<<4 | lo {
	case '\b', '\f', '\n', '\r', '\t':
		return false // Quote writes the short escape
	}
	return true
}
