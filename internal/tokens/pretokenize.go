package tokens

import (
	"sync"
	"unicode"
)

// The pre-tokenizers split text into the pieces that tiktoken's split regexes match, piece
// by piece, without a regexp engine. The reference is tiktoken-go, which runs each
// encoding's pattern with github.com/dlclark/regexp2 (a backtracking engine with .NET
// semantics) over the text converted to []rune. That fixes the meaning of every class:
//
//   - \p{L}, \p{N}, \p{M}, \p{Lu}... are Go's unicode.Categories tables (the same Unicode
//     version as the reference, since both come from the Go release that builds them);
//   - \s is unicode.IsSpace;
//   - (?i:'s|...) compares unicode.ToLower of each input rune with the lowercase pattern,
//     and the only runes that lower to an ASCII letter of s, t, r, e, v, m, l, d are the
//     ASCII capitals;
//   - the first alternative that matches at a position wins, each with its own
//     backtracking; every rune is matched by some alternative, so pieces tile the text.
//
// Invalid UTF-8 never reaches a splitter: countText first replaces each invalid byte
// with U+FFFD, exactly what the reference's []rune conversion does.
//
// Each splitter is a function next(s, i) that returns the end of the piece starting at
// byte i of s (i < len(s)). Every scan moves forward, and a rune is looked at a bounded
// number of times whatever the input, so splitting is linear.

// Rune classes, as bits of one byte per rune.
const (
	cL  = 1 << iota // \p{L}
	cN              // \p{N}
	cS              // \s
	cM              // \p{M}
	cU              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]: o200k's "upper" class
	cW              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]: o200k's "lower" class
	cNL             // \r or \n
)

// classTableSize covers the Basic Multilingual Plane and plane 1 (emoji, historic
// scripts, mathematical letters). Rarer runes are classified with the unicode package.
const classTableSize = 0x20000

// classTable is built the first time a splitter is made (about 0.2 ms).
var classTable = sync.OnceValue(buildClassTable)

func buildClassTable() *[classTableSize]uint8 {
	t := new([classTableSize]uint8)
	set := func(tab *unicode.RangeTable, bits uint8) {
		for _, r := range tab.R16 {
			for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
				t[c] |= bits
			}
		}
		for _, r := range tab.R32 {
			for c := rune(r.Lo); c <= rune(r.Hi) && c < classTableSize; c += rune(r.Stride) {
				t[c] |= bits
			}
		}
	}
	set(unicode.Lu, cL|cU)
	set(unicode.Lt, cL|cU)
	set(unicode.Ll, cL|cW)
	set(unicode.Lm, cL|cU|cW)
	set(unicode.Lo, cL|cU|cW)
	set(unicode.M, cM|cU|cW)
	set(unicode.N, cN)
	for c := range rune(0x3000 + 1) { // every rune IsSpace accepts is below U+3001
		if unicode.IsSpace(c) {
			t[c] |= cS
		}
	}
	t['\r'] |= cNL
	t['\n'] |= cNL
	return t
}

// classOf is the class of a rune above the table: only letters, digits and marks
// exist up there (no spaces, no \r\n).
func classOf(r rune) uint8 {
	switch {
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		return cL | cU
	case unicode.Is(unicode.Ll, r):
		return cL | cW
	case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r):
		return cL | cU | cW
	case unicode.Is(unicode.M, r):
		return cM | cU | cW
	case unicode.Is(unicode.N, r):
		return cN
	}
	return 0
}

// splitter holds the class table so the hot loops index a local pointer.
type splitter struct {
	tab *[classTableSize]uint8
}

func newSplitter() splitter { return splitter{tab: classTable()} }

// at decodes the rune at s[i] (valid UTF-8, i < len(s)) and returns its class and size.
func (p splitter) at(s string, i int) (uint8, int) {
	if c := s[i]; c < 0x80 {
		return p.tab[c], 1
	}
	return p.atMulti(s, i)
}

func (p splitter) atMulti(s string, i int) (uint8, int) {
	c := s[i]
	var r rune
	var n int
	switch {
	case c < 0xE0:
		r, n = rune(c&0x1F)<<6|rune(s[i+1]&0x3F), 2
	case c < 0xF0:
		r, n = rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F), 3
	default:
		r, n = rune(c&0x07)<<18|rune(s[i+1]&0x3F)<<12|rune(s[i+2]&0x3F)<<6|rune(s[i+3]&0x3F), 4
	}
	if r < classTableSize {
		return p.tab[r], n
	}
	return classOf(r), n
}

// run returns the end of the run of runes from i whose class has a bit of mask.
func (p splitter) run(s string, i int, mask uint8) int {
	for i < len(s) {
		c := s[i]
		if c < 0x80 {
			if p.tab[c]&mask == 0 {
				return i
			}
			i++
			continue
		}
		f, n := p.atMulti(s, i)
		if f&mask == 0 {
			return i
		}
		i += n
	}
	return i
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or -1.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	switch s[i+1] | 0x20 { // ASCII lower case; only letters can match below
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return -1
}

// whitespace matches the last three alternatives both encodings share,
// \s*[\r\n]+|\s+(?!\S)|\s+, at i, where s[i] is a space rune.
//
//   - \s*[\r\n]+: \s* first takes the whole run, then gives runes back until [\r\n]+ can
//     match, which happens at the last \r or \n of the run; the match ends just after it.
//   - \s+(?!\S): the whole run when it ends the text; otherwise the run less its last
//     rune (which is followed by a non-space), if that leaves at least one rune.
//   - \s+: a lone space rune before a non-space.
func (p splitter) whitespace(s string, i int) int {
	lastNL, lastStart := -1, i
	j := i
	for j < len(s) {
		f, n := p.tab[s[j]&0x7F], 1
		if s[j] >= 0x80 {
			f, n = p.atMulti(s, j)
		}
		if f&cS == 0 {
			break
		}
		if f&cNL != 0 {
			lastNL = j
		}
		lastStart = j
		j += n
	}
	switch {
	case lastNL >= 0:
		return lastNL + 1
	case j == len(s):
		return j
	case lastStart > i:
		return lastStart
	}
	return j
}
