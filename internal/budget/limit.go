package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
)

// Limit is the most a tool result may hold: N characters (Unicode code points of the text
// the model reads) or, when Tokens is set, N tokens as the run's counter measures them.
// Zero means no limit.
//
// Its text form is a number with an optional unit, case-insensitive, spaces and
// underscores ignored:
//
//	50000, 50000c, 50000 chars    characters
//	30KB, 1.5MB                   thousands (millions) of characters, decimal
//	8000tok, 8k tokens, 8ktok     tokens; k and M scale them (1k = 1,000)
//
// A bare "8k" is refused as ambiguous: write 8KB for characters or 8k tokens for tokens.
type Limit struct {
	N      int
	Tokens bool
}

// Chars returns a limit of n characters.
func Chars(n int) Limit { return Limit{N: n} }

// Toks returns a limit of n tokens.
func Toks(n int) Limit { return Limit{N: n, Tokens: true} }

// limitUnit maps a unit to its multiplier and whether it counts tokens.
func limitUnit(num, u string) (mult int64, tokens bool, why string) {
	switch u {
	case "", "c", "ch", "char", "chars", "character", "characters":
		return 1, false, ""
	case "kb":
		return 1e3, false, ""
	case "mb":
		return 1e6, false, ""
	case "t", "tok", "toks", "token", "tokens":
		return 1, true, ""
	case "kt", "ktok", "ktoks", "ktoken", "ktokens":
		return 1e3, true, ""
	case "mt", "mtok", "mtoks", "mtoken", "mtokens":
		return 1e6, true, ""
	case "k", "m":
		return 0, false, fmt.Sprintf("unit %q is ambiguous: write %s%sB for characters or %s%s tokens for tokens", u, num, strings.ToUpper(u), num, u)
	}
	return 0, false, ""
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Limit) UnmarshalText(b []byte) error {
	// Spaces go anywhere ("8 k tokens"), so they go before the number is read.
	s := strings.NewReplacer(" ", "", "\t", "").Replace(string(b))
	tokens := false
	n, why := human.ParseScaled(s, math.MaxInt32, func(num, u string) (int64, string) {
		mult, tok, why := limitUnit(num, u)
		tokens = tok
		return mult, why
	})
	if why != "" {
		return fmt.Errorf("invalid limit %q: %s (want e.g. 30000, 30KB or 8k tokens)", b, why)
	}
	*l = Limit{N: int(n), Tokens: tokens}
	return nil
}

// String writes the limit so that it parses back: "30000" or "8000 tokens".
func (l Limit) String() string {
	if l.Tokens {
		return strconv.Itoa(l.N) + " tokens"
	}
	return strconv.Itoa(l.N)
}

// describe is the limit for people: "30,000 characters", "8,000 tokens", "no limit".
func (l Limit) describe() string {
	switch {
	case l.N == 0:
		return "no limit"
	case l.Tokens:
		return plural(l.N, "token")
	}
	return plural(l.N, "character")
}

// scale multiplies the limit by f, rounding down, keeping a set limit at least 1.
func (l Limit) scale(f float64) Limit {
	if l.N == 0 || f == 1 {
		return l
	}
	n := int(math.Min(float64(l.N)*f, math.MaxInt32))
	return Limit{N: max(n, 1), Tokens: l.Tokens}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return human.Thousands(n) + " " + unit + "s"
}
