package human

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are the sequences a page or file an agent read can carry to a terminal.
var hostile = map[string]string{
	"osc 0 title":    "\x1b]0;pwned\x07",
	"osc 52 clip":    "\x1b]52;c;cHduZWQ=\x07",
	"clear screen":   "\x1b[2J\x1b[H",
	"osc 8 link":     "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
	"newline and cr": "ok\nforged line\rover",
	"c1 csi, osc":    "\u009b2J\u009d0;pwned\u009c",
	"raw c1 byte":    "a\x9b2Jb",
	"bidi override":  "abc\u202etxt.exe\u202c \u2066x\u2069",
	"del":            "a\x7fb",
}

// Terminal says whether s holds anything a terminal acts on rather than shows: what no
// text from a transcript may bring into human output.
func terminal(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) && r != '\n' {
			return true
		}
		i += size
	}
	return false
}

func TestSafe(t *testing.T) {
	for name, s := range hostile {
		got := Safe(s)
		if terminal(got) || strings.Contains(got, "\n") {
			t.Errorf("%s: Safe(%q) = %q, still acts on a terminal", name, s, got)
		}
		if l := SafeLabel(s+" tail", 12); terminal(l) || utf8.RuneCountInString(l) > 12 {
			t.Errorf("%s: SafeLabel = %q", name, l)
		}
	}
	for in, want := range map[string]string{
		"plain café ✓ 👩‍💻": "plain café ✓ 👩‍💻", // (a zero-width joiner is not a control)
		"\x1b]0;pwned\x07": `\x1b]0;pwned\x07`,
		"a\nb\rc\td":       `a\nb\rc\td`,
		"\u009b\u202e":     `\u009b\u202e`,
		"x\xffy":           `x\xffy`,
		`C:\Users\me`:      `C:\Users\me`,
		"\x00\x1f\x7f":     `\x00\x1f\x7f`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\n c  dddd", 6, "a b c…"}, // as Label
		{"ab\x1bcd", 8, `ab\x1bcd`},     // fits exactly
		{"ab\x1bcd", 6, `ab…`},          // the escape is not cut
		{"ab\x1bcd", 7, `ab\x1b…`},
		{"\u202eabc", 20, `\u202eabc`},
		{"x\x07y z", 5, `x…`},
	} {
		if got := SafeLabel(c.in, c.n); got != c.want {
			t.Errorf("SafeLabel(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func BenchmarkSafePlain(b *testing.B) {
	s := strings.Repeat("/home/user/project/file.go ", 4)
	for range b.N {
		Safe(s)
	}
}
