// Package jsonlit owns how ctxkit reads the escapes of a JSON string literal: the one rule
// that the transcript readers (which decode literals) and the token counters (which count
// a literal without decoding it) must apply alike, so that a count made from the literal
// as written is the count of the text it stands for.
package jsonlit

import "unicode/utf16"

// Unescape reads the escape that s starts with (s[0] is a backslash): the rune it stands
// for and its length in s, or n == 0 when it is not an escape. It reads escapes the way
// gjson decodes them: a \u escape of a high surrogate followed by one of a low surrogate
// is one rune; a lone surrogate is returned as itself (which utf8 encodes as U+FFFD); four
// characters after \u that are not all hex digits stand for U+0000.
func Unescape(s string) (r rune, n int) {
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
