package llm

import (
	"bytes"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces a secret in every message and file ctxkit writes.
const Redacted = "[redacted]"

// keyShapes are the spellings of credentials a server may echo in an error ("Incorrect API
// key provided: sk-...") or a proxy may put in a message: OpenAI and Anthropic keys
// (sk-..., sk-ant-..., sk-proj-...), bearer tokens (the token, group 1), and a
// "key"/"token"/"authorization" label followed by a value (group 3). Like longToken,
// compiled when first needed: every tool links this package, and few runs redact anything.
var keyShapes = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`sk-[A-Za-z0-9_\-*]{6,}`),
		regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=\-*]{6,})`),
		regexp.MustCompile(`(?i)\b(x-api-key|api[_-]?key|access[_-]?token|authorization|token|secret)(["']?\s*[:=]\s*["']?)([A-Za-z0-9._~+/=\-*]{6,})`),
	}
})

// longToken is a run of key characters long enough to be a credential of an unknown
// provider; it is redacted when it mixes letters and digits (high entropy), which words,
// numbers and paths in an error message do not.
var longToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9_\-+/=]{32,}`) })

// Redact returns s with each of keys (as given) and anything shaped like a key replaced
// by Redacted. Keys shorter than 8 bytes are not searched for as such (they would match
// ordinary words); the shapes still apply.
//
// A server that echoes a URL it was sent echoes the key URL-encoded (sk-ant-api03%2D...,
// x-api-key%3A%20..., key%3Dsk-...): the matching is done on s with its %XX escapes
// decoded (twice encoded too), and what matched is redacted in s as written, escapes and
// all.
func Redact(s string, keys ...string) string {
	d, off := unescaped(s)
	spans := secrets(d, keys)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		start, end := sp[0], sp[1]
		if off != nil {
			start, end = off[start], off[end]
		}
		b.WriteString(s[at:start])
		b.WriteString(Redacted)
		at = end
	}
	b.WriteString(s[at:])
	return b.String()
}

// secrets finds what Redact replaces in s: byte spans, in order, not overlapping. Each
// matcher runs after the ones before it as if their finds were replaced already (blanked
// in a copy of s: a separator no shape matches), as replacing them one after the other
// would: a label's value taken as a key is not a long token with its label too.
func secrets(s string, keys []string) [][2]int {
	w := []byte(s)
	var spans [][2]int
	mark := func(start, end int) {
		spans = append(spans, [2]int{start, end})
		for i := start; i < end; i++ {
			w[i] = 0
		}
	}
	for _, k := range keys {
		if k = strings.TrimSpace(k); len(k) >= 8 {
			for at := 0; ; {
				i := bytes.Index(w[at:], []byte(k))
				if i < 0 {
					break
				}
				mark(at+i, at+i+len(k))
				at += i + len(k)
			}
		}
	}
	shapes := keyShapes()
	for _, m := range shapes[0].FindAllIndex(w, -1) {
		mark(m[0], m[1])
	}
	for _, m := range shapes[1].FindAllSubmatchIndex(w, -1) {
		mark(m[2], m[3]) // the token, "Bearer " kept
	}
	for _, m := range shapes[2].FindAllSubmatchIndex(w, -1) {
		if v := w[m[6]:m[7]]; !bytes.EqualFold(v, []byte("bearer")) { // ("Authorization: Bearer ...": above)
			mark(m[6], m[7]) // the value, the label kept
		}
	}
	for _, m := range longToken().FindAllIndex(w, -1) {
		if looksRandom(string(w[m[0]:m[1]])) {
			mark(m[0], m[1])
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	return spans
}

// unescaped is s with its URL escapes (%XX) decoded, up to three times over (a value
// encoded twice: %252D), and off, where each of its bytes starts in s, len(s) last; off is
// nil when s has no escape. A "+" is left as it is: base64 keys hold them.
func unescaped(s string) (string, []int) {
	var off []int
	d := s
	for range 3 {
		if !hasEscape(d) {
			break
		}
		out := make([]byte, 0, len(d))
		next := make([]int, 0, len(d)+1)
		for i := 0; i < len(d); {
			from := i
			if off != nil {
				from = off[i]
			}
			next = append(next, from)
			if d[i] == '%' && i+2 < len(d) && isHex(d[i+1]) && isHex(d[i+2]) {
				out = append(out, unhex(d[i+1])<<4|unhex(d[i+2]))
				i += 3
				continue
			}
			out = append(out, d[i])
			i++
		}
		end := len(s)
		next = append(next, end)
		d, off = string(out), next
	}
	return d, off
}

func hasEscape(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0 && i+2 < len(s); {
		if isHex(s[i+1]) && isHex(s[i+2]) {
			return true
		}
		j := strings.IndexByte(s[i+1:], '%')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
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
