package budget

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTrimsAreTrimLeft: trimBlanks and trimLeftSet trim what strings.TrimLeft does with
// the same cut sets, on strings of those bytes, others, and bytes that are not ASCII.
func TestTrimsAreTrimLeft(t *testing.T) {
	units := []string{" ", "\t", "|", "0", "7", ",", ".", "^", "a", "é", "\xff", "\x80", "\n", "~"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(units[r.IntN(len(units))])
		}
		s := b.String()
		if got, want := trimBlanks(s), strings.TrimLeft(s, " \t"); got != want {
			t.Fatalf("trimBlanks(%q) = %q, want %q", s, got, want)
		}
		if got, want := trimLeftSet(s, &pointerLead), strings.TrimLeft(s, " \t|0123456789"); got != want {
			t.Fatalf("trimLeftSet(%q, pointerLead) = %q, want %q", s, got, want)
		}
		if got, want := trimLeftSet(s, &numberBytes), strings.TrimLeft(s, "0123456789,."); got != want {
			t.Fatalf("trimLeftSet(%q, numberBytes) = %q, want %q", s, got, want)
		}
	}
}
