package human

import (
	"fmt"
	"math/big"
	"strings"
)

// SplitNumber splits "1.5 MiB" into its decimal number ("1.5") and what follows it
// after any white space ("MiB"), and reports false unless s is such a number (digits
// with at most one point and at least one digit) followed by letters and '%' only:
// exponents, signs and hex are not numbers here, so a value means what it looks like.
// It is what the regular expression ^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z%]*)$
// matches (TestSplitNumberMatchesRegexp), written out because compiling that, in every
// process that parses a flag's default, cost about half a millisecond.
func SplitNumber(s string) (num, unit string, ok bool) {
	i, digits := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return "", "", false
	}
	num = s[:i]
	for i < len(s) && strings.IndexByte(" \t\n\f\r", s[i]) >= 0 {
		i++
	}
	unit = s[i:]
	for k := 0; k < len(unit); k++ {
		if c := unit[k] | 0x20; (c < 'a' || c > 'z') && unit[k] != '%' {
			return "", "", false
		}
	}
	return num, unit, true
}

// ParseScaled parses s, a non-negative decimal number and a unit, as the whole number
// the unit scales it to, at most max; why says what is wrong when it cannot. unit gets
// the number as written and the unit in lower case, and returns the unit's factor, or 0
// and why it refuses the unit ("" for an unknown unit). Underscores group digits ("200_000")
// and spaces may stand between number and unit; exponents, signs and hex are not accepted,
// so a value means what it looks like. Every number-with-a-unit flag parses with it
// (cli's Count and Size, ctx-budget's Limit).
func ParseScaled(s string, max int64, unit func(num, unit string) (int64, string)) (n int64, why string) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	num, u, ok := SplitNumber(t)
	if !ok {
		return 0, "not a number"
	}
	mult, why := unit(num, strings.ToLower(u))
	switch {
	case why != "":
		return 0, why
	case mult == 0:
		return 0, fmt.Sprintf("unknown unit %q", u)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, "not a number"
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, "not a whole number"
	}
	if v := r.Num(); !v.IsInt64() || v.Int64() > max {
		return 0, "too large"
	}
	return r.Num().Int64(), ""
}
