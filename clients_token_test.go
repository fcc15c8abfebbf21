package ctxkit_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/fakeupstream"
)

// clientToken is the proxy's --auth-token in the real-client tests that use one.
const clientToken = "ctxkit_test_token_0123456789"

// tokenSeen fails the test if the token reached the upstream, in a path or a header.
func tokenSeen(t *testing.T, u *fakeupstream.Upstream) {
	t.Helper()
	for _, r := range u.Requests() {
		if strings.Contains(r.Path+"?"+r.Query, clientToken) || strings.Contains(fmt.Sprint(r.Header), clientToken) {
			t.Errorf("the token reached the upstream: %s %s %v", r.Method, r.Path, r.Header)
		}
	}
}

// TestClaudeCodeToken: Claude Code through a proxy that wants its token, given as the
// base URL's /t/TOKEN: every request it makes (HEAD of the base URL included) is served.
func TestClaudeCodeToken(t *testing.T) {
	claude := clientBinary(t, "node_modules/.bin/claude")
	const final = "ctxkit-final: the shell said hello"
	u := fakeupstream.New(
		fakeupstream.Turn{Tool: "Bash", Input: `{"command":"echo ctxkit-hello","description":"Print a greeting"}`},
		fakeupstream.Turn{Text: final},
	)
	srv := u.Start(t)
	base, _ := startProxyToken(t, srv.URL, nil, clientToken)
	home := t.TempDir()
	out := runClient(t, []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + base + "/t/" + clientToken,
		"ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}, home, claude, "-p", "Run the shell command echo ctxkit-hello and tell me what it printed.",
		"--output-format", "json", "--allowedTools", "Bash")
	describe(t, u)
	noViolations(t, u)
	tokenSeen(t, u)
	if got := gjson.GetBytes(out, "result").String(); got != final {
		t.Errorf("claude -p result %q, want %q\nstdout: %s", got, final, out)
	}
	if steps := u.Scripted(); len(steps) != 2 || steps[0].Path != "/v1/messages" {
		t.Errorf("%d scripted requests reached the upstream", len(steps))
	}
}

// TestCodexToken: Codex through a proxy that wants its token, sent in the X-Ctxkit-Token
// header its provider's env_http_headers names.
func TestCodexToken(t *testing.T) {
	codex := clientBinary(t, "node_modules/.bin/codex")
	const final = "ctxkit-final: the shell said hello"
	u := fakeupstream.New(
		fakeupstream.Turn{Tool: "exec_command", Input: `{"cmd":"echo ctxkit-hello"}`},
		fakeupstream.Turn{Text: final},
	)
	srv := u.Start(t)
	base, _ := startProxyToken(t, srv.URL, nil, clientToken)
	home := t.TempDir()
	codexHome, work := codexDirs(t, home)
	writeCodexConfig(t, codexHome, base, `env_http_headers = { "X-Ctxkit-Token" = "CTXKIT_TOKEN" }
`)
	out := runClient(t, []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "CTXKIT_FAKE_KEY=sk-test-not-a-key", "CTXKIT_TOKEN=" + clientToken},
		work, codex, "exec", "--skip-git-repo-check", "Run the shell command echo ctxkit-hello and tell me what it printed.")
	describe(t, u)
	noViolations(t, u)
	tokenSeen(t, u)
	if !bytes.Contains(out, []byte(final)) {
		t.Errorf("codex exec did not print the final answer %q:\n%s", final, out)
	}
}
