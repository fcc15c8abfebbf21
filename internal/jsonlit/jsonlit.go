// Package jsonlit owns how ctxkit reads the escapes of a JSON string literal: the one rule
// that the transcript readers (which decode literals) and the token counters (which count
// a literal without decoding it) must apply alike, so that a count made from the literal
// as written is the count of the text it stands for. AppendDecoded, the decoder of a
// literal's contents that the transcript readers use, is here with it.
package jsonlit

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

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

// AppendDecoded appends the decoding of s, a JSON string literal's contents (no quotes),
// to dst, each escape read as Unescape reads it; at an escape that is none (never in a
// valid document) it stops, with what came before it.
//
// Text of messages has an escape every line or so (\n, \", \t), often two close
// together, and the plain loop (a strings.IndexByte, an append of the run and an append
// of the escape's rune, each a call) cost more per escape than the copying: here a
// one-character escape is a table lookup, the eight bytes after an escape are looked at
// in a word first (a second escape there is found without a call, and a short run is
// copied as a word), and only a run that goes on past them is left to IndexByte and
// copy. The decoding is never longer than the literal (an escape stands for at most as
// many bytes as it takes), so dst grows once, and each word is written whole in place.
// Those words reach up to eight bytes past what is decoded so far: s must not share
// memory with dst's spare capacity (no decoding in place).
func AppendDecoded(dst []byte, s string) []byte {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return append(dst, s...)
	}
	dst = slices.Grow(dst, len(s))
	n := len(dst)
	b := dst[:n+len(s)]
	n += copy(b[n:], s[:i])
	for i < len(s) {
		// s[i] is a backslash, and b has room for len(s)-i more bytes.
		if i+1 < len(s) && simple[s[i+1]] != 0 {
			b[n] = simple[s[i+1]]
			n++
			i += 2
		} else {
			r, k := Unescape(s[i:])
			if k == 0 {
				break
			}
			n += utf8.EncodeRune(b[n:], r)
			i += k
		}
		// The run up to the next backslash.
		if i+8 <= len(s) {
			w := le64(s[i:])
			binary.LittleEndian.PutUint64(b[n:], w) // (room: n-len(dst) <= i)
			if m := backslashes(w); m != 0 {
				k := bits.TrailingZeros64(m) >> 3
				n += k
				i += k
				continue
			}
			n += 8
			i += 8
		}
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			k = len(s) - i
		}
		n += copy(b[n:], s[i:i+k])
		i += k
	}
	return b[:n]
}

// simple is what each one-character escape stands for (0: none, or \u).
var simple = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// backslashes has the high bit set of each byte of w that is a backslash, exactly.
func backslashes(w uint64) uint64 {
	const lo7, high = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	y := w ^ 0x5c5c5c5c5c5c5c5c
	return ^((y&lo7 + lo7) | y) & high
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
