package budget

import (
	"strings"
	"testing"
)

func TestLimitParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Limit
		err  string
	}{
		{"50000", Chars(50000), ""},
		{"50_000", Chars(50000), ""},
		{"50000c", Chars(50000), ""},
		{"50000 chars", Chars(50000), ""},
		{"50000 characters", Chars(50000), ""},
		{"30KB", Chars(30000), ""},
		{"30kb", Chars(30000), ""},
		{"1.5MB", Chars(1500000), ""},
		{"0", Chars(0), ""},
		{"8000tok", Toks(8000), ""},
		{"8000 tokens", Toks(8000), ""},
		{"8k tokens", Toks(8000), ""},
		{"8ktok", Toks(8000), ""},
		{"8K Tokens", Toks(8000), ""},
		{"1.5k tokens", Toks(1500), ""},
		{"1 token", Toks(1), ""},
		{"8k", Limit{}, `invalid limit "8k": unit "k" is ambiguous: write 8KB for characters or 8k tokens for tokens`},
		{"1M", Limit{}, "ambiguous"},
		{"30KiB", Limit{}, `unknown unit "KiB"`},
		{"1.5", Limit{}, "not a whole number"},
		{"1.0005KB", Limit{}, "not a whole number"},
		{"-5", Limit{}, "not a number"},
		{"", Limit{}, "not a number"},
		{"tokens", Limit{}, "not a number"},
		{"99999999999", Limit{}, "too large"},
	} {
		var l Limit
		err := l.UnmarshalText([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		case tc.err == "" && l != tc.want:
			t.Errorf("%q = %+v, want %+v", tc.in, l, tc.want)
		}
		if tc.err != "" {
			continue
		}
		var back Limit
		if err := back.UnmarshalText([]byte(l.String())); err != nil || back != l {
			t.Errorf("%q: String %q does not parse back (%v)", tc.in, l.String(), err)
		}
	}
}

func TestLimitDescribe(t *testing.T) {
	for l, want := range map[Limit]string{
		Chars(30000): "30,000 characters",
		Toks(8000):   "8,000 tokens",
		Toks(1):      "1 token",
		Chars(0):     "no limit",
	} {
		if got := l.describe(); got != want {
			t.Errorf("%+v: %q, want %q", l, got, want)
		}
	}
	if got := Chars(15000).scale(2); got != Chars(30000) {
		t.Errorf("scale: %+v", got)
	}
	if got := Chars(0).scale(2); got != Chars(0) {
		t.Errorf("scale of no limit: %+v", got)
	}
}
