// Package redact is ctxkit's one home for finding secrets in text and replacing them by a
// typed marker ("[redacted: aws-access-key]"): the credential formats it knows
// (detectors.go), secrets named by what they are assigned to (names.go), the patterns a
// user adds (patterns.go), and the keys a caller knows (an API key it was given).
//
// It is applied wherever text leaves the conversation for somewhere else (DESIGN §4.11):
// what the offload store keeps, a summary, what a model backend receives, the proxy's log,
// an error message. The conversation itself is redacted only when asked (--redact).
//
// One pass over the text finds every literal the matchers need (a key's prefix, a secret
// name's word); each detector's RE2 expression (linear, no backtracking) then runs
// anchored in a bounded window around each of its literals, and names are read by a scan,
// so the cost is linear in the text and text without any secret costs that one pass.
// A marker never matches a detector, so redacting twice gives what redacting once gave
// (FuzzRedact), and a marker holds no character JSON escapes, so text redacted inside a
// JSON string literal leaves the literal valid.
//
// The rules are tuned on the training half of a planted set (testdata/redact, made by
// scripts/gendoc -planted; TestPlanted), whose test half gives the figures published.
package redact

import (
	"bytes"
	"slices"
	"strings"
	"unsafe"
)

// Marker is the text that replaces a secret of the given kind.
func Marker(kind string) string { return "[redacted: " + kind + "]" }

// markerPrefix starts every marker: a value that starts with it is already redacted.
const markerPrefix = "[redacted"

// Match is one secret found: its byte span in the text and its kind (the marker's word).
type Match struct {
	Start, End int
	Kind       string
}

// Redactor finds and replaces secrets. A nil *Redactor redacts nothing, so a caller holds
// one whether or not redaction is on; the zero value is not useful: use New.
type Redactor struct {
	extra []Pattern
	keys  []string
	loose bool
}

// New returns a redactor with the built-in detectors and the user's patterns.
func New(extra ...Pattern) *Redactor {
	return &Redactor{extra: extra}
}

// WithKeys returns a copy of r that also redacts each of keys as written (a key the caller
// was given: a server may echo it in any shape). Keys shorter than 8 bytes are ignored:
// they would match ordinary words. On a nil r it returns a redactor of the built-in
// detectors and keys: a caller that holds a key never writes it.
func (r *Redactor) WithKeys(keys ...string) *Redactor {
	c := &Redactor{}
	if r != nil {
		*c = *r
	}
	c.keys = append([]string(nil), c.keys...)
	for _, k := range keys {
		if k = strings.TrimSpace(k); len(k) >= 8 {
			c.keys = append(c.keys, k)
		}
	}
	return c
}

// Loose returns a copy of r that also takes any long run of key characters mixing lower
// and upper case letters and digits for a secret of an unknown provider (kind "token").
// It is for text where nothing else looks like that: an error message, a log line. Data
// holds such runs (base64 images, integrity hashes), so documents and stored results are
// redacted without it.
func (r *Redactor) Loose() *Redactor {
	c := r.WithKeys()
	c.loose = true
	return c
}

// String returns s with every secret replaced by its marker; s itself when there is none.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	return Apply(s, r.Find(s))
}

// Apply returns s with the secrets ms (Find's matches in s) replaced by their markers: what
// String gives, for a caller that found them before; s itself when ms is empty.
func Apply(s string, ms []Match) string {
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, m := range ms {
		b.WriteString(s[at:m.Start])
		b.WriteString(Marker(m.Kind))
		at = m.End
	}
	b.WriteString(s[at:])
	return b.String()
}

// Bytes is String for a byte slice; it returns b itself when there is no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	s := string(b)
	if out := r.String(s); out != s {
		return []byte(out)
	}
	return b
}

// Find returns the secrets of s: byte spans in order, not overlapping.
//
// A server that echoes a URL it was sent echoes a key URL-encoded (sk-ant-api03%2D...):
// matching is done on s with its %XX escapes decoded (twice encoded too), and each span is
// mapped back to s as written, escapes and all.
func (r *Redactor) Find(s string) []Match {
	if r == nil || s == "" {
		return nil
	}
	d, off := unescaped(s)
	ms := r.find(d)
	if off != nil {
		for i := range ms {
			ms[i].Start, ms[i].End = off[ms[i].Start], off[ms[i].End]
		}
	}
	return ms
}

// find runs every matcher over s. Each runs on a copy of s in which what the ones before it
// found is blanked (NUL bytes, which no matcher takes), so a value taken by a typed
// detector is not taken again with its label by a name rule.
//
// The copy is made when a first find is blanked: most texts have none, and are only read.
// The keys, the user's patterns and loose matching read the text all at once and mark after
// it: with them the copy is made first.
func (r *Redactor) find(s string) []Match {
	t := &text{w: unsafe.Slice(unsafe.StringData(s), len(s))} // read only until t.own
	if len(r.keys) > 0 || len(r.extra) > 0 || r.loose {
		t.w, t.own = []byte(s), true
	}
	var ms []Match
	mark := func(start, end int, kind string) {
		if start >= end || escapedAt(s, start) {
			return
		}
		w := t.w
		for i := start; i < end; i++ {
			if w[i] == 0 { // overlaps an earlier find: keep the earlier one
				return
			}
		}
		ms = append(ms, Match{start, end, kind})
		if !t.own {
			t.w, t.own = []byte(s), true
		}
		clear(t.w[start:end])
	}
	w := t.w
	for _, k := range r.keys {
		for at := 0; ; {
			i := bytes.Index(w[at:], []byte(k))
			if i < 0 {
				break
			}
			mark(at+i, at+i+len(k), "api-key")
			at += i + len(k)
		}
	}
	for _, p := range r.extra {
		p.find(w, mark)
	}
	hits, names := scan(t.w)
	for i, d := range detectors() {
		d.find(t, hits[i], mark)
	}
	findNamed(t, names, mark)
	if r.loose {
		findLoose(t.w, mark)
	}
	sortMatches(ms)
	return ms
}

// escapedAt reports whether the byte at i is the letter of a backslash escape (an odd run
// of backslashes before it, and a letter JSON escapes with: \n, \t, \u...): a secret
// does not start there. In a JSON string literal "\npm_..." is a line break and "pm_...";
// a match from its "n" would leave the backslash to escape the marker's "[", which no
// longer parses.
func escapedAt(s string, i int) bool {
	if i == 0 || !strings.ContainsRune(`"\/bfnrtu`, rune(s[i])) {
		return false
	}
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int { return a.Start - b.Start })
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
		next = append(next, len(s))
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

// Userinfo returns s with the user information of its first URL (user:password@, or a
// token given as the user) replaced by REDACTED: for error text that quotes a URL the user
// configured (ctx-proxy's --upstream), where even the user name is the user's business.
func Userinfo(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.IndexByte(s[i+3:], '@'); j >= 0 && !strings.ContainsAny(s[i+3:i+3+j], "/ ") {
			return s[:i+3] + "REDACTED" + s[i+3+j:]
		}
	}
	return s
}
