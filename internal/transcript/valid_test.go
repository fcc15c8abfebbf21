package transcript

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{ }`, `"a"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`,
	`"\x"`, `"\/\b\f\n\r\t"`, "\"a\tb\"", "\"\x7f\"", "\"\xff\xfe\"", `0`, `-0`, `-`, `01`, `1.`, `1.5`,
	`.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.5e-3`, `12345678901234567890`, `true`, `tru`, `false`, `null`,
	`nul`, `truex`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{"a":1 "b":2}`,
	`{"a":{"b":[1,{"c":null}]}}`, `{1:2}`, `{"a":1}}`, `[[[]]]`, `[[[]]`, "{\"a\":\"b\"}\n", "\r\n\t{}\t",
	`{"a":"b"} x`, `"abcdefgh"`, `"abcdefghijklmnop"`, `"abcdefg\"hij"`, "\"abcdefghij\x01kl\"",
	`"abcdefgh\\ijklmnopq"`, `"0123456789abcdef0123456789abcdef\"`, `{"k":"` + strings.Repeat("é✓ab", 40) + `"}`,
}

// TestValidMatchesGjson: Valid says what gjson.Valid says, and ValidValue takes the value
// a string begins with as Valid would.
func TestValidMatchesGjson(t *testing.T) {
	for _, s := range validCases {
		checkValid(t, s)
	}
}

// FuzzValidMatchesGjson: the same, on any input.
func FuzzValidMatchesGjson(f *testing.F) {
	for _, s := range validCases {
		f.Add(s)
	}
	f.Fuzz(checkValid)
}

// checkValid holds Valid and ValidValue to gjson.Valid on s.
func checkValid(t *testing.T, s string) {
	if got, want := Valid(s), gjson.Valid(s); got != want {
		t.Errorf("Valid(%q) = %v, gjson.Valid says %v", s, got, want)
	}
	n, ok := ValidValue(s)
	if ok && !gjson.Valid(s[:n]) {
		t.Errorf("ValidValue(%q) takes %q, which gjson.Valid refuses", s, s[:n])
	}
	if s == strings.TrimLeft(s, " \t\r\n") && Valid(s) != (ok && strings.Trim(s[n:], " \t\r\n") == "") {
		t.Errorf("ValidValue(%q) = %d, %v; Valid says %v", s, n, ok, Valid(s))
	}
}

func BenchmarkValid(b *testing.B) {
	line := `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"` +
		strings.Repeat(`line of output with some \"quotes\" and a tab\t and more text here\n`, 2000) + `"}}`
	b.SetBytes(int64(len(line)))
	for _, v := range []struct {
		name  string
		valid func(string) bool
	}{{"transcript", Valid}, {"gjson", gjson.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				if !v.valid(line) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
