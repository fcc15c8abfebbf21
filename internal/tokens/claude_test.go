package tokens

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

func TestClaudeCoefficientsSane(t *testing.T) {
	fams := ClaudeFamilies()
	if len(fams) < 2 || fams[0].Name != "claude" {
		t.Fatalf("families %v: want the main family \"claude\" first and at least one more", fams)
	}
	for _, f := range fams {
		c := f.Coef
		// Every class costs something, and none more than a few tokens a character.
		for k, v := range c {
			if !(v > 0 && v <= 5) {
				t.Errorf("%s: %s costs %.3f tokens a character, want (0, 5]", f.Name, ClaudeClass(k), v)
			}
		}
		// What is known of every BPE vocabulary: a letter is a fraction of a token (words
		// merge), a digit costs more than a letter (numbers merge little), a space less
		// than a letter (it merges into the word after it), an emoji at least a token.
		if !(c[ClassLetters] > 0.15 && c[ClassLetters] < 0.5) {
			t.Errorf("%s: a letter costs %.3f, want between 0.15 and 0.5", f.Name, c[ClassLetters])
		}
		if c[ClassDigits] <= c[ClassLetters] || c[ClassSpaces] >= c[ClassLetters] || c[ClassAstral] < 1 {
			t.Errorf("%s: prices out of order: %v", f.Name, c)
		}
		// English prose costs 3.5 to 5 bytes a token in every current vocabulary.
		prose := "The quick brown fox jumps over the lazy dog, and then it runs away into the woods.\n"
		n := NewClaudeCounter(c).Count(strings.Repeat(prose, 20))
		if bpt := float64(20*len(prose)) / float64(n); bpt < 2.5 || bpt > 5 {
			t.Errorf("%s: prose at %.2f bytes a token", f.Name, bpt)
		}
	}
	if AnthropicToolCallOverhead <= 0 || AnthropicToolResultOverhead <= 0 || MessageOverhead("anthropic") <= 0 {
		t.Errorf("framing: call %d, result %d, message %d; want all > 0", AnthropicToolCallOverhead, AnthropicToolResultOverhead, MessageOverhead("anthropic"))
	}
}

func TestClaudeFamilySelection(t *testing.T) {
	for model, want := range map[string]string{
		"":                                  "claude",
		"claude-opus-4-7":                   "claude-opus-4-7",
		"claude-opus-4-7-20260115":          "claude-opus-4-7",
		"claude-opus-4.7":                   "claude-opus-4-7",
		"anthropic/claude-opus-4-7":         "claude-opus-4-7",
		"us.anthropic.claude-opus-4-7-v1:0": "claude-opus-4-7",
		"claude-sonnet-4-5-20250929":        "claude",
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude",
		"claude-opus-4-6":         "claude",
		"claude-opus-4-70":        "claude", // not a dated 4.7
		"claude-3-5-haiku-latest": "claude",
		"claude-haiku-4-5":        "claude",
		"gpt-4o":                  "claude",
		"no such model":           "claude",
	} {
		if got := ClaudeFamilyOf(model).Name; got != want {
			t.Errorf("ClaudeFamilyOf(%q) = %q, want %q", model, got, want)
		}
		c := Claude(model)
		if c.Name() != "estimate" {
			t.Errorf("Claude(%q).Name() = %q, want \"estimate\"", model, c.Name())
		}
		if _, ok := c.(ByLiteral); !ok {
			t.Errorf("Claude(%q) does not count literals", model)
		}
		if _, ok := c.(ByLength); ok {
			t.Errorf("Claude(%q) claims to count by length alone", model)
		}
	}
	text := "func main() { fmt.Println(\"hello, world\") }\n"
	if a, b := Claude("claude-opus-4-7").Count(text), Claude("claude-sonnet-4-5").Count(text); a <= b {
		t.Errorf("Opus 4.7 counts %d, Sonnet 4.5 %d: want more for 4.7's tokenizer", a, b)
	}
}

