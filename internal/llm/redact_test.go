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
	// A key given, any shape, goes; URL-encoded too.
	if got := Redact("the key hunter2hunter2 was refused", "hunter2hunter2"); strings.Contains(got, "hunter2") {
		t.Errorf("given key kept: %q", got)
	}
	if got := Redact("GET /v1?k=hunter2%2Fhunter2%2Bx%3D refused", "hunter2/hunter2+x="); strings.Contains(got, "hunter2") {
		t.Errorf("given key, URL-encoded, kept: %q", got)
	}
}

// TestRedactURLEncoded: a server echoing the URL it was sent echoes the key URL-encoded
// (issue 36): the shapes are matched on the text decoded, and what matched goes as written.
func TestRedactURLEncoded(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Incorrect API key provided: sk-ant-api03%2DAbCdEf0123456789xyzXYZ.", "Incorrect API key provided: [redacted]."},
		{"key sk%2Dant%2Dapi03%2dAbCdEf0123456789xyzXYZ rejected", "key [redacted] rejected"},
		{"twice: sk-ant-api03%252DAbCdEf0123456789xyzXYZ", "twice: [redacted]"},
		{"GET /v1/messages?x-api-key%3A%20nokeyshape12345 401", "GET /v1/messages?x-api-key%3A%20[redacted] 401"},
		{"url https://h/v1?key%3Dsk-ant-api03-AbCdEf0123&x=1", "url https://h/v1?key%3D[redacted]&x=1"},
		{"header authorization%3A%20Bearer%20abcdef.ghijkl", "header authorization%3A%20Bearer%20[redacted]"},
		{"api_key=Zx9Qm2Lp7Rt4%2BVw8Ny3Kb6Hs1Jd5Fg0Ac%3D%3D", "api_key=[redacted]"},
		// Percent signs that escape nothing, and escapes of ordinary text, stay as written.
		{"100% done, 50%2 off, %zz", "100% done, 50%2 off, %zz"},
		{"read %2Fvar%2Flib%2Fsome_long_directory_name_here failed", "read %2Fvar%2Flib%2Fsome_long_directory_name_here failed"},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
