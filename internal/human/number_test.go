package human

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// numberSyntax is what SplitNumber reads, as a regular expression.
var numberSyntax = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z%]*)$`)

// TestSplitNumberMatchesRegexp: SplitNumber accepts what numberSyntax matches and splits
// it alike, on values made of the characters that matter and their neighbours.
func TestSplitNumberMatchesRegexp(t *testing.T) {
	check := func(s string) {
		num, unit, ok := SplitNumber(s)
		m := numberSyntax.FindStringSubmatch(s)
		if ok != (m != nil) || ok && (num != m[1] || unit != m[2]) {
			t.Fatalf("SplitNumber(%q) = %q, %q, %v; the regexp says %q", s, num, unit, ok, m)
		}
	}
	for _, s := range []string{"", ".", "1", "1.", ".5", "1.5", "1..5", "1.5.", "200000", "8k", "8 k", "8\tKB",
		"1.5 MiB", "85%", "85 %", "0.85", "1e5", "-1", "+1", "0x10", "1 2", "1k ", " 1", "1%%", "1k%", "½", "1é"} {
		check(s)
	}
	const alphabet = "0123456789.. \t\n\f\r\vkKmMbB%_-+ex/`@[{\x80é"
	r := rand.New(rand.NewPCG(3, 3))
	for range 200000 {
		b := make([]byte, r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
}
