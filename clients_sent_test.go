package ctxkit_test

import (
	"bytes"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/fakeupstream"
	"github.com/ctxkit/ctxkit/internal/proxy"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The real clients through ctx-proxy, as a user runs them: the proxy's store is the
// project's default one (in the user's state directory, when started in the project), and
// ctx-count --latest
// run there counts what the proxy sent, found by the session id the client sent, which
// names its log, and says so. What the clients send is what these tests hold the proxy to:
// the session id (Claude Code's X-Claude-Code-Session-Id, Codex's session id), the working
// directory in the system prompt or the environment context.

// sentProxy starts a proxy with the default pipeline in front of up, its store in store.
func sentProxy(t *testing.T, up, store string) string {
	t.Helper()
	pipe, err := replay.ParsePipe(replay.DefaultPipe, replay.Tools())
	if err != nil {
		t.Fatal(err)
	}
	state, err := convstate.Open(filepath.Join(store, "proxy"), convstate.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Upstream: up, Pipe: pipe, Env: map[string]string{"CTX_STORE": store}, Getenv: func(string) string { return "" },
		State: state, TempDir: t.TempDir(),
		Counter: func(f transcript.Format, model string) (tokens.Counter, error) {
			return tokens.New(tokens.DefaultTokenizer(string(f)))
		}}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts.URL
}

// defaultStore is the store ctxkit's tools use by default in dir for the user whose home is
// home (no XDG_STATE_HOME): what a proxy started in dir uses.
func defaultStore(home, dir string) string {
	return store.DefaultDir(filepath.Join(home, ".local", "state", "ctxkit"), dir)
}

// latestSent runs ctx-count --latest in dir with env and checks that it counted what the
// proxy sent for the session whose log is named id, saying so, and that --source log
// counts the log.
func latestSent(t *testing.T, dir string, env map[string]string, id, format string) {
	t.Helper()
	sent := convstate.ReadSent(filepath.Join(defaultStore(env["HOME"], dir), "proxy"))
	if len(sent) == 0 {
		t.Fatal("the proxy kept no request as sent")
	}
	var main *convstate.Sent
	for i, s := range sent {
		t.Logf("sent: session %s, cwd %s, %d tools, %d messages, %d tokens", s.Session, s.Cwd, s.Tools, s.Messages, s.Tokens)
		if s.Session == id && (main == nil || s.Tools > main.Tools) {
			main = &sent[i]
		}
	}
	if main == nil || main.Cwd != dir || main.Format != format {
		t.Fatalf("no request of session %s in %s named as sent in %s", id, dir, format)
	}
	t.Chdir(dir)
	env["PWD"] = dir
	env["CTX_CACHE_DIR"] = "off"
	getenv := func(k string) string { return env[k] }
	var stdout, stderr bytes.Buffer
	if code := count.Main([]string{"--latest"}, nil, &stdout, &stderr, getenv); code != 0 {
		t.Fatalf("ctx-count --latest: exit %d: %s", code, stderr.String())
	}
	if got := gjson.GetBytes(stdout.Bytes(), "file").String(); got != main.Path {
		t.Errorf("ctx-count --latest read %s, want %s", got, main.Path)
	}
	note := "ctx-count: note: showing what ctx-proxy sent (" + main.Path + "), not the client's log ("
	if !strings.HasPrefix(stderr.String(), note) || !strings.Contains(stderr.String(), id+".jsonl); --source log for the log\n") {
		t.Errorf("stderr %q", stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := count.Main([]string{"--latest", "--source", "log"}, nil, &stdout, &stderr, getenv); code != 0 || stderr.Len() != 0 {
		t.Fatalf("ctx-count --latest --source log: exit %d: %s", code, stderr.String())
	}
	if got := gjson.GetBytes(stdout.Bytes(), "file").String(); !strings.HasSuffix(got, id+".jsonl") {
		t.Errorf("ctx-count --latest --source log read %s", got)
	}
}

func TestClaudeCodeLatestSent(t *testing.T) {
	claude := clientBinary(t, "node_modules/.bin/claude")
	u := fakeupstream.New(
		fakeupstream.Turn{Tool: "Bash", Input: `{"command":"echo ctxkit-hello","description":"Print a greeting"}`},
		fakeupstream.Turn{Text: "ctxkit-final: done"},
	)
	srv := u.Start(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	url := sentProxy(t, srv.URL, defaultStore(home, home))
	runClient(t, []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
		home, claude, "-p", "Run the shell command echo ctxkit-hello.", "--output-format", "json", "--allowedTools", "Bash")
	logs, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("Claude Code logs: %v", logs)
	}
	latestSent(t, home, map[string]string{"HOME": home}, strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl"), "anthropic")
}

func TestCodexLatestSent(t *testing.T) {
	codex := clientBinary(t, "node_modules/.bin/codex")
	u := fakeupstream.New(
		fakeupstream.Turn{Tool: "exec_command", Input: `{"cmd":"echo ctxkit-hello"}`},
		fakeupstream.Turn{Text: "ctxkit-final: done"},
	)
	srv := u.Start(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	codexHome, work := codexDirs(t, home)
	url := sentProxy(t, srv.URL, defaultStore(home, work))
	writeCodexConfig(t, codexHome, url, "")
	runClient(t, []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "CTXKIT_FAKE_KEY=sk-test-not-a-key"},
		work, codex, "exec", "--skip-git-repo-check", "Run the shell command echo ctxkit-hello.")
	logs, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("Codex logs: %v", logs)
	}
	stem := strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl")
	latestSent(t, work, map[string]string{"HOME": home, "CODEX_HOME": codexHome}, stem[len(stem)-36:], "responses")
}
