package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
)

// Count is a number of tokens: "200000", "200k", "1.5M", "8K". The suffixes
// k and M (either case) are decimal: 1k = 1,000 and 1M = 1,000,000, which is
// how context windows are quoted ("200k", "1M"). The result must be whole.
type Count int

func countUnit(_, u string) (int64, string) {
	switch u {
	case "":
		return 1, ""
	case "k":
		return 1e3, ""
	case "m":
		return 1e6, ""
	}
	return 0, ""
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Count) UnmarshalText(b []byte) error {
	n, why := human.ParseScaled(string(b), math.MaxInt, countUnit)
	if why != "" {
		return fmt.Errorf("invalid token count %q: %s (want e.g. 200000, 200k or 1.5M)", b, why)
	}
	*c = Count(n)
	return nil
}

// String returns the count as a plain integer.
func (c Count) String() string { return strconv.Itoa(int(c)) }

// Int returns c as an int.
func (c Count) Int() int { return int(c) }

// Size is a number of bytes: "30000", "30KB", "30K", "1MB", "1MiB". Units
// are case-insensitive. KB, MB, GB (and the bare K, M, G) are decimal SI
// units — 30KB = 30,000 bytes — matching DESIGN's "default 30 KB" and the
// decimal token counts; KiB, MiB, GiB are binary (1KiB = 1,024 bytes). B
// alone, or no unit, means bytes. The result must be whole.
type Size int64

func sizeUnit(_, u string) (int64, string) {
	switch u {
	case "", "b":
		return 1, ""
	case "k", "kb":
		return 1e3, ""
	case "m", "mb":
		return 1e6, ""
	case "g", "gb":
		return 1e9, ""
	case "ki", "kib":
		return 1 << 10, ""
	case "mi", "mib":
		return 1 << 20, ""
	case "gi", "gib":
		return 1 << 30, ""
	}
	return 0, ""
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Size) UnmarshalText(b []byte) error {
	n, why := human.ParseScaled(string(b), math.MaxInt, sizeUnit)
	if why != "" {
		return fmt.Errorf("invalid size %q: %s (want e.g. 30000, 30KB or 1MiB)", b, why)
	}
	*s = Size(n)
	return nil
}

// String returns the size in the largest unit that divides it exactly
// (decimal units first), so it reads well and parses back to the same value.
func (s Size) String() string {
	if s != 0 {
		for _, u := range []struct {
			name string
			n    Size
		}{{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if s%u.n == 0 {
				return strconv.FormatInt(int64(s/u.n), 10) + u.name
			}
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// Int returns s as an int.
func (s Size) Int() int { return int(s) }

// Percent is a fraction between 0 and 1 written as a percentage or a
// fraction: "85%" and "0.85" are both 0.85. A bare number above 1 is read as
// a percentage ("85" = 85%); at or below 1 it is a fraction ("1" = 100%,
// "0.5" = 50%), so write "0.5%" for half a percent. Values above 100% are
// rejected, which keeps the bare-number rule unambiguous.
type Percent float64

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Percent) UnmarshalText(b []byte) error {
	num, unit, ok := human.SplitNumber(strings.TrimSpace(string(b)))
	if !ok || unit != "" && unit != "%" {
		return fmt.Errorf("invalid percentage %q: not a number (want e.g. 85%%, 0.85 or 85)", b)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return fmt.Errorf("invalid percentage %q: %w", b, err)
	}
	if unit == "%" || v > 1 {
		v /= 100
	}
	if v > 1 {
		return fmt.Errorf("invalid percentage %q: above 100%%", b)
	}
	*p = Percent(v)
	return nil
}

// String returns the value as a percentage, e.g. "85%".
func (p Percent) String() string {
	v := math.Round(float64(p)*100*1e9) / 1e9
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

// Fraction returns p as a float64 between 0 and 1.
func (p Percent) Fraction() float64 { return float64(p) }

// OptionalPercent is a percentage flag that knows whether it was given, for a default
// that depends on another flag (a target below a trigger). (A *Percent would say so too,
// but the runner cannot read a pointer flag from the environment.)
type OptionalPercent struct {
	Percent
	set bool
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *OptionalPercent) UnmarshalText(b []byte) error {
	if err := p.Percent.UnmarshalText(b); err != nil {
		return err
	}
	p.set = true
	return nil
}

// TriggerTarget reads a tier's --trigger and --target: the utilization it acts above and
// the one it brings the document down to, by default 10 points below the trigger. A
// target above the trigger is a usage error.
func TriggerTarget(trigger Percent, target OptionalPercent) (at, to float64, err error) {
	at, to = trigger.Fraction(), max(trigger.Fraction()-0.10, 0)
	if target.set {
		to = target.Fraction()
		if to > at {
			return at, to, Usagef("--target %s is above --trigger %s", target, trigger)
		}
	}
	return at, to, nil
}

// Amount is a number of tokens ("20000", "20k") or, with a percent sign, a share of the
// effective window ("5%"): a floor that should grow with the window unless given in tokens.
type Amount struct {
	Tokens int
	Share  float64 // of the effective window, when written with "%"
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Amount) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasSuffix(s, "%") {
		var p Percent
		if err := p.UnmarshalText([]byte(s)); err != nil {
			return err
		}
		*a = Amount{Share: p.Fraction()}
		return nil
	}
	var c Count
	if err := c.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	*a = Amount{Tokens: c.Int()}
	return nil
}

// String is the amount as written: tokens, or a percentage.
func (a Amount) String() string {
	if a.Share > 0 {
		return Percent(a.Share).String()
	}
	return strconv.Itoa(a.Tokens)
}
