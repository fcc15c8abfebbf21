package tokens

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonlit"
)

// The Claude estimate.
//
// Claude's tokenizer is unpublished, so no counter here is exact for it; 4 bytes a token
// (Estimate) undercounts it by about a third on real Claude Code sessions. The Claude
// estimate counts the characters of a text in eight classes and prices each class at the
// tokens a character of it was measured to cost: a linear function of the eight counts,
// rounded. The prices were fitted per model family on the growth of the prompt between
// consecutive requests recorded in real sessions (scripts/calibrate; claude_table.go
// holds the prices and, in its comment, the error on the sessions held out of the fit).
// Every class is priced per character, whatever its neighbours, so the count of two texts
// joined is the sum of their counts (to rounding): that is what lets CountLiteral count a
// JSON string literal as written, its escapes one character each.

// ClaudeClass is a class of characters the Claude estimate prices.
type ClaudeClass uint8

// The classes. A character is a rune as utf8.DecodeRuneInString reads it: each byte that
// is not part of a valid UTF-8 sequence is one character of ClassOther, as is U+FFFD, the
// rune a JSON encoder writes for it.
const (
	ClassLetters  ClaudeClass = iota // ASCII letters
	ClassDigits                      // ASCII digits
	ClassPunct                       // ASCII punctuation, symbols and control characters
	ClassSpaces                      // space and tab
	ClassNewlines                    // \n and \r
	ClassCJK                         // U+3000-U+D7FF: CJK symbols, kana, Han, Hangul and the scripts between
	ClassOther                       // the other runes up to U+FFFF: accented letters, dashes, arrows, box drawing
	ClassAstral                      // runes above U+FFFF: emoji, mostly
	NumClaudeClasses
)

var claudeClassNames = [NumClaudeClasses]string{"letters", "digits", "punct", "spaces", "newlines", "cjk", "other", "astral"}

func (c ClaudeClass) String() string {
	if c < NumClaudeClasses {
		return claudeClassNames[c]
	}
	return "unknown"
}

// ClaudeCoefficients are the tokens one character of each class costs.
type ClaudeCoefficients [NumClaudeClasses]float64

// ClaudeFamily is a group of Claude models that share a tokenizer, with the prices fitted
// for it.
type ClaudeFamily struct {
	// Name is the model name the family's members start with ("claude-opus-4-7"), or
	// "claude" for the main family, which takes every other model.
	Name string
	Coef ClaudeCoefficients
}

// ClaudeFamilies lists the families, the main one first.
func ClaudeFamilies() []ClaudeFamily { return slices.Clone(claudeFamilies[:]) }

// ClaudeFamilyOf is the family of a model name, read as LookupModel reads it (dated
// snapshots, Bedrock and router prefixes, dots for dashes): the family whose name the
// model starts with, else the main family, which is also the family of "" and of names
// that are not Claude's.
func ClaudeFamilyOf(model string) ClaudeFamily {
	return claudeFamilies[claudeFamilyIndex(model)]
}

// IsClaude reports whether a model name, read as LookupModel reads it, is a Claude
// model's.
func IsClaude(model string) bool { return strings.HasPrefix(normalizeModel(model), "claude-") }

func claudeFamilyIndex(model string) int {
	n := normalizeModel(model)
	for i := 1; i < len(claudeFamilies); i++ {
		name := claudeFamilies[i].Name
		if n == name || len(n) > len(name) && strings.HasPrefix(n, name) && !isAlnum(n[len(name)]) {
			return i
		}
	}
	return 0
}

// Claude returns the Claude estimate for a model (see ClaudeFamilyOf). Its Name is
// "estimate": it is the estimate, priced for Claude. It implements ByLiteral.
func Claude(model string) Counter { return claudeCounters[claudeFamilyIndex(model)] }

// ByLiteral is implemented by a counter that counts a JSON string literal as written,
// without decoding it: CountLiteral(lit) == Count(s) for the s that lit decodes to (as
// transcript decodes it). A caller that holds text as literals (every block body of a
// parsed transcript) counts it at the speed of reading it.
type ByLiteral interface {
	Counter
	CountLiteral(lit string) int
}

// ClaudeCounter is the Claude estimate with one family's prices. It holds no state that
// changes, so it is safe for concurrent use, and counting allocates nothing.
type ClaudeCounter struct {
	// ascii is the price of each ASCII character, class the price of each class, both
	// in units of 2^-claudeShift tokens, so a text's price is a sum of integers.
	ascii  [utf8.RuneSelf]int64
	class  [NumClaudeClasses]int64
	name   string // "" for "estimate"
	family int    // the index in claudeFamilies of the family it prices (0 when made of prices given)
}

const claudeShift = 16

