package transcript

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON string literals of a validated document, decoded the way gjson decodes them (which
// is what the readers did before they had their own scanner, and what every stored text and
// count so far was made from): escapes are replaced, a UTF-16 surrogate pair becomes its
// rune, a lone surrogate becomes U+FFFD, and bytes that are not UTF-8 stay as they are.
// The decoder copies runs between backslashes whole instead of byte by byte.

// decodeString decodes a JSON string literal (quotes included); it avoids allocating when
// the literal has no escapes.
func decodeString(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	s := raw[1 : len(raw)-1]
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for {
		b = append(b, s[:i]...)
		s = s[i:]
		var r rune
		var n int
		if r, n = unescapeAt(s); n == 0 {
			break // a broken escape: what came before it (never in a valid document)
		}
		s = s[n:]
		if r < utf8.RuneSelf {
			b = append(b, byte(r))
		} else {
			b = utf8.AppendRune(b, r)
		}
		if i = strings.IndexByte(s, '\\'); i < 0 {
			b = append(b, s...)
			break
		}
	}
	return string(b)
}

// unescapeAt reads the escape that s starts with (s[0] is a backslash): the rune it stands
// for and its length in s, or n == 0 when it is not an escape. A \u escape of a high
// surrogate followed by one of a low surrogate is one rune; a lone surrogate is returned as
// itself, which utf8 encodes as U+FFFD.
func unescapeAt(s string) (r rune, n int) {
	if len(s) < 2 {
		return 0, 0
	}
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		if len(s) < 6 {
			return 0, 0
		}
		r = hex4(s[2:6])
		if r >= 0xD800 && r < 0xDC00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if r2 := hex4(s[8:12]); r2 >= 0xDC00 && r2 < 0xE000 {
				return utf16.DecodeRune(r, r2), 12
			}
		}
		return r, 6
	}
	return 0, 0
}

// hex4 reads four hex digits (0 when they are not all hex, as gjson reads them).
func hex4(s string) rune {
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0
		}
		r = r<<4 | rune(c)
	}
	return r
}

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
