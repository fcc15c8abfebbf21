package cli

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{"200000", 200000, ""},
		{"200k", 200000, ""},
		{"200K", 200000, ""},
		{"8K", 8000, ""},
		{"1.5M", 1500000, ""},
		{"1m", 1000000, ""},
		{"200_000", 200000, ""},
		{" 0 ", 0, ""},
		{".5k", 500, ""},
		{"0.1k", 100, ""},
		{"1.5", 0, `invalid token count "1.5": not a whole number`},
		{"1.0005k", 0, "not a whole number"},
		{"-5", 0, `invalid token count "-5": not a number`},
		{"", 0, `invalid token count "": not a number`},
		{"1e6", 0, `invalid token count "1e6": not a number`},
		{"5 tokens", 0, `unknown unit "tokens"`},
		{"200KB", 0, `unknown unit "KB"`},
		{"99999999999999999999", 0, "too large"},
	} {
		var c Count
		err := c.UnmarshalText([]byte(tc.in))
		checkParse(t, "Count", tc.in, err, tc.err)
		if tc.err == "" && int(c) != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.in, c, tc.want)
		}
		if tc.err == "" {
			var back Count
			if err := back.UnmarshalText([]byte(c.String())); err != nil || back != c {
				t.Errorf("Count %q: String %q does not round-trip", tc.in, c.String())
			}
		}
	}
}

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   int64
		str    string
		errSub string
	}{
		{"30000", 30000, "30KB", ""},
		{"30KB", 30000, "30KB", ""},
		{"30kb", 30000, "30KB", ""},
		{"30K", 30000, "30KB", ""},
		{"30 KB", 30000, "30KB", ""},
		{"1MB", 1000000, "1MB", ""},
		{"1MiB", 1 << 20, "1MiB", ""},
		{"1KiB", 1024, "1KiB", ""},
		{"1.5KiB", 1536, "1536", ""},
		{"2GB", 2e9, "2GB", ""},
		{"1GiB", 1 << 30, "1GiB", ""},
		{"100B", 100, "100", ""},
		{"0", 0, "0", ""},
		{"1.0001KB", 0, "", `invalid size "1.0001KB": not a whole number`},
		{"1XB", 0, "", `invalid size "1XB": unknown unit "XB"`},
		{"-1", 0, "", "not a number"},
		{"KB", 0, "", "not a number"},
	} {
		var s Size
		err := s.UnmarshalText([]byte(tc.in))
		checkParse(t, "Size", tc.in, err, tc.errSub)
		if tc.errSub != "" {
			continue
		}
		if int64(s) != tc.want || s.String() != tc.str {
			t.Errorf("Size(%q) = %d %q, want %d %q", tc.in, s, s.String(), tc.want, tc.str)
		}
		var back Size
		if err := back.UnmarshalText([]byte(s.String())); err != nil || back != s {
			t.Errorf("Size %q: String %q does not round-trip", tc.in, s.String())
		}
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   float64
		str    string
		errSub string
	}{
		{"85%", 0.85, "85%", ""},
		{"0.85", 0.85, "85%", ""},
		{"85", 0.85, "85%", ""},
		{"100%", 1, "100%", ""},
		{"1", 1, "100%", ""},
		{"0.5", 0.5, "50%", ""},
		{"0.5%", 0.005, "0.5%", ""},
		{"12.5 %", 0.125, "12.5%", ""},
		{"0", 0, "0%", ""},
		{"150%", 0, "", `invalid percentage "150%": above 100%`},
		{"101", 0, "", "above 100%"},
		{"-5%", 0, "", `invalid percentage "-5%": not a number`},
		{"NaN", 0, "", "not a number"},
		{"inf", 0, "", "not a number"},
		{"85%%", 0, "", "not a number"},
		{"", 0, "", "not a number"},
	} {
		var p Percent
		err := p.UnmarshalText([]byte(tc.in))
		checkParse(t, "Percent", tc.in, err, tc.errSub)
		if tc.errSub != "" {
			continue
		}
		if float64(p) != tc.want || p.String() != tc.str {
			t.Errorf("Percent(%q) = %v %q, want %v %q", tc.in, float64(p), p.String(), tc.want, tc.str)
		}
	}
}

func checkParse(t *testing.T, typ, in string, err error, wantSub string) {
	t.Helper()
	switch {
	case wantSub == "" && err != nil:
		t.Errorf("%s(%q): unexpected error %v", typ, in, err)
	case wantSub != "" && err == nil:
		t.Errorf("%s(%q): no error, want one containing %q", typ, in, wantSub)
	case wantSub != "" && !strings.Contains(err.Error(), wantSub):
		t.Errorf("%s(%q): error %q lacks %q", typ, in, err, wantSub)
	}
}

func TestErrorHelpers(t *testing.T) {
	e := Usagef("bad %q", "x")
	h := WithHint(e, "try y")
	if e.hint != "" || h.hint != "try y" || h.Code != ExitUsage || h.Error() != `bad "x"` {
		t.Errorf("WithHint: %+v %+v", e, h)
	}
	for _, tc := range []struct {
		e    *Error
		code int
	}{
		{Usagef("u"), ExitUsage},
		{InputError(nil), ExitInput},
		{RuntimeError(nil), ExitRuntime},
		{CheckFailed(nil), ExitCheck},
	} {
		if tc.e.Code != tc.code {
			t.Errorf("%v: code %d, want %d", tc.e, tc.e.Code, tc.code)
		}
	}
}
