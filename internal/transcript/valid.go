package transcript

import "math/bits"

// Valid reports whether s is one JSON value, with white space around it allowed, by the
// rules gjson.Valid applies (RFC 8259's grammar; string bytes are not checked as UTF-8),
// which it stands in for: every record line and every JSON document is checked before it
// is read, and gjson walks a string a byte at a time, where most of a transcript's bytes
// are in long strings (tool results). Here the run of plain bytes in a string is skipped
// eight at a time. FuzzValidMatchesGjson holds the two to the same answer.
func Valid(s string) bool {
	i := skipSpace(s, 0)
	i, ok := validValue(s, i)
	if !ok {
		return false
	}
	return skipSpace(s, i) == len(s)
}

// ValidValue checks the JSON value s begins with (no space before it) by Valid's rules and
// returns the offset past it: one pass, where finding a value's end by its brackets and
// quotes and then checking it (Valid) takes two.
func ValidValue(s string) (int, bool) { return validValue(s, 0) }

// validValue checks the value at s[i] (no space before it) and returns where it ends.
func validValue(s string, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '{':
		return validObject(s, i+1)
	case c == '[':
		return validArray(s, i+1)
	case c == '"':
		return validString(s, i+1)
	case c == '-' || '0' <= c && c <= '9':
		return validNumber(s, i)
	case c == 't':
		return validWord(s, i, "true")
	case c == 'f':
		return validWord(s, i, "false")
	case c == 'n':
		return validWord(s, i, "null")
	}
	return i, false
}

func validWord(s string, i int, w string) (int, bool) {
	if len(s)-i >= len(w) && s[i:i+len(w)] == w {
		return i + len(w), true
	}
	return i, false
}

// validObject checks an object whose '{' is before s[i].
func validObject(s string, i int) (int, bool) {
	i = skipSpace(s, i)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = validString(s, i+1); !ok {
			return i, false
		}
		i = skipSpace(s, i)
		if i >= len(s) || s[i] != ':' {
			return i, false
		}
		if i, ok = validValue(s, skipSpace(s, i+1)); !ok {
			return i, false
		}
		i = skipSpace(s, i)
		switch {
		case i >= len(s):
			return i, false
		case s[i] == '}':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

// validArray checks an array whose '[' is before s[i].
func validArray(s string, i int) (int, bool) {
	i = skipSpace(s, i)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validValue(s, i); !ok {
			return i, false
		}
		i = skipSpace(s, i)
		switch {
		case i >= len(s):
			return i, false
		case s[i] == ']':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

// validNumber checks the number at s[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return i, false
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = '"' * ones
	slashs = '\\' * ones
	spaces = ' ' * ones // bytes below it are control characters
)

// validString checks the rest of a string whose opening quote is before s[i] and returns
// the offset after its closing quote.
func validString(s string, i int) (int, bool) {
	for {
		// Eight bytes at a time while none is a quote, a backslash or a control
		// character: x-ones&^x has the high bit of each zero byte of x set (and maybe of
		// bytes after one, which the byte loop then looks at anyway).
		for i+8 <= len(s) {
			x := load64(s, i)
			q, b := x^quotes, x^slashs
			stop := (q-ones)&^q | (b-ones)&^b | (x-spaces)&^x
			if stop&highs == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(stop&highs) / 8
			break
		}
		if i >= len(s) {
			return i, false
		}
		switch c := s[i]; {
		case c == '"':
			return i + 1, true
		case c < ' ':
			return i, false
		case c == '\\':
			i++
			if i >= len(s) {
				return i, false
			}
			switch s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for range 4 {
					i++
					if i >= len(s) || !isHex(s[i]) {
						return i, false
					}
				}
				i++
			default:
				return i, false
			}
		default:
			i++
		}
	}
}

// load64 reads s[i:i+8] as a little-endian word (the compiler makes it one load).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
