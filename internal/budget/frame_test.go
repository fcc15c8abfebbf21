package budget

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// frameSyntax is what isFrame recognizes, written as the regular expression it replaced
// (a Rust frame's name since not a number: "25: 172," is a mapping): the scanner must agree
// with it on every line.
var frameSyntax = regexp.MustCompile(`^\s+File ".*", line \d+|^\s+/.*\.go:\d+|^goroutine \d+ \[|^\s+at \S|^\s+\d+: [^\s0-9]`)

// mayBeFrameOld is the cheap test that let a line through to frameSyntax.
func mayBeFrameOld(line string) bool {
	if strings.HasPrefix(line, "goroutine ") {
		return true
	}
	if line == "" || line[0] != ' ' && line[0] != '\t' {
		return false
	}
	t := strings.TrimLeft(line, " \t")
	return strings.HasPrefix(t, `File "`) || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "at ") || t != "" && t[0] >= '0' && t[0] <= '9'
}

func TestIsFrameMatchesSyntax(t *testing.T) {
	lines := []string{
		`  File "/app/x.py", line 12, in f`, `  File "a", line x`, `  File "", line 3`, `File "a", line 1`,
		"\t/usr/lib/go/src/x.go:12 +0x1d", "\t/x.go:", "\t/x.go:a", "goroutine 1 [running]:", "goroutine x [",
		"goroutine 12[", "    at Foo.bar (x.js:1:2)", "    at ", "    at  x", "   12: main::f", "   12:x", "   12: ",
		" \f at x", "\t\f12: x", "  at é", "", " ", "goroutine ",
	}
	check := func(line string) {
		want := mayBeFrameOld(line) && frameSyntax.MatchString(line)
		if got := isFrame(line); got != want {
			t.Fatalf("isFrame(%q) = %v, the regular expression says %v", line, got, want)
		}
	}
	for _, line := range lines {
		check(line)
	}
	atoms := []string{" ", "\t", "\f", "File \"", "\", line ", "1", "23", "/", ".go:", "at ", ": ", "goroutine ", " [", "x", "é", "\xff"} // (no newline: a line holds none)
	r := rand.New(rand.NewSource(1))
	for range 300000 {
		var b strings.Builder
		for m := r.Intn(7); m > 0; m-- {
			b.WriteString(atoms[r.Intn(len(atoms))])
		}
		check(b.String())
	}
}
