package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"sync"
)

// detector is one credential format: the literals one of which its matches always hold,
// the expression, and the group whose span is the secret (0: the whole match; a label
// before it stays). The expression runs only in a window around each place a literal
// occurs, from lead bytes before it to span bytes after it, so a long text costs a
// substring search per literal and the expression's work is bounded by the windows.
type detector struct {
	kind     string
	literals []string // any one of them; in lower case when fold
	fold     bool     // the literals are matched in any case
	lead     int      // how far before its literal a match may start
	span     int      // how far after its literal a match may end; 0: 512
	re       string
	group    int
	valid    func(v []byte) bool // when set, a match it refuses is left alone

	once sync.Once
	rx   *regexp.Regexp
}

// find runs the detector's expression in a window around each place one of its literals
// occurs (hits, from scan), in order.
func (d *detector) find(t *text, hits []int, mark func(start, end int, kind string)) {
	if len(hits) == 0 {
		return
	}
	span := d.span
	if span == 0 {
		span = 512
	}
	// The expression is anchored: a match starts at most lead bytes before the literal
	// (and one more, so that a \b sees the byte before it). Unanchored, a window with no
	// match was searched from each of its bytes, the whole window long (64 KB for a private
	// key). The original match is group 1, its groups follow.
	d.once.Do(func() { d.rx = regexp.MustCompile(fmt.Sprintf(`\A(?s:.){0,%d}?(%s)`, d.lead+1, d.re)) })
	for _, p := range hits {
		from := max(0, p-d.lead-1)
		to := min(len(t.w), p+span+16)
		m := d.rx.FindSubmatchIndex(t.w[from:to])
		if m != nil && m[2] == 0 && from > 0 { // its left edge was not seen: look further
			from++
			m = d.rx.FindSubmatchIndex(t.w[from:to])
		}
		if m == nil {
			continue
		}
		s, e := m[2*d.group+2], m[2*d.group+3]
		if s < 0 || d.valid != nil && !d.valid(t.w[from+s:from+e]) {
			continue
		}
		mark(from+s, from+e, d.kind)
	}
}

// text is what the matchers read: the text, with what was found blanked (NUL). Until own,
// w is the caller's string, read only; a matcher reads t.w again after it marks.
type text struct {
	w   []byte
	own bool
}

// literal is one literal a matcher needs: a detector's (owner its index) or a word of a
// secret's name (owner -1).
type literal struct {
	s     string
	fold  bool
	owner int
}

// literalIndex finds every literal of every matcher in one pass over a text: a table of
// the byte pairs literals start with rules out most places at once, and the literals that
// start with a place's two bytes are compared there. (Listing them by the first byte
// alone compared "secret" and the sk- keys wherever "s" met a letter a name word starts
// with: "st", "sp"; by the pair, only where the place starts "se" or "sk".) Names' words
// ("key", "pass") make pairs of ordinary text: a place whose pair passes is then looked up
// by its first three bytes (tri, hashed), which rules out most of the rest before any
// literal is compared.
type literalIndex struct {
	lits []literal
	// pair is, for each byte pair, 0 when no literal starts with it, else 1 + the index
	// in byPair of the literals that do, in the order they were added.
	pair   [1 << 16]uint8
	byPair [][]int32
	tri    [1 << 16]bool
}

