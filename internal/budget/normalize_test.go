package budget

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"colours", "\x1b[31mFAIL\x1b[0m pkg\n\x1b[1;32mok\x1b[m", "FAIL pkg\nok"},
		{"title and charset", "\x1b]0;my title\x07a\x1b(Bb\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "ablink"},
		{"progress", "downloading  10%\rdownloading  55%\rdownloading 100%\ndone", "downloading 100%\ndone"},
		{"redraw then clear", "step 1\r\x1b[Kstep 2\r\x1b[K\nnext", "step 2\nnext"},
		{"crlf", "a\r\nb\r\n", "a\nb\n"},
		{"spinner", "\x1b[1G⠋ installing\x1b[1G⠙ installing\x1b[0Gnpm error failed\nnext", "npm error failed\nnext"},
		{"trailing space", "a  \nb\t\n  \nc", "a\nb\n\nc"},
		{"blank lines", "a\n\n\n\n\nb\n\n\n", "a\n\n\nb\n\n\n"},
		{"repeats", "x\nwaiting for the server to start\nwaiting for the server to start\nwaiting for the server to start\ny",
			"x\nwaiting for the server to start\n[ctx-budget: the line above repeated 2 more times]\ny"},
		{"short repeats stay", "ok\nok\nok", "ok\nok\nok"},
		{"two long lines", strings.Repeat("a", 60) + "\n" + strings.Repeat("a", 60), strings.Repeat("a", 60) + "\n[ctx-budget: the line above repeated 1 more time]"},
		{"nothing to do", "a\nb\n\n\nc", "a\nb\n\n\nc"},
	} {
		if got := normalize(c.in); got != c.want {
			t.Errorf("%s: normalize(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if got := normalize(c.want); got != c.want {
			t.Errorf("%s: not idempotent: %q → %q", c.name, c.want, got)
		}
		if c.in != c.want && !mayNeedNormalizing(transcript.Quote(c.in)) {
			t.Errorf("%s: mayNeedNormalizing says no to %q", c.name, c.in)
		}
	}
}

// TestNormalizeProperties: on random texts made of the pieces normalizing acts on,
// normalize is idempotent, never makes a text longer, and mayNeedNormalizing never says no
// to a text normalize would change.
func TestNormalizeProperties(t *testing.T) {
	pieces := []string{"a", "bb", "x y", " ", "\t", "\n", "\n", "\n", "\r", "\r\n", "\x1b[2K", "\x1b[0m", "\x1b]0;t\x07", "\\", "\\n", "é", strings.Repeat("long ", 12)}
	r := rand.New(rand.NewSource(1))
	for range 20000 {
		var b strings.Builder
		for range r.Intn(14) {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		s := b.String()
		n := normalize(s)
		if normalize(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", s, n, normalize(n))
		}
		if len(n) > len(s) {
			t.Fatalf("longer: %q → %q", s, n)
		}
		if n != s && !mayNeedNormalizing(transcript.Quote(s)) {
			t.Fatalf("mayNeedNormalizing(%q) is false, but normalize gives %q", s, n)
		}
		if needsNormalizing(s) != (n != s) {
			t.Fatalf("needsNormalizing(%q) = %v, but normalize gives %q", s, needsNormalizing(s), n)
		}
	}
}
