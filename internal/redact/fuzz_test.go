package redact

import (
	"encoding/json"
	"testing"
)

// FuzzRedact: redacting never panics, is idempotent, and leaves valid JSON valid (the
// text itself and the text as a JSON string literal), seeded from the planted set.
func FuzzRedact(f *testing.F) {
	for i, c := range readPlanted(f) {
		if i%7 == 0 {
			f.Add(c.Text)
		}
	}
	r := New()
	f.Fuzz(func(t *testing.T, s string) {
		once := r.String(s)
		if twice := r.String(once); twice != once {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", s, once, twice)
		}
		if json.Valid([]byte(s)) && !json.Valid([]byte(once)) {
			t.Fatalf("valid JSON made invalid:\n%q\n%q", s, once)
		}
		lit, _ := json.Marshal(s)
		if red := r.String(string(lit)); !json.Valid([]byte(red)) {
			t.Fatalf("a JSON string made invalid:\n%s\n%s", lit, red)
		}
	})
}
