package tokens

import (
	"math/rand/v2"
	"testing"
)

// TestHoldsPairRemembers: holdsPair, which remembers holds by the bytes of two
// segments, answers as holds does for every way of cutting the same bytes in two, asked
// one after another with the same memory: a key without the place of the cut (or
// without the lengths) gives one cut the answer of another, and fails here.
func TestHoldsPairRemembers(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 43))
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		sc := new(mergeScratch)
		sc.use(tab)
		differ := 0
		for k := range 20000 {
			var w string
			switch k % 3 {
			case 0:
				w = chineseWords[r.IntN(len(chineseWords))] + chineseWords[r.IntN(len(chineseWords))]
			case 1:
				for len(w) < 9 {
					k := r.IntN(tab.size())
					w += tab.blob[tab.off[k]:tab.off[k+1]]
				}
			default:
				b := make([]byte, 2+r.IntN(7))
				for i := range b {
					b[i] = "abcdeinrst "[r.IntN(11)]
				}
				w = string(b)
			}
			w = w[:min(len(w), 2+r.IntN(7))]
			var answers [9]bool
			for cut := 1; cut < len(w); cut++ {
				var evs []event
				tab.mergeSmall(w[:cut], &evs, 0)
				a := segment{start: 0, end: int32(cut), ev: 0}
				b := segment{start: int32(cut), end: int32(len(w)), ev: int32(len(evs))}
				tab.mergeSmall(w[cut:], &evs, int32(cut))
				want := tab.holds(w, evs[:b.ev], evs[b.ev:], cut)
				if got := sc.holdsPair(tab, w, a, b, evs); got != want {
					t.Fatalf("%s: holdsPair(%q | %q) = %v, holds %v", name, w[:cut], w[cut:], got, want)
				}
				answers[cut] = want
				if answers[cut] != answers[1] {
					differ++
				}
			}
		}
		if differ < 1000 {
			t.Errorf("%s: only %d cuts answered unlike another cut of the same bytes", name, differ)
		}
	}
}
