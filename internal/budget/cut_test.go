package budget

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

func estimate() tokens.Counter {
	c, _ := tokens.New("estimate")
	return c
}

// numbered is n lines "line 0001 ..." of about 40 characters each.
func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %04d of the output, some words\n", i)
	}
	return b.String()
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func TestMarkerRoundTrip(t *testing.T) {
	for _, tool := range []string{"Bash", "", "mcp__github__get_file"} {
		text := numbered(1000)
		p := split(text, runes(text), estimate().Count)
		out := p.build(2000, tool)
		q, ok := parseCut(out)
		if !ok {
			t.Fatalf("tool %q: the marker is not recognised:\n%s", tool, out)
		}
		if q.orig != p.orig {
			t.Errorf("tool %q: original %+v read back as %+v", tool, p.orig, q.orig)
		}
		if !strings.HasPrefix(text, q.head) || !strings.HasSuffix(text, q.tail) {
			t.Errorf("tool %q: head and tail are not the text's", tool)
		}
		want := "the tool call"
		if tool != "" {
			want = "the " + tool + " call"
		}
		if !strings.Contains(out, "re-run "+want) {
			t.Errorf("tool %q: marker does not say how to get the text back:\n%s", tool, out)
		}
	}
}

func TestMarkerSaysWhatWasCut(t *testing.T) {
	text := numbered(1000) // 36,000 characters, 1,000 lines
	p := split(text, runes(text), estimate().Count)
	out := p.fit(5000, runes, false, "Bash")
	m := markerSyntax.FindString(out[strings.Index(out, markerStart):])
	kept := runes(out) - runes(m) - 2
	want := fmt.Sprintf("[ctx-budget: cut %s of 36,000 characters here (originally 9,000 tokens, 1,000 lines); to see them, re-run the Bash call narrowed to the part you need]",
		human.Thousands(36000-kept))
	if m != want {
		t.Errorf("marker\n got %s\nwant %s", m, want)
	}
}

func TestParseCutRejectsForeignMarkers(t *testing.T) {
	real := split(numbered(100), 3600, estimate().Count).build(1000, "Read")
	for name, text := range map[string]string{
		"no newline before": "x" + real[strings.Index(real, markerStart):],
		"numbers disagree":  strings.Replace(real, "of 3,600 characters", "of 3,700 characters", 1),
		"mangled":           strings.Replace(real, "(originally", "(orig", 1),
		"quoted, no break":  "the log said [ctx-budget: cut 5 of 10 characters here (originally 3 tokens, 1 line); x]",
	} {
		if _, ok := parseCut(text); ok {
			t.Errorf("%s: recognised as a cut", name)
		}
	}
	// A foreign marker in the kept head does not hide the real one.
	orig := "\n[ctx-budget: cut 1 of 2 characters here (originally 1 token, 1 line); x]\n" + numbered(100)
	cut := split(orig, runes(orig), estimate().Count).build(1000, "Read")
	p, ok := parseCut(cut)
	if !ok || p.orig.chars != runes(orig) || !strings.HasPrefix(p.head, "\n[ctx-budget: cut 1 of 2") {
		t.Errorf("real marker after a foreign one: ok=%v %+v", ok, p.orig)
	}
}

func TestBuildNeverSplitsUTF8(t *testing.T) {
	// Every character is multi-byte; no line breaks to snap to.
	text := strings.Repeat("é漢字🙂ü", 3000)
	p := split(text, runes(text), estimate().Count)
	for _, k := range []int{0, 1, 2, 3, 5, 7, 100, 1001, 14999} {
		out := p.build(k, "Read")
		if !utf8.ValidString(out) {
			t.Fatalf("k=%d: output is not valid UTF-8", k)
		}
		q, ok := parseCut(out)
		if !ok {
			t.Fatalf("k=%d: not recognised", k)
		}
		if q.headRunes+q.tailRunes != k {
			t.Errorf("k=%d: kept %d characters", k, q.headRunes+q.tailRunes)
		}
	}
}

func TestBuildPrefersLineBreaks(t *testing.T) {
	text := numbered(1000) // lines of 36 characters
	p := split(text, runes(text), estimate().Count)
	out := p.build(10000, "Read")
	q, _ := parseCut(out)
	// The head ends at a line end (its newline becomes the marker's), the tail starts a line.
	if !strings.HasPrefix(text[len(q.head):], "\n") {
		t.Errorf("head does not end at a line break: ...%q", q.head[len(q.head)-20:])
	}
	if !strings.HasPrefix(q.tail, "line ") {
		t.Errorf("tail does not start a line: %q...", q.tail[:20])
	}
	if kept := q.headRunes + q.tailRunes; kept > 10000 || kept < 9000 {
		t.Errorf("kept %d characters, want close to 10,000 and not more", kept)
	}
	// Without a break near the cut point the cut stays where it is.
	long := strings.Repeat("x", 20000) + "\n" + strings.Repeat("y", 20000)
	q, _ = parseCut(split(long, runes(long), estimate().Count).build(10000, "Read"))
	if q.headRunes != 5000 || q.tailRunes != 5000 {
		t.Errorf("no nearby break: kept %d + %d, want 5000 + 5000", q.headRunes, q.tailRunes)
	}
}

