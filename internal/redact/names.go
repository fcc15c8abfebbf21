package redact

import (
	"bytes"
	"math"
	"strings"
)

// Secrets named by what they are assigned to: `.env` lines (DB_PASSWORD=..., export
// GITHUB_TOKEN=...), JSON and YAML fields ("api_key": "...", client_secret: ...), code
// (password := "...", apiKey = '...'), in plain text or inside a JSON string (quotes
// escaped). Whether a value is taken depends on how strongly its name says secret and
// on the value:
//
//   - a password or secret name takes any value that is not a placeholder;
//   - a token, key or credential name in a .env line (upper case, "=") takes any value of
//     8 characters or more that is not a number or a placeholder;
//   - elsewhere a token, key or credential name takes only a high-entropy value: a field
//     named "key" or "token_type" holds ordinary words.
//
// A name whose last word says it holds something else (_ID, _PATH, _URL, _TTL,
// max_tokens...) is no secret's name.

var nameWords = []string{"secret", "token", "pass", "pwd", "key", "auth", "credential"}

// findNamed finds each name that holds one of nameWords (hits: where they occur, in
// order), reads the assignment after it (an optional closing quote, escaped or not; :=,
// =>, : or =; a double-quoted, single-quoted or bare value) and marks the value when the
// rules above take it. It is a scan, not an expression: names are everywhere in code and
// JSON.
func findNamed(t *text, hits []int, mark func(start, end int, kind string)) {
	w := t.w
	n := len(w)
	done := 0
	for _, p := range hits {
		if p < done {
			continue // inside a name already read
		}
		ns, ne := p, p
		for ns > 0 && isNameChar(w[ns-1]) {
			ns--
		}
		for ne < n && isNameChar(w[ne]) {
			ne++
		}
		done = ne
		if ne-ns > 120 {
			continue
		}
		vs, ve, op, quoted, ok := assigned(w, ne)
		if !ok {
			continue
		}
		name := string(w[ns:ne])
		v := w[vs:ve]
		kind, strong := secretName(name)
		if kind == "" || placeholder(v) {
			continue
		}
		env := op == "=" && isEnvName(name)
		if !quoted {
			v = bytes.TrimRight(v, ".:")
			ve = vs + len(v)
		}
		take := false
		switch {
		case highEntropy(v):
			take = true
		case strong && (quoted || env):
			take = len(v) >= 4
		case strong:
			// unquoted, outside a .env line (YAML, logs, code): a word is more often
			// a reference than a password; a password mixes in digits or symbols
			take = len(v) >= 6 && !codeLike(v) && !allLetters(v)
		case env:
			take = len(v) >= 8 && !allDigits(v) && !codeLike(v)
		}
		if take {
			mark(vs, ve, kind)
			w = t.w // the copy, if that mark made it
			done = ve
		}
	}
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// maxValue bounds a value: a longer run is data, not a credential.
const maxValue = 400

// assigned reads an assignment that starts at i, just after a name: the value's span,
// the operator, and whether the value was quoted.
func assigned(w []byte, i int) (vs, ve int, op string, quoted, ok bool) {
	n := len(w)
	at := func(j int) byte {
		if j < n {
			return w[j]
		}
		return 0
	}
	switch {
	case at(i) == '\\' && at(i+1) == '"':
		i += 2
	case at(i) == '"' || at(i) == '\'':
		i++
	}
	for at(i) == ' ' || at(i) == '\t' {
		i++
	}
	switch {
	case at(i) == ':' && at(i+1) == '=', at(i) == '=' && at(i+1) == '>':
		op = string(w[i : i+2])
		i += 2
	case at(i) == ':' || at(i) == '=' && at(i+1) != '=':
		op = string(w[i : i+1])
		i++
	default:
		return 0, 0, "", false, false
	}
	for at(i) == ' ' || at(i) == '\t' {
		i++
	}
	until := func(j int, stop func(c byte) bool) int {
		for k := j; k < n && k-j <= maxValue; k++ {
			if stop(w[k]) {
				return k
			}
		}
		return -1
	}
	line := func(c byte) bool { return c == 0 || c == '\r' || c == '\n' }
	switch c := at(i); {
	case c == '\\' && at(i+1) == '"': // inside a JSON string: \"value\"
		e := until(i+2, func(c byte) bool { return c == '\\' || c == '"' || line(c) })
		if e < 0 || at(e) != '\\' || at(e+1) != '"' {
			return 0, 0, "", false, false
		}
		return i + 2, e, op, true, e > i+2
	case c == '"' || c == '\'':
		q := c
		e := until(i+1, func(c byte) bool { return c == q || c == '\\' || line(c) })
		if e < 0 || at(e) != q {
			return 0, 0, "", false, false
		}
		return i + 1, e, op, true, e > i+1
	}
	e := i
	for e < n && e-i <= maxValue && !bareStop(w[e]) {
		e++
	}
	if e-i > maxValue {
		return 0, 0, "", false, false
	}
	return i, e, op, false, e > i
}

func bareStop(c byte) bool {
	switch c {
	case 0, ' ', '\t', '\r', '\n', '"', '\'', '\\', ',', ';', '&', '<', '>', '(', ')', '{', '}', '[', ']', '`':
		return true
	}
	return false
}

// secretName says what a name holds: the marker's kind, "" when it is no secret's name,
// and strong when a name alone says secret (password, secret), not just key or token.
func secretName(name string) (kind string, strong bool) {
	ws := words(name)
	if len(ws) == 0 {
		return "", false
	}
	if notSecret[ws[len(ws)-1]] {
		return "", false
	}
	if len(ws) == 1 && ws[0] == "key" {
		// "key" alone names a cache key, a map key, a sort key far more often than a
		// credential ("Cache restored with key: setup-uv-..."); a provider's key there
		// is still found by its format.
		return "", false
	}
	for _, w := range ws {
		switch w {
		case "password", "passwd", "pwd", "passphrase":
			return "password", true
		case "pass", "pw":
			// Alone it is a verdict ("--- PASS: TestX", "PASS: 12"); with another
			// word it is a password (DB_PASS, SMTP_PASS).
			if len(ws) > 1 {
				return "password", true
			}
		case "secret", "secretkey", "clientsecret":
			return "secret", true
		}
	}
	for i, w := range ws {
		switch w {
		case "token", "apitoken", "accesstoken", "authtoken":
			if i > 0 && pageWords[ws[i-1]] {
				return "", false // a cursor into a listing (NextToken, nextPageToken)
			}
			return "token", false
		case "key", "apikey", "accesskey", "privatekey", "secretkey":
			if i > 0 && (ws[i-1] == "public" || ws[i-1] == "primary" || ws[i-1] == "foreign" || ws[i-1] == "sort" || ws[i-1] == "partition" || ws[i-1] == "idempotency" || ws[i-1] == "cache") {
				return "", false
			}
			return "api-key", false
		case "credential", "credentials", "auth":
			return "credential", false
		}
	}
	return "", false
}

// pageWords before "token" name a listing's cursor, which APIs hand out in the clear.
var pageWords = map[string]bool{"next": true, "page": true, "continuation": true, "cursor": true, "pagination": true, "resume": true, "sync": true, "start": true}

// notSecret are last words of names that hold something other than the secret itself.
var notSecret = map[string]bool{
	"id": true, "ids": true, "path": true, "file": true, "dir": true, "url": true, "uri": true,
	"host": true, "port": true, "ttl": true, "seconds": true, "secs": true, "ms": true, "expiry": true,
	"expires": true, "expiration": true, "length": true, "len": true, "size": true, "type": true,
	"name": true, "names": true, "header": true, "endpoint": true, "region": true, "algorithm": true,
	"alg": true, "format": true, "count": true, "limit": true, "max": true, "min": true, "mode": true,
	"version": true, "hint": true, "prefix": true, "suffix": true, "field": true, "index": true,
	"env": true, "var": true, "enabled": true, "required": true, "policy": true, "provider": true,
	"usage": true, "tokens": true, "keys": true, "location": true, "store": true, "kind": true,
	"label": true, "timeout": true, "method": true, "scope": true, "scopes": true, "pattern": true,
}

// words splits a name at _ . - and at a lower-to-upper case change, in lower case.
func words(name string) []string {
	var ws []string
	start := 0
	flush := func(end int) {
		if end > start {
			ws = append(ws, strings.ToLower(name[start:end]))
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '.' || c == '-' {
			flush(i)
			start = i + 1
			continue
		}
		if i > start && 'A' <= c && c <= 'Z' && 'a' <= name[i-1] && name[i-1] <= 'z' {
			flush(i)
			start = i
		}
	}
	flush(len(name))
	return ws
}

// isEnvName: a .env or shell variable name (upper case).
func isEnvName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return name != "" && name[0] >= 'A' && name[0] <= 'Z'
}

// placeholder reports a value that stands for a secret rather than being one: a variable
// ($X, ${X}, {{ X }}, %X%), a template (<your-key>), a marker, a mask, a word that says
// empty.
func placeholder(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	switch v[0] {
	case '$', '<', '%', '{', '*':
		return true
	}
	if bytes.Contains(v, []byte(markerPrefix)) || bytes.HasPrefix(v, []byte("REDACTED")) {
		return true
	}
	l := strings.ToLower(string(v))
	switch l {
	case "null", "none", "nil", "true", "false", "undefined", "changeme", "password", "secret", "xxx", "example", "required", "optional", "string", "redacted", "hidden", "test", "your-key", "...":
		return true
	}
	if strings.HasPrefix(l, "your") || strings.HasPrefix(l, "process.env") || strings.HasPrefix(l, "os.environ") || strings.HasPrefix(l, "env.") || strings.HasPrefix(l, "secrets.") {
		return true
	}
	same := true
	for _, c := range v[1:] {
		if c != v[0] {
			same = false
			break
		}
	}
	return same
}

// codeLike: a bare value that is an expression, not a literal: a call, a member access of
// words (os.getenv, config.token).
func codeLike(v []byte) bool {
	if bytes.ContainsAny(v, "()") {
		return true
	}
	if !bytes.Contains(v, []byte(".")) {
		return false
	}
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func allLetters(v []byte) bool {
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func allDigits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// highEntropy reports a value that looks generated: 16 characters or more, no space,
// letters and digits both, and at least 3 bits of Shannon entropy a character.
func highEntropy(v []byte) bool {
	if len(v) < 16 || bytes.ContainsAny(v, " \t") {
		return false
	}
	var letter, digit bool
	var n [256]int
	for _, c := range v {
		n[c]++
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letter = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	if !letter || !digit {
		return false
	}
	h := 0.0
	for _, k := range n {
		if k > 0 {
			p := float64(k) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h >= 3
}
