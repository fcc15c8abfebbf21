package llm

import (
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces a secret in every message and file ctxkit writes.
const Redacted = "[redacted]"

// keyShapes are the spellings of credentials a server may echo in an error ("Incorrect API
// key provided: sk-...") or a proxy may put in a message: OpenAI and Anthropic keys
// (sk-..., sk-ant-..., sk-proj-...), bearer tokens, and a "key"/"token"/"authorization"
// label followed by a value. Like longToken, compiled when first needed: every tool links
// this package, and few runs redact anything.
var keyShapes = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`sk-[A-Za-z0-9_\-*]{6,}`),
		regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=\-*]{6,}`),
		regexp.MustCompile(`(?i)\b(x-api-key|api[_-]?key|access[_-]?token|authorization|token|secret)(["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=\-*]{6,}`),
	}
})

// longToken is a run of key characters long enough to be a credential of an unknown
// provider; it is redacted when it mixes letters and digits (high entropy), which words,
// numbers and paths in an error message do not.
var longToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9_\-+/=]{32,}`) })

// Redact returns s with each of keys (as given) and anything shaped like a key replaced
// by Redacted. Keys shorter than 8 bytes are not searched for as such (they would match
// ordinary words); the shapes still apply.
func Redact(s string, keys ...string) string {
	for _, k := range keys {
		if k = strings.TrimSpace(k); len(k) >= 8 {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	shapes := keyShapes()
	s = shapes[0].ReplaceAllString(s, Redacted)
	s = shapes[1].ReplaceAllString(s, "Bearer "+Redacted)
	s = shapes[2].ReplaceAllStringFunc(s, func(m string) string {
		sub := shapes[2].FindStringSubmatch(m)
		if v := m[len(sub[1])+len(sub[2]):]; strings.EqualFold(v, "bearer") {
			return m // "Authorization: Bearer ...", redacted above
		}
		return sub[1] + sub[2] + Redacted
	})
	return longToken().ReplaceAllStringFunc(s, func(tok string) string {
		if looksRandom(tok) {
			return Redacted
		}
		return tok
	})
}

// looksRandom reports whether tok mixes digits with lower and upper case letters, as
// generated keys do and hex digests, paths and words do not all at once.
func looksRandom(tok string) bool {
	var lower, upper, digit bool
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	return lower && upper && digit
}