func TestFitStaysWithinLimit(t *testing.T) {
	bpe, err := tokens.New("o200k")
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{
		"lines": numbered(2000),
		"cjk":   strings.Repeat("漢字のテキスト、句読点もある。\n", 3000),
		"flat":  strings.Repeat("word ", 20000),
	}
	for name, text := range texts {
		for _, tc := range []struct {
			limit   int
			measure func(string) int
			unit    string
		}{
			{15000, runes, "chars"},
			{2000, runes, "chars"},
			{300, runes, "chars"},
			{3000, bpe.Count, "o200k tokens"},
			{3000, estimate().Count, "estimated tokens"},
		} {
			if short := testing.Short(); short && tc.unit == "o200k tokens" && name == "cjk" {
				continue
			}
			p := split(text, runes(text), bpe.Count)
			out := p.fit(tc.limit, tc.measure, tc.unit != "chars", "Bash")
			got := tc.measure(out)
			if got > tc.limit {
				t.Errorf("%s, %d %s: result is %d", name, tc.limit, tc.unit, got)
			}
			if got < tc.limit*85/100 {
				t.Errorf("%s, %d %s: result is only %d, keeps too little", name, tc.limit, tc.unit, got)
			}
		}
	}
	// A limit smaller than the marker leaves the marker alone.
	out := split(numbered(100), 3600, estimate().Count).fit(50, runes, false, "Bash")
	if q, ok := parseCut(out); !ok || q.kept() != 0 {
		t.Errorf("tiny limit: %q", out)
	}
}

func TestRecutAccountsForTheOriginal(t *testing.T) {
	text := numbered(2000) // 72,000 characters
	first := split(text, runes(text), estimate().Count).fit(30000, runes, false, "Bash")
	p := split(first, runes(first), estimate().Count)
	if !p.cutBefore || p.orig.chars != 72000 || p.orig.lines != 2000 {
		t.Fatalf("first cut not recognised: %+v", p)
	}
	second := p.fit(15000, runes, false, "Bash")
	if n := strings.Count(second, markerStart); n != 1 {
		t.Fatalf("%d markers after a second cut", n)
	}
	q, _ := parseCut(second)
	if q.orig != p.orig {
		t.Errorf("original size changed: %+v -> %+v", p.orig, q.orig)
	}
	if !strings.HasPrefix(text, q.head) || !strings.HasSuffix(text, q.tail) {
		t.Errorf("second cut's head and tail are not the original's")
	}
	if r := runes(second); r > 15000 || r < 13500 {
		t.Errorf("second cut is %d characters", r)
	}
}

// TestRuneOffsetMatchesRunes checks runeOffset and runeOffsetFromEnd, which skip eight
// bytes of ASCII at a time, against a rune-by-rune count at every n, over texts where
// ASCII runs of every length meet multi-byte characters and invalid bytes.
func TestRuneOffsetMatchesRunes(t *testing.T) {
	texts := []string{"", "a", "abcdefgh", "abcdefghi", "é", "abcdefgé", "éabcdefghijklmnop", "日本語abcdefghijklmnopq日",
		"abcdefghijklmnop\xffqrstuvwx", "x\x80yyyyyyyyyyyyyyyyy\xe2\x82", strings.Repeat("abcdefgh€", 5) + "tail"}
	for _, s := range texts {
		runes := utf8.RuneCountInString(s)
		for n := -1; n <= runes+2; n++ {
			want := 0
			for k := 0; k < n && want < len(s); k++ {
				_, size := utf8.DecodeRuneInString(s[want:])
				want += size
			}
			if got := runeOffset(s, n); got != want {
				t.Errorf("runeOffset(%q, %d) = %d, want %d", s, n, got, want)
			}
			i := len(s)
			for k := 0; k < n && i > 0; k++ {
				_, size := utf8.DecodeLastRuneInString(s[:i])
				i -= size
			}
			wantEnd := len(s) - i
			if got := runeOffsetFromEnd(s, n); got != wantEnd {
				t.Errorf("runeOffsetFromEnd(%q, %d) = %d, want %d", s, n, got, wantEnd)
			}
		}
	}
}