// triKey is the slot of tri for a place's first three bytes.
func triKey(a, b, c byte) uint32 {
	return (uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> 16
}

var literals = sync.OnceValue(func() *literalIndex {
	x := &literalIndex{}
	add := func(l literal) {
		k := int32(len(x.lits))
		x.lits = append(x.lits, l)
		c0, c1 := []byte{l.s[0]}, []byte{l.s[1]}
		if l.fold {
			c0, c1 = cases(l.s[0]), cases(l.s[1])
		}
		var c2 []byte // any third byte, for a literal of two
		if len(l.s) > 2 {
			c2 = []byte{l.s[2]}
			if l.fold {
				c2 = cases(l.s[2])
			}
		} else {
			for c := range 256 {
				c2 = append(c2, byte(c))
			}
		}
		for _, a := range c0 {
			for _, b := range c1 {
				p := int(a)<<8 | int(b)
				if x.pair[p] == 0 {
					if len(x.byPair) == 255 {
						panic("redact: more than 255 pairs start a literal")
					}
					x.byPair = append(x.byPair, nil)
					x.pair[p] = uint8(len(x.byPair))
				}
				x.byPair[x.pair[p]-1] = append(x.byPair[x.pair[p]-1], k)
				for _, c := range c2 {
					x.tri[triKey(a, b, c)] = true
				}
			}
		}
	}
	for i, d := range detectors() {
		for _, l := range d.literals {
			add(literal{l, d.fold, i})
		}
	}
	for _, w := range nameWords {
		add(literal{w, true, -1})
	}
	return x
})

// cases is c and, for a letter, its other case.
func cases(c byte) []byte {
	switch {
	case 'a' <= c && c <= 'z':
		return []byte{c, c - 'a' + 'A'}
	case 'A' <= c && c <= 'Z':
		return []byte{c, c - 'A' + 'a'}
	}
	return []byte{c}
}

// scan returns, for each detector, where its literals occur, and where the words of
// secrets' names do, each in text order.
func scan(w []byte) (perDetector [][]int, names []int) {
	x := literals()
	perDetector = make([][]int, len(detectors()))
	for i := 0; i+1 < len(w); i++ {
		p := x.pair[int(w[i])<<8|int(w[i+1])]
		if p == 0 {
			continue
		}
		if i+2 < len(w) && !x.tri[triKey(w[i], w[i+1], w[i+2])] {
			continue
		}
		for _, k := range x.byPair[p-1] {
			l := &x.lits[k]
			if !hasPrefix(w[i:], l.s, l.fold) {
				continue
			}
			if l.owner < 0 {
				if n := len(names); n == 0 || names[n-1] != i {
					names = append(names, i)
				}
				continue
			}
			perDetector[l.owner] = append(perDetector[l.owner], i)
		}
	}
	return perDetector, names
}

func hasPrefix(w []byte, s string, fold bool) bool {
	if len(w) < len(s) {
		return false
	}
	if !fold {
		return string(w[:len(s)]) == s
	}
	for j := 0; j < len(s); j++ {
		c := w[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[j] {
			return false
		}
	}
	return true
}

// Key characters. NUL is never one: what an earlier matcher found is blanked with it.
const (
	b64  = `A-Za-z0-9+/`
	b64u = `A-Za-z0-9_\-`
)

// detectors are the credential formats, most specific first: a find blanks its span for
// the ones after it. The formats are the issuers' own documented prefixes and lengths;
// where an issuer documents no fixed length the bound is loose, since the prefix alone is
// distinctive.
var detectors = sync.OnceValue(func() []*detector {
	return []*detector{
		// Private keys: PEM blocks (RSA, EC, DSA, OpenSSH, PKCS#8 including GCP service
		// accounts' "private_key", encrypted ones) and PGP private key blocks, in plain
		// text or inside a JSON string (\n escaped). A block cut off before its END line
		// (truncated output) goes to the end of its base64. The window opens at "PRIVATE
		// KEY", not at every "-----BEGIN" (a bundle of certificates holds hundreds).
		{kind: "private-key", literals: []string{"PRIVATE KEY"}, lead: 50, span: 64 << 10,
			re: `(?s)-----BEGIN[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----.*?-----END[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----`},
		{kind: "private-key", literals: []string{"PRIVATE KEY"}, lead: 50, span: 64 << 10,
			re: `-----BEGIN[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----(?:[` + b64 + `=\s:,\-]|\\[nr])+`},

		// Model providers.
		{kind: "anthropic-api-key", literals: []string{"sk-ant-"}, re: `\bsk-ant-(?:api|admin|oat|sid)?[0-9]{0,2}-?[` + b64u + `*]{8,}`},
		{kind: "openrouter-api-key", literals: []string{"sk-or-"}, re: `\bsk-or-v[0-9]-[0-9a-f]{64}\b`},
		// OpenAI: sk-proj-, sk-svcacct-, sk-admin-, legacy sk- with 48 characters; also the
		// masked form an API error echoes (sk-proj-abc1****wxyz). DeepSeek's sk- keys too.
		{kind: "openai-api-key", literals: []string{"sk-"}, re: `\bsk-(?:proj-|svcacct-|admin-|None-)?[` + b64u + `*]{16,}`,
			valid: func(v []byte) bool { return hasDigit(v) || bytes.Contains(v, []byte("***")) }},
		{kind: "google-api-key", literals: []string{"AIza"}, re: `\bAIza[` + b64u + `]{35}`},
		{kind: "groq-api-key", literals: []string{"gsk_"}, re: `\bgsk_[A-Za-z0-9]{48,56}\b`},
		{kind: "xai-api-key", literals: []string{"xai-"}, re: `\bxai-[A-Za-z0-9]{60,90}\b`},
		{kind: "huggingface-token", literals: []string{"hf_"}, re: `\bhf_[A-Za-z]{34,40}\b`},
		{kind: "replicate-api-token", literals: []string{"r8_"}, re: `\br8_[A-Za-z0-9]{37}\b`},
		{kind: "perplexity-api-key", literals: []string{"pplx-"}, re: `\bpplx-[A-Za-z0-9]{48}\b`},

		// Cloud providers.
		{kind: "aws-access-key", literals: []string{"AKIA", "ASIA", "ABIA", "ACCA", "A3T"}, re: `\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}\b`},
		// An AWS secret key has no prefix: 40 base64 characters, found by its name.
		{kind: "aws-secret-key", literals: []string{"aws"}, fold: true, span: 200,
			re: `(?i)aws.{0,20}?secret(?:_?access)?(?:_?key)?(?:\\?["'])?\s*(?::=|[:=]|=>)\s*(?:\\?["'])?([` + b64 + `]{40})(?:[^` + b64 + `=]|$)`, group: 1},
		{kind: "aws-session-token", literals: []string{"aws"}, fold: true, span: 2000,
			re: `(?i)aws.{0,20}?session_?token(?:\\?["'])?\s*(?::=|[:=]|=>)\s*(?:\\?["'])?([` + b64 + `=]{100,})`, group: 1},
		{kind: "gcp-oauth-secret", literals: []string{"GOCSPX-"}, re: `\bGOCSPX-[` + b64u + `]{28}`},
		{kind: "gcp-access-token", literals: []string{"ya29."}, re: `\bya29\.[` + b64u + `.]{30,}`},
		// Azure: a storage account's key in a connection string, an Entra ID client
		// secret, a shared access signature.
		{kind: "azure-storage-key", literals: []string{"AccountKey="}, re: `AccountKey=([` + b64 + `]{86}==)`, group: 1},
		{kind: "azure-client-secret", literals: []string{"Q~"}, lead: 5, span: 40, re: `(?:^|[^A-Za-z0-9_~.\-])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})(?:[^A-Za-z0-9_~.\-]|$)`, group: 1},
		{kind: "azure-sas-signature", literals: []string{"sig="}, lead: 6, re: `(?:[?&]|\\u0026)sig=([A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})`, group: 1},

		// Code hosts, chat, payments, package registries.
		{kind: "github-token", literals: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, re: `\bgh[pousr]_[A-Za-z0-9]{36,255}\b`},
		{kind: "github-token", literals: []string{"github_pat_"}, re: `\bgithub_pat_[A-Za-z0-9_]{50,255}\b`},
		{kind: "gitlab-token", literals: []string{"glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-"}, re: `\bgl(?:pat|dt|rt|ptt|ft|soat|cbt)-[` + b64u + `.]{20,}`},
		{kind: "slack-token", literals: []string{"xox"}, re: `\bxox[abeoprs]-(?:[0-9]+-)*[A-Za-z0-9\-]{10,}`},
		{kind: "slack-token", literals: []string{"xapp-"}, re: `\bxapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-f0-9]{32,}`},
		{kind: "slack-webhook", literals: []string{"hooks.slack.com"}, re: `hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{20,})`, group: 1},
		{kind: "stripe-key", literals: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, re: `\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`},
		{kind: "stripe-webhook-secret", literals: []string{"whsec_"}, re: `\bwhsec_[A-Za-z0-9+/]{32,}`},
		{kind: "npm-token", literals: []string{"npm_"}, re: `\bnpm_[A-Za-z0-9]{36}\b`},
		{kind: "pypi-token", literals: []string{"pypi-"}, re: `\bpypi-AgE[` + b64u + `]{50,}`},
		{kind: "sendgrid-api-key", literals: []string{"SG."}, re: `\bSG\.[` + b64u + `]{22}\.[` + b64u + `]{43}\b`},
		{kind: "digitalocean-token", literals: []string{"dop_v1_", "doo_v1_", "dor_v1_"}, re: `\bdo[por]_v1_[a-f0-9]{64}\b`},
		{kind: "shopify-token", literals: []string{"shpat_", "shpss_", "shpca_", "shppa_"}, re: `\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b`},

		// JSON Web Tokens: a header and a payload (base64url of a JSON object: "eyJ")
		// and a signature.
		{kind: "jwt", literals: []string{"eyJ"}, span: 16 << 10, re: `\beyJ[` + b64u + `]{10,}\.eyJ[` + b64u + `]{10,}\.[` + b64u + `]*`},

		// Credentials in a URL (scheme://user:password@host): the password.
		{kind: "url-password", literals: []string{"://"}, lead: 32, span: 320, re: `\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@"'\\<>\x00]{1,100}:([^\s/@"'\\<>\x00]{1,200})@[A-Za-z0-9\[]`, group: 1,
			valid: func(v []byte) bool { return !placeholder(v) }},
		// A command line's credentials (curl -u user:password, --user) and a .netrc's
		// password, which follows its login.
		{kind: "password", literals: []string{"-u ", "-u\t", "--user"}, lead: 1, span: 300,
			re: `(?:^|[\s'"])(?:-u|--user)(?:[ \t]+|=)['"]?[^\s:'"\\\x00]{1,100}:([^\s'"\\\x00]{1,200})`, group: 1,
			valid: func(v []byte) bool { return !placeholder(v) && !allDigits(v) }}, // docker run -u 1000:1000
		{kind: "password", literals: []string{"login"}, span: 400,
			re: `\blogin[ \t]+[^\s\\\x00]{1,200}(?:\s|\\[nrt])+password[ \t]+([^\s\\"'\x00]{1,200})`, group: 1,
			valid: func(v []byte) bool { return !placeholder(v) }},
		// HTTP authorization: a bearer token, basic credentials, a token header.
		{kind: "bearer-token", literals: []string{"bearer"}, fold: true, span: 600, re: `(?i)\bbearer\s+([A-Za-z0-9._~+/=\-]{16,})`, group: 1,
			valid: func(v []byte) bool { return !placeholder(v) }},
		{kind: "basic-auth", literals: []string{"authorization"}, fold: true, span: 600, re: `(?i)\bauthorization(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?basic\s+([A-Za-z0-9+/]{8,}={0,2})`, group: 1},
	}
})

func hasDigit(v []byte) bool {
	for _, c := range v {
		if '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

// longToken is a run of key characters long enough to be a credential of an unknown
// provider (Loose).
var longToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9_\-+/=]{32,}`) })

// looseLabel is a label that says credential ("x-api-key", "token", "authorization")
// followed by a value: in an error message the value is the credential, whatever its
// shape (Loose). Group 3 is the value.
var looseLabel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(x-api-key|api[_-]?key|access[_-]?token|authorization|token|secret)(["']?\s*[:=]\s*["']?)([A-Za-z0-9._~+/=\-*]{6,})`)
})

var looseBearer = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=\-*]{6,})`)
})

func findLoose(w []byte, mark func(start, end int, kind string)) {
	for _, m := range looseBearer().FindAllSubmatchIndex(w, -1) {
		mark(m[2], m[3], "credential")
	}
	for _, m := range looseLabel().FindAllSubmatchIndex(w, -1) {
		if v := w[m[6]:m[7]]; !bytes.EqualFold(v, []byte("bearer")) && !bytes.EqualFold(v, []byte("basic")) {
			mark(m[6], m[7], "credential")
		}
	}
	for _, m := range longToken().FindAllIndex(w, -1) {
		if mixed(w[m[0]:m[1]]) {
			mark(m[0], m[1], "token")
		}
	}
}

// mixed reports whether v mixes digits with lower and upper case letters, as generated
// keys do and hex digests, paths and words do not all at once.
func mixed(v []byte) bool {
	var lower, upper, digit bool
	for _, c := range v {
		switch {
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
