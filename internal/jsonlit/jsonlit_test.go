package jsonlit

import "testing"

func TestUnescape(t *testing.T) {
	for _, c := range []struct {
		in string
		r  rune
		n  int
	}{
		{`\n`, '\n', 2},
		{`\"x`, '"', 2},
		{`\/`, '/', 2},
		{`\u00e9`, 'é', 6},
		{`\u00E9`, 'é', 6},
		{`\ud83d\ude00`, '😀', 12},
		{`\ud83d`, 0xD83D, 6},       // a lone surrogate: utf8 writes it as U+FFFD
		{`\ud83d\u0041`, 0xD83D, 6}, // a high surrogate not followed by a low one
		{`\uzzzz`, 0, 6},            // not hex: U+0000, as gjson reads it
		{`\u00`, 0, 0},              // cut short
		{`\x`, 0, 0},                // not an escape
		{`\`, 0, 0},
	} {
		if r, n := Unescape(c.in); r != c.r || n != c.n {
			t.Errorf("Unescape(%q) = %U, %d; want %U, %d", c.in, r, n, c.r, c.n)
		}
	}
}
