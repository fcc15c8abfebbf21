package budget

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCutByLines: on any text, normalizing is idempotent and needsNormalizing says exactly
// whether it changes the text; a cut to a limit in characters is within the limit (or is
// the marker alone, when the limit is below it), and cut again at half the limit it still
// has one marker.
func FuzzCutByLines(f *testing.F) {
	f.Add(goTestLog(40, 20), uint16(600))
	f.Add("main.c:3:5: error: x\n  int y\n      ^~~\n"+strings.Repeat("cc -c a.c\n", 40), uint16(200))
	f.Add("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\nValueError: bad\n"+numbered(30), uint16(300))
	f.Add("\x1b[31mFAIL\x1b[0m\r\nok  \nok  \nok  \n\n\n\n", uint16(10))
	f.Add("[ctx-budget: 3 lines left out here]\nerror\n[ctx-budget: cut 5 of 9 characters in 1 place (originally 2 tokens, 3 lines); kept x; to see the rest, re-run the tool call narrowed to the part you need]", uint16(50))
	c := estimate()
	f.Fuzz(func(t *testing.T, text string, limit uint16) {
		if !utf8.ValidString(text) {
			return
		}
		n := normalize(text)
		if normalize(n) != n {
			t.Fatalf("normalize not idempotent: %q → %q → %q", text, n, normalize(n))
		}
		if needsNormalizing(text) != (n != text) {
			t.Fatalf("needsNormalizing(%q) = %v, normalize gives %q", text, needsNormalizing(text), n)
		}
		l := int(limit)
		runes := utf8.RuneCountInString(n)
		if runes <= l {
			return
		}
		measure := utf8.RuneCountInString
		out := fitText(n, runes, l, measure, false, "Bash", c, false, n, runes)
		if m := measure(out); m > l && !strings.HasPrefix(strings.TrimSpace(out), "[ctx-budget: cut ") {
			t.Fatalf("cut to %d characters is %d: %q", l, m, out)
		}
		// Cut again at half the limit, as a later, tighter run would: one marker still
		// accounts for the whole cut, never a marker inside a marker.
		if h := l / 2; measure(out) > h {
			again := fitText(out, measure(out), h, measure, false, "Bash", c, false, out, measure(out))
			if strings.Count(again, "[ctx-budget: cut ") != 1 {
				t.Fatalf("cut again at %d: %d markers:\n%q", h, strings.Count(again, "[ctx-budget: cut "), again)
			}
		}
	})
}