func TestClaudeCount(t *testing.T) {
	c := NewClaudeCounter(ClaudeCoefficients{ClassLetters: 0.25, ClassDigits: 1, ClassPunct: 0.5, ClassSpaces: 0.125, ClassNewlines: 1, ClassCJK: 1, ClassOther: 0.5, ClassAstral: 2})
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},          // 0.25, but a text is at least one token
		{"abcd", 1},       // 4 letters
		{"abcdef", 2},     // 1.5 rounds up
		{"ab cd\n", 2},    // 4 letters, a space, a newline: 1 + 0.125 + 1
		{"2024-01-01", 9}, // 8 digits, 2 dashes
		{"日本語", 3},
		{"é", 1},
		{"🚀🚀", 4},
		{"\x00\x1b", 1}, // control characters are punctuation: 1
		{"\xff\xfe", 1}, // two bytes that are not UTF-8: two characters of other
		{"\t\t\t\t\t\t\t\t", 1},
		{strings.Repeat("abcdefgh", 100), 200},
	} {
		if got := c.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	// Counting is additive but for rounding: the count of the whole is within a token
	// per piece of the sum of the pieces' counts.
	pieces := []string{"Hello, ", "wörld", "! 123\n", "🙂", "\t"}
	sum := 0
	for _, p := range pieces {
		sum += c.Count(p)
	}
	if whole := c.Count(strings.Join(pieces, "")); whole > sum || whole < sum-len(pieces) {
		t.Errorf("whole %d, pieces %d", whole, sum)
	}
}

// claudeLiteralCases are strings whose literals exercise every escape, and literals that
// are spelled in ways a JSON encoder would not choose, or that are broken.
var claudeLiteralCases = []string{
	"",
	"plain text",
	"line one\nline two\r\n\ttabbed",
	`quotes " and backslashes \ and slashes /`,
	"control \x00\x01\x1f\x7f characters",
	"accents: é à ü ß ñ, Greek αβγ, Cyrillic жзи",
	"CJK 日本語のテキスト 한국어 中文",
	"emoji 🚀🐳⭐️ and flags 🇫🇷",
	"U+2028 \u2028 and U+2029 \u2029",
	"not UTF-8: \xff\xfe \xe4\xb8 (cut) \x80 (stray)",
	"\xe4\xb8" + "é", // a cut sequence before a character an escape may write
	strings.Repeat("0123456789abcdef", 40) + "\n" + strings.Repeat("─", 30),
}

// rawLiterals are literals as they may be written, broken ones included.
var rawLiterals = []string{
	`"\u0041\u00e9\u00E9\u65e5"`,        // escapes an encoder would write raw, in both cases of hex
	`"\/path\/to\/file"`,                // escaped slashes
	`"\ud83d\ude80 rocket"`,             // a surrogate pair
	`"\ud83d alone"`,                    // a lone high surrogate: U+FFFD
	`"\ude80 alone"`,                    // a lone low surrogate
	`"\ud83d\u0041"`,                    // a high surrogate, then not a low one
	`"\uzzzz not hex"`,                  // read as U+0000
	`"\b\f\n\r\t\"\\"`,                  // every short escape
	`"cut \u12"`,                        // a broken \u: what came before it counts
	`"bad \x escape then text"`,         // a broken escape
	`"ends with a backslash \"`,         // the closing quote is escaped
	`"\"`,                               //
	`""`,                                //
	`"`,                                 // not a literal
	`no quotes`,                         // not a literal
	`"raw ` + "\xff\xfe" + ` bytes"`,    // bytes that are not UTF-8, as written
	`"` + "\xe4\xb8" + `\u00e9"`,        // a cut sequence, then an escape
	`"tab	and newline` + "\n" + ` raw"`, // raw control characters (not valid JSON, but read)
}

func TestClaudeCountLiteral(t *testing.T) {
	for _, f := range ClaudeFamilies() {
		c := NewClaudeCounter(f.Coef)
		for _, s := range claudeLiteralCases {
			checkLiteral(t, c, s)
		}
		for _, lit := range rawLiterals {
			if got, want := c.CountLiteral(lit), c.Count(decodeLiteral(lit)); got != want {
				t.Errorf("%s: CountLiteral(%q) = %d, Count(decoded %q) = %d", f.Name, lit, got, decodeLiteral(lit), want)
			}
		}
	}
}

