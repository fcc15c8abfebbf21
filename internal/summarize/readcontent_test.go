package summarize

import "testing"

// TestNumberedEnd holds numberedEnd to the regular expression it stands for.
func TestNumberedEnd(t *testing.T) {
	for _, l := range []string{"", "1", "1→", "     1→text", "  12\tx", "\t3\t", "\n\f\r 4→a", "\v5→",
		"x1→", " →", "12 →", "1\t\t", "0→→", "123", " \t ", "٣→", "1\u2192", "1\u2193"} {
		want := -1
		if loc := numbered.FindStringIndex(l); loc != nil {
			want = loc[1]
		}
		if got := numberedEnd(l); got != want {
			t.Errorf("numberedEnd(%q) = %d, the expression ends at %d", l, got, want)
		}
	}
}

// FuzzNumberedEnd: numberedEnd agrees with numbered on any line.
func FuzzNumberedEnd(f *testing.F) {
	f.Add("     1→text")
	f.Add("\t3\tx")
	f.Fuzz(func(t *testing.T, l string) {
		want := -1
		if loc := numbered.FindStringIndex(l); loc != nil {
			want = loc[1]
		}
		if got := numberedEnd(l); got != want {
			t.Errorf("numberedEnd(%q) = %d, the expression ends at %d", l, got, want)
		}
	})
}