// NewClaudeCounter returns a Claude estimate with the given prices (scripts/calibrate
// evaluates a fit with it; Claude returns the fitted ones).
func NewClaudeCounter(coef ClaudeCoefficients) *ClaudeCounter {
	c := &ClaudeCounter{}
	for k, v := range coef {
		c.class[k] = int64(v*(1<<claudeShift) + 0.5)
	}
	for b := range c.ascii {
		c.ascii[b] = c.class[asciiClass(byte(b))]
	}
	return c
}

var claudeCounters = func() (cs [len(claudeFamilies)]*ClaudeCounter) {
	for i := range claudeFamilies {
		cs[i] = NewClaudeCounter(claudeFamilies[i].Coef)
		cs[i].family = i
	}
	return cs
}()

// Name is "estimate", or the name Scaled gave.
func (c *ClaudeCounter) Name() string {
	if c.name == "" {
		return "estimate"
	}
	return c.name
}

// Scaled returns the estimate with every price times r, called name: the estimate
// calibrated on an exact count of one document (the count endpoint's, for --tokenizer
// api), so that its blocks, and what a tier writes in place of some, are counted at the
// document's own rate.
func (c *ClaudeCounter) Scaled(r float64, name string) *ClaudeCounter {
	s := &ClaudeCounter{name: name, family: c.family}
	for k, v := range c.class {
		s.class[k] = int64(float64(v)*r + 0.5)
	}
	for b, v := range c.ascii {
		s.ascii[b] = int64(float64(v)*r + 0.5)
	}
	return s
}

// Count prices every character of text by its class and rounds the sum; a text that is
// not empty costs at least 1 token.
func (c *ClaudeCounter) Count(text string) int { return round(c.price(text), len(text) > 0) }

// CountLiteral counts the text a JSON string literal (quotes included) decodes to,
// reading the literal as written: Count(decoded). Like transcript's decoder, it reads
// what follows a broken escape as nothing and anything that does not start with a quote
// as "".
func (c *ClaudeCounter) CountLiteral(lit string) int {
	if len(lit) < 2 || lit[0] != '"' {
		return 0
	}
	s := lit[1 : len(lit)-1]
	var p int64
	nonEmpty := false
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			p += c.price(s)
			nonEmpty = nonEmpty || s != ""
			break
		}
		p += c.price(s[:i])
		r, n := jsonlit.Unescape(s[i:])
		if n == 0 {
			nonEmpty = nonEmpty || i > 0
			break
		}
		nonEmpty = true
		if r < utf8.RuneSelf {
			p += c.ascii[r]
		} else {
			p += c.class[runeClass(r)]
		}
		s = s[i+n:]
	}
	return round(p, nonEmpty)
}

// ClaudeClasses adds the number of characters of text in each class to n (what the
// prices are fitted on).
func ClaudeClasses(text string, n *[NumClaudeClasses]int) {
	for i := 0; i < len(text); {
		b := text[i]
		if b < utf8.RuneSelf {
			n[asciiClass(b)]++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		n[runeClass(r)]++
		i += size
	}
}

func round(p int64, nonEmpty bool) int {
	n := int((p + 1<<(claudeShift-1)) >> claudeShift)
	if n == 0 && nonEmpty {
		return 1
	}
	return n
}

// price is the unrounded price of text, in units of 2^-claudeShift tokens.
func (c *ClaudeCounter) price(s string) int64 {
	var p int64
	i := 0
	for i < len(s) {
		// Eight ASCII bytes at a time while there are: most text is ASCII.
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&0x8080808080808080 == 0 {
				p += c.ascii[w&0x7f] + c.ascii[w>>8&0x7f] + c.ascii[w>>16&0x7f] + c.ascii[w>>24&0x7f] +
					c.ascii[w>>32&0x7f] + c.ascii[w>>40&0x7f] + c.ascii[w>>48&0x7f] + c.ascii[w>>56&0x7f]
				i += 8
				continue
			}
		}
		b := s[i]
		if b < utf8.RuneSelf {
			p += c.ascii[b]
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		p += c.class[runeClass(r)]
		i += size
	}
	return p
}

func asciiClass(b byte) ClaudeClass {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
		return ClassLetters
	case '0' <= b && b <= '9':
		return ClassDigits
	case b == ' ' || b == '\t':
		return ClassSpaces
	case b == '\n' || b == '\r':
		return ClassNewlines
	}
	return ClassPunct
}

// runeClass is the class of a rune that is not ASCII. A surrogate (from a lone \u escape)
// is written as U+FFFD, so it is ClassOther like U+FFFD.
func runeClass(r rune) ClaudeClass {
	switch {
	case r >= 0x3000 && r < 0xD800:
		return ClassCJK
	case r > 0xFFFF:
		return ClassAstral
	}
	return ClassOther
}