// checkLiteral checks CountLiteral against Count for s quoted three ways: as
// encoding/json writes it, as transcript.Quote writes it, and with every character
// written as a \u escape (surrogate pairs beyond U+FFFF).
func checkLiteral(t *testing.T, c *ClaudeCounter, s string) {
	t.Helper()
	want := c.Count(s)
	std, _ := json.Marshal(s)
	for name, lit := range map[string]string{"encoding/json": string(std), "transcript.Quote": transcript.Quote(s), "\\u": quoteU(s)} {
		if got := c.CountLiteral(lit); got != want {
			t.Errorf("%s: CountLiteral(%q) = %d, Count(%q) = %d", name, lit, got, s, want)
		}
	}
}

// quoteU writes every character of s as a \u escape, as no encoder would; each byte that
// is not UTF-8 as \ufffd, as encoding/json does.
func quoteU(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04X\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// decodeLiteral is what measure counts of a literal: transcript's decoding of it.
func decodeLiteral(lit string) string {
	t := &transcript.Transcript{Doc: lit}
	return t.BodyText(&transcript.Block{Body: transcript.Span{Start: 0, End: len(lit)}})
}

func FuzzClaudeLiteral(f *testing.F) {
	for _, s := range claudeLiteralCases {
		f.Add(s)
	}
	for _, lit := range rawLiterals {
		f.Add(lit)
	}
	c := claudeCounters[0]
	f.Fuzz(func(t *testing.T, s string) {
		checkLiteral(t, c, s)
		// s itself read as a literal as written, escapes and broken escapes included.
		lit := `"` + s + `"`
		if got, want := c.CountLiteral(lit), c.Count(decodeLiteral(lit)); got != want {
			t.Errorf("CountLiteral(%q) = %d, Count(decoded) = %d", lit, got, want)
		}
	})
}

func TestClaudeCountAllocs(t *testing.T) {
	c := Claude("claude-sonnet-4-5")
	lc := c.(ByLiteral)
	text := strings.Repeat("mixed text: é 日本 🚀 0123\n", 10)
	raw, _ := json.Marshal(text)
	lit := string(raw)
	if n := testing.AllocsPerRun(100, func() {
		c.Count(text)
		lc.CountLiteral(lit)
		Claude("claude-opus-4-7-20260101")
	}); n != 0 {
		t.Errorf("%v allocations a run, want 0", n)
	}
}

// mixedText is about 1 MB of what transcripts hold: code, prose, JSON, logs with a little
// non-ASCII.
func mixedText(size int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{
		"func (c *ClaudeCounter) Count(text string) int { return round(c.price(text)) }\n",
		"The estimate prices every character by its class, then rounds the sum.\n",
		`{"file_path":"/home/user/project/main.go","old_string":"x := 1","new_string":"x := 2"}`,
		"    1→package main\n    2→\n    3→import \"fmt\"\n",
		"2025-06-15T00:46:15+01:00 level=info msg=\"Using docker host\" ⭐ 🚀\n",
		"Les données sont réparties — voir §3.2 « résumé ».\n",
		"                if err != nil {\n                        return err\n                }\n",
	}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func BenchmarkClaudeCount(b *testing.B) {
	text := mixedText(1 << 20)
	c := Claude("")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.Count(text)
	}
}

func BenchmarkClaudeCountLiteral(b *testing.B) {
	raw, _ := json.Marshal(mixedText(1 << 20))
	lit := string(raw)
	c := Claude("").(ByLiteral)
	b.SetBytes(int64(len(lit)))
	for b.Loop() {
		c.CountLiteral(lit)
	}
}

func TestClaudeValidUTF8Classes(t *testing.T) {
	// Classes sees what Count prices: the sum of the class counts is the number of
	// characters (runes, and bytes that are not UTF-8).
	for _, s := range claudeLiteralCases {
		var n [NumClaudeClasses]int
		ClaudeClasses(s, &n)
		total := 0
		for _, v := range n {
			total += v
		}
		if want := utf8.RuneCountInString(s); total != want {
			t.Errorf("Classes(%q) counts %d characters, want %d", s, total, want)
		}
	}
}

func TestIsClaude(t *testing.T) {
	for name, want := range map[string]bool{
		"claude-sonnet-4-5": true, "us.anthropic.claude-opus-4-1-20250805-v1:0": true,
		"anthropic/claude-haiku-4.5": true, "gpt-4o": false, "": false, "claudette": false,
	} {
		if got := IsClaude(name); got != want {
			t.Errorf("IsClaude(%q) = %v, want %v", name, got, want)
		}
	}
}
