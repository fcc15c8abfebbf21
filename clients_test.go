// Real-client tests: Claude Code, Codex CLI and the official Anthropic and OpenAI SDKs for
// Node run non-interactively against the fake upstream (internal/fakeupstream), through the
// base URL proxyBaseURL gives (clients_proxy_test.go), with a scripted tool round trip. They
// prove that what these clients send and expect back goes through unharmed: every request is
// valid for its API, the tool ran, and the final answer came back.
//
// The clients come from scripts/install-clients.sh (into $CTXKIT_CLIENTS, default
// ~/.cache/ctxkit-clients), which the first test that needs one runs when they are absent;
// each test skips, saying why, when its client or node cannot be had.
package ctxkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/fakeupstream"
)

// clientTimeout bounds one client run; a client that hangs is killed with its process group.
const clientTimeout = 60 * time.Second

// clientsDir is where scripts/install-clients.sh puts the clients.
func clientsDir() string {
	if d := os.Getenv("CTXKIT_CLIENTS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ctxkit-clients")
}

// clientPath returns the installed file rel under the clients folder, or skips the test.
func clientPath(t *testing.T, rel string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real clients are not run with -short")
	}
	p := filepath.Join(clientsDir(), rel)
	if _, err := os.Stat(p); err != nil {
		installOnce.Do(func() { installClients(t) })
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (scripts/install-clients.sh could not install it): %v", rel, err)
	}
	return p
}

// installOnce runs the install script at most once per test run.
var installOnce sync.Once

// installTimeout bounds the install: the npm registry may be slow or out of reach, and the
// tests then skip rather than hold up the run.
const installTimeout = 4 * time.Minute

// installClients is the real-client tests' own set-up: scripts/install-clients.sh, which
// does nothing when the clients are there and exits 0 whatever fails.
func installClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "scripts/install-clients.sh")
	killGroupOnCancel(cmd)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("scripts/install-clients.sh (%s, %v): %s", time.Since(start).Round(time.Second), err, tail(out))
}

// clientBinary returns an installed client's command, or skips the test when it is missing or
// cannot run on this machine (its native binary may not suit the platform).
func clientBinary(t *testing.T, rel string) string {
	t.Helper()
	p := clientPath(t, rel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").CombinedOutput()
	if err != nil {
		t.Skipf("%s cannot run here: %v: %s", rel, err, tail(out))
	}
	t.Logf("%s", bytes.TrimSpace(out))
	return p
}

// runClient runs a client with exactly env (nothing of the caller's environment leaks in, so
// no real key or config reaches it) and returns its stdout; it fails the test on a non-zero
// exit or the time limit.
func runClient(t *testing.T, env []string, dir string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1"}, env...)
	cmd.Dir = dir
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Clients start helpers (shells, sandboxes); kill the whole group on time-out.
	killGroupOnCancel(cmd)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s ran %.1fs", filepath.Base(name), time.Since(start).Seconds())
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v\nstdout: %s\nstderr: %s", name, clientTimeout, stdout.Bytes(), tail(stderr.Bytes()))
	}
	if err != nil {
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", name, err, stdout.Bytes(), tail(stderr.Bytes()))
	}
	return stdout.Bytes()
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}

// describe logs what a client sent: every request's method and path, and for the scripted
// ones the headers and the body's shape, so that what real clients send is on record in -v.
func describe(t *testing.T, u *fakeupstream.Upstream) {
	t.Helper()
	for i, r := range u.Requests() {
		line := fmt.Sprintf("request %d: %s %s", i, r.Method, r.Path)
		if r.Query != "" {
			line += "?" + r.Query
		}
		line += fmt.Sprintf(" -> %d, step %d, body %d bytes", r.Status, r.Step, len(r.Body))
		t.Log(line)
		if len(r.Body) == 0 || !gjson.ValidBytes(r.Body) {
			continue
		}
		doc := gjson.ParseBytes(r.Body)
		var keys []string
		doc.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
		t.Logf("  body fields: %s", strings.Join(keys, " "))
		t.Logf("  model %s, stream %v, %d tools, %d system blocks, %d messages, %d input items, %d cache_control markers",
			doc.Get("model"), doc.Get("stream").Bool(), len(doc.Get("tools").Array()), len(doc.Get("system").Array()),
			len(doc.Get("messages").Array()), len(doc.Get("input").Array()), strings.Count(string(r.Body), `"cache_control"`))
		if i == 0 || r.Step == 0 {
			var hs []string
			for k, v := range r.Header {
				hs = append(hs, k+": "+strings.Join(v, ","))
			}
			sort.Strings(hs)
			t.Logf("  headers:\n    %s", strings.Join(hs, "\n    "))
		}
	}
}

// noViolations fails the test for any request the real API would have refused.
func noViolations(t *testing.T, u *fakeupstream.Upstream) {
	t.Helper()
	for _, v := range u.Violations() {
		t.Errorf("invalid request: %s", v)
	}
}

