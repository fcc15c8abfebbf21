package jsonlit

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

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

// appendDecodedSlow is AppendDecoded as it was first written: a strings.IndexByte and an
// append for each run between escapes, Unescape for each escape.
func appendDecodedSlow(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		r, n := Unescape(s)
		if n == 0 {
			return dst
		}
		s = s[n:]
		dst = utf8.AppendRune(dst, r)
	}
}

// TestAppendDecoded holds AppendDecoded to the plain loop on literals with escapes of
// every kind at every distance from each other and from the ends (the words it copies
// eight bytes at a time, the run it hands to IndexByte), broken escapes and bytes that
// are not UTF-8, after a dst that already holds bytes.
func TestAppendDecoded(t *testing.T) {
	escapes := []string{`\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\u00e9`, `\u0000`, `\ud83d\ude00`, `\ud83d`, `\uzzzz`, `\u00`, `\x`, `\`}
	check := func(s string) {
		t.Helper()
		for _, dst := range [][]byte{nil, []byte("ab")} {
			got := AppendDecoded(slices.Clone(dst), s)
			want := appendDecodedSlow(slices.Clone(dst), s)
			if string(got) != string(want) {
				t.Fatalf("AppendDecoded(%q, %q) = %q, want %q", dst, s, got, want)
			}
		}
	}
	runs := []string{"", "a", "héllo", "\xff\xfe", strings.Repeat("x", 7), strings.Repeat("y", 8), strings.Repeat("z", 9), strings.Repeat("w", 63), strings.Repeat("v", 80), strings.Repeat("é", 50)}
	for _, a := range runs {
		for _, e := range escapes {
			for _, b := range runs {
				check(a + e + b)
				for _, e2 := range escapes {
					check(a + e + b + e2 + a)
				}
			}
		}
	}
}

// FuzzAppendDecoded: any literal decodes as the plain loop decodes it.
func FuzzAppendDecoded(f *testing.F) {
	f.Add(`line one\nline \"two\"\t\u00e9\ud83d\ude00 and a long run of text without escapes at all\\`)
	f.Add(`\u12`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendDecoded(nil, s), appendDecodedSlow(nil, s); string(got) != string(want) {
			t.Fatalf("AppendDecoded(%q) = %q, want %q", s, got, want)
		}
	})
}
