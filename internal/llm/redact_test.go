package llm

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const key = "sk-ant-api03-AbCdEf0123456789xyzXYZ"
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: " + key + ".", "Incorrect API key provided: [redacted]."},
		{"Incorrect API key provided: sk-proj-abc1****************wxyz.", "Incorrect API key provided: [redacted]."},
		{"invalid x-api-key: nokeyshape12345", "invalid x-api-key: [redacted]"},
		{`{"authorization": "Bearer abcdef.ghijkl"}`, `{"authorization": "Bearer [redacted]"}`},
		{"token=Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0Ac", "token=[redacted]"},
		{"unknown key Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0Ac rejected", "unknown key [redacted] rejected"},
		// Ordinary text stays: a hex digest, a path, a long word, short numbers.
		{"blob 0123456789abcdef0123456789abcdef0123 at /var/lib/some_long_directory_name_here", "blob 0123456789abcdef0123456789abcdef0123 at /var/lib/some_long_directory_name_here"},
		{"HTTP 529: Overloaded", "HTTP 529: Overloaded"},
		{"prompt is too long: 210000 tokens > 200000 maximum", "prompt is too long: 210000 tokens > 200000 maximum"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A key of any shape, given, goes.
	if got := Redact("the key hunter2hunter2 was refused", "hunter2hunter2"); strings.Contains(got, "hunter2") {
		t.Errorf("given key kept: %q", got)
	}
}
