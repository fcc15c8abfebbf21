package measure

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRuneCount: RuneCount counts what utf8.RuneCountInString does, on ASCII of every
// length, text of other scripts, and invalid UTF-8 (each byte of a broken sequence one
// rune), wherever the non-ASCII bytes fall in a word of eight.
func TestRuneCount(t *testing.T) {
	units := []string{"a", "abcdefgh", " ", "\n", "é", "中", "🙂", "\xff", "\xe4\xb8", "\xc3", "\x80", "\xed\xa0\x80", "\x00"}
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "a", strings.Repeat("x", 17), strings.Repeat("é", 9)}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(units[r.IntN(len(units))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		if got, want := RuneCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("RuneCount(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzRuneCount(f *testing.F) {
	f.Add("abcdefgh\xffé中")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := RuneCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("RuneCount(%q) = %d, want %d", s, got, want)
		}
	})
}
