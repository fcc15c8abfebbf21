package redact

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Pattern is a user's regular expression for a secret of their own (an internal token
// format). What it matches is replaced by Marker("custom"), or, when the expression has a
// capture group, only the first group's text: a named group names the kind
// (`acme=(?P<acme_token>[a-z0-9]{32})` gives "[redacted: acme-token]"), an unnamed one is
// "custom".
type Pattern struct {
	rx    *regexp.Regexp
	group int
	kind  string
}

// ParsePatterns reads a patterns file: one RE2 regular expression a line (Go's syntax,
// which runs in linear time); blank lines and lines starting with # are skipped. name is
// the file's name in errors.
func ParsePatterns(name, text string) ([]Pattern, error) {
	var ps []Pattern
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		p, err := NewPattern(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// LoadPatterns reads the patterns file at path (see ParsePatterns).
func LoadPatterns(path string) ([]Pattern, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read redaction patterns: %w", err)
	}
	return ParsePatterns(path, string(b))
}

// NewPattern compiles one pattern (see Pattern).
func NewPattern(expr string) (Pattern, error) {
	rx, err := regexp.Compile(expr)
	if err != nil {
		return Pattern{}, fmt.Errorf("pattern %q: %w", expr, err)
	}
	if rx.MatchString("") {
		return Pattern{}, fmt.Errorf("pattern %q matches the empty string", expr)
	}
	p := Pattern{rx: rx, kind: "custom"}
	if rx.NumSubexp() > 0 {
		p.group = 1
		if n := rx.SubexpNames()[1]; n != "" {
			p.kind = strings.ReplaceAll(strings.ToLower(n), "_", "-")
		}
	}
	return p, nil
}

func (p Pattern) find(w []byte, mark func(start, end int, kind string)) {
	for _, m := range p.rx.FindAllSubmatchIndex(w, -1) {
		if s, e := m[2*p.group], m[2*p.group+1]; s >= 0 {
			mark(s, e, p.kind)
		}
	}
}