// prefixKept checks that each scripted request resends the previous one's history unchanged,
// item for item and byte for byte, so the provider's cached prefix grows turn over turn: the
// property a proxy that compacts must keep. The last slack items of the previous request may
// The cache_control markers of message blocks are left out of the comparison: Claude Code
// moves its newest one from the last block to the next turn's tool result, and the provider's
// cache matches the prefix whatever markers it carries.
func prefixKept(t *testing.T, u *fakeupstream.Upstream, field string) {
	t.Helper()
	reqs := u.Scripted()
	for k := 1; k < len(reqs); k++ {
		prev := gjson.GetBytes(reqs[k-1].Body, field).Array()
		cur := gjson.GetBytes(reqs[k].Body, field).Array()
		if len(cur) < len(prev) {
			t.Errorf("request %d sends %d %s, fewer than the %d before", k, len(cur), field, len(prev))
			continue
		}
		for i := range prev {
			if unmarked(prev[i]) != unmarked(cur[i]) {
				t.Errorf("request %d changed %s.%d of the request before: the cached prefix is lost", k, field, i)
				break
			}
		}
	}
}

// unmarked is a message or item without the cache_control markers of its content blocks.
func unmarked(m gjson.Result) string {
	raw := m.Raw
	for i, b := range m.Get("content").Array() {
		if b.Get("cache_control").Exists() {
			raw, _ = sjson.Delete(raw, fmt.Sprintf("content.%d.cache_control", i))
		}
	}
	return raw
}

// ranTools checks that the scripted requests carried, for each call id, a result holding the
// command's output: the client ran the tool and sent its result back.
func ranTools(t *testing.T, reqs []fakeupstream.Request, want map[string]string) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("no request was answered from the script")
	}
	last := reqs[len(reqs)-1]
	for id, out := range want {
		if res := toolResult(last, id); !strings.Contains(res, out) {
			t.Errorf("the last request's result for %s is %s, not the output %q: the tool round trip did not happen", id, res, out)
		}
	}
}

// toolResult is the text of the result for call id in a scripted request, as a client put it.
func toolResult(r fakeupstream.Request, id string) string {
	doc := gjson.ParseBytes(r.Body)
	var out string
	doc.Get("messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("tool_use_id").String() == id {
				out = b.Get("content").Raw
			}
			return true
		})
		return true
	})
	doc.Get("input").ForEach(func(_, it gjson.Result) bool {
		if it.Get("call_id").String() == id && strings.HasSuffix(it.Get("type").String(), "_output") {
			out = it.Get("output").Raw
		}
		return true
	})
	return out
}

func TestClaudeCode(t *testing.T) {
	claude := clientBinary(t, "node_modules/.bin/claude")
	const final = "ctxkit-final: the shell said hello"
	u := fakeupstream.New(
		fakeupstream.Turn{Tool: "Bash", Input: `{"command":"echo ctxkit-hello","description":"Print a greeting"}`},
		fakeupstream.Turn{Tool: "Bash", Input: `{"command":"echo ctxkit-again","description":"Print it again"}`},
		fakeupstream.Turn{Text: final},
	)
	srv := u.Start(t)
	home := t.TempDir()
	out := runClient(t, []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + proxyBaseURL(t, srv.URL),
		"ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}, home, claude, "-p", "Run the shell command echo ctxkit-hello and tell me what it printed.",
		"--output-format", "json", "--allowedTools", "Bash")
	describe(t, u)
	noViolations(t, u)

	if got := gjson.GetBytes(out, "result").String(); got != final {
		t.Errorf("claude -p result %q, want %q\nstdout: %s", got, final, out)
	}
	steps := u.Scripted()
	ranTools(t, steps, map[string]string{"toolu_fake_00": "ctxkit-hello", "toolu_fake_01": "ctxkit-again"})
	prefixKept(t, u, "messages")
	first := steps[0]
	if first.Path != "/v1/messages" || first.Header.Get("Anthropic-Version") == "" {
		t.Errorf("first turn: %s %s with headers %v", first.Method, first.Path, first.Header)
	}
	if first.Header.Get("X-Api-Key") != "REDACTED" {
		t.Errorf("the key did not reach the upstream as x-api-key: %v", first.Header)
	}
}

func TestCodex(t *testing.T) {
	codex := clientBinary(t, "node_modules/.bin/codex")
	const final = "ctxkit-final: the shell said hello"
	u := fakeupstream.New(
		// Codex 0.169 offers exec_command (no longer shell) to run a command.
		fakeupstream.Turn{Tool: "exec_command", Input: `{"cmd":"echo ctxkit-hello"}`},
		fakeupstream.Turn{Tool: "exec_command", Input: `{"cmd":"echo ctxkit-again"}`},
		fakeupstream.Turn{Text: final},
	)
	srv := u.Start(t)
	home := t.TempDir()
	codexHome, work := codexDirs(t, home)
	writeCodexConfig(t, codexHome, proxyBaseURL(t, srv.URL), "")
	out := runClient(t, []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "CTXKIT_FAKE_KEY=sk-test-not-a-key"},
		work, codex, "exec", "--skip-git-repo-check", "Run the shell command echo ctxkit-hello and tell me what it printed.")
	describe(t, u)
	noViolations(t, u)
	if !bytes.Contains(out, []byte(final)) {
		t.Errorf("codex exec did not print the final answer %q:\n%s", final, out)
	}
	ranTools(t, u.Scripted(), map[string]string{"call_fake_00": "ctxkit-hello", "call_fake_01": "ctxkit-again"})
	prefixKept(t, u, "input")
}

