package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/redact"
)

// TestLogRedacted: a key in what the proxy logs (an upstream's error quoting it, a path
// that carries it) is replaced in the --log line and the --stats line (issue 40); with
// no redactor (--no-redact) the lines are as they were.
func TestLogRedacted(t *testing.T) {
	const key = "sk-ant-api03-Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0AcQwErTyUiOp-AA"
	rec := &Record{Path: "/v1/messages?key=" + key, Error: "upstream: HTTP 401: invalid x-api-key " + key, Conversation: "anthropic:0123456789abcdef"}
	for _, rd := range []*redact.Redactor{redact.New(), nil} {
		var log, stats bytes.Buffer
		s := &Server{Log: &log, Stats: &stats, Redact: rd}
		s.record(rec)
		if !json.Valid(bytes.TrimSpace(log.Bytes())) {
			t.Fatalf("log line is not JSON: %s", log.Bytes())
		}
		for _, line := range []string{log.String(), stats.String()} {
			if got := strings.Contains(line, "Zx9Qm2"); got != (rd == nil) {
				t.Errorf("redactor %v: key in %q: %v", rd != nil, line, got)
			}
		}
		if rd != nil && !strings.Contains(log.String(), "[redacted: anthropic-api-key]") {
			t.Errorf("no marker in the log line: %s", log.String())
		}
	}
}