// sdkRun is what testdata/clients/*.cjs print: for each HTTP exchange, the bytes of the
// response body as the SDK's fetch received them, and what the SDK made of the conversation.
type sdkRun struct {
	Exchanges []struct {
		Path string `json:"path"`
		Body string `json:"body"`
	} `json:"exchanges"`
	Final string `json:"final"`
	Tools int    `json:"tools"`
}

// runSDK runs a node script driving an SDK against the fake upstream for several tool turns.
func runSDK(t *testing.T, script, pkg string, u *fakeupstream.Upstream, args ...string) sdkRun {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	clientPath(t, filepath.Join("node_modules", pkg, "package.json"))
	srv := u.Start(t)
	abs, err := filepath.Abs(filepath.Join("testdata", "clients", script))
	if err != nil {
		t.Fatal(err)
	}
	out := runClient(t, []string{"HOME=" + t.TempDir(), "NODE_PATH=" + filepath.Join(clientsDir(), "node_modules"),
		"CTXKIT_BASE_URL=" + proxyBaseURL(t, srv.URL)}, t.TempDir(), node, append([]string{abs}, args...)...)
	var run sdkRun
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("%s printed %s: %v", script, out, err)
	}
	noViolations(t, u)
	return run
}

// sameBytes checks that the SDK received, exchange by exchange, exactly the bytes the upstream
// sent: a proxy between them must stream responses back unchanged.
func sameBytes(t *testing.T, u *fakeupstream.Upstream, run sdkRun) {
	t.Helper()
	reqs := u.Requests()
	if len(reqs) != len(run.Exchanges) {
		t.Fatalf("the upstream saw %d requests, the SDK made %d", len(reqs), len(run.Exchanges))
	}
	for i, r := range reqs {
		if got := run.Exchanges[i].Body; got != string(r.Response) {
			t.Errorf("exchange %d (%s): the SDK received other bytes than the upstream sent\nsent: %q\ngot:  %q", i, r.Path, r.Response, got)
		}
	}
}

// sdkScript is a conversation of several tool calls then a final text.
func sdkScript(tool string) []fakeupstream.Turn {
	return []fakeupstream.Turn{
		{Tool: tool, Input: `{"city":"Paris"}`},
		{Tool: tool, Input: `{"city":"Lyon"}`},
		{Tool: tool, Input: `{"city":"Nice"}`},
		{Text: "ctxkit-final: sunny in all three"},
	}
}

func checkSDKRun(t *testing.T, u *fakeupstream.Upstream, run sdkRun, history string) {
	t.Helper()
	sameBytes(t, u, run)
	prefixKept(t, u, history)
	if run.Final != "ctxkit-final: sunny in all three" || run.Tools != 3 {
		t.Errorf("the SDK ended with %q after %d tool calls", run.Final, run.Tools)
	}
	var steps []int
	for _, r := range u.Requests() {
		steps = append(steps, r.Step)
	}
	if !slices.Equal(steps, []int{0, 1, 2, 3}) {
		t.Errorf("scripted steps %v, want [0 1 2 3]", steps)
	}
}

func TestAnthropicSDK(t *testing.T) {
	u := fakeupstream.New(sdkScript("get_weather")...)
	checkSDKRun(t, u, runSDK(t, "anthropic.cjs", "@anthropic-ai/sdk", u), "messages")
}

func TestOpenAISDKResponses(t *testing.T) {
	u := fakeupstream.New(sdkScript("get_weather")...)
	checkSDKRun(t, u, runSDK(t, "openai.cjs", "openai", u, "responses"), "input")
}

func TestOpenAISDKChat(t *testing.T) {
	u := fakeupstream.New(sdkScript("get_weather")...)
	checkSDKRun(t, u, runSDK(t, "openai.cjs", "openai", u, "chat"), "messages")
}

// codexDirs makes the Codex home and the working folder of a real-client test under home.
func codexDirs(t *testing.T, home string) (codexHome, work string) {
	t.Helper()
	codexHome, work = filepath.Join(home, "codex"), filepath.Join(home, "work")
	for _, d := range []string{codexHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return codexHome, work
}

// writeCodexConfig points Codex at baseURL (the API's /v1 is added) as the provider
// "fake", its key in CTXKIT_FAKE_KEY; extra is more TOML lines of that provider.
func writeCodexConfig(t *testing.T, codexHome, baseURL, extra string) {
	t.Helper()
	config := fmt.Sprintf(`model = "gpt-5-codex"
model_provider = "fake"

[model_providers.fake]
name = "fake upstream"
base_url = %q
wire_api = "responses"
env_key = "CTXKIT_FAKE_KEY"
`, baseURL+"/v1") + extra
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
}
