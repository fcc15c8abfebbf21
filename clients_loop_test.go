package ctxkit_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/fakeupstream"
	"github.com/ctxkit/ctxkit/internal/proxy"
	"github.com/ctxkit/ctxkit/internal/summarize"
)

// The live loop with real clients (issue 35): Claude Code, Codex and the two SDKs run a
// session of 12 tool round trips through ctx-proxy and the default pipeline, at a window
// small enough that the tiers act (ctx-summarize among them), and the proxy's log shows
// the loop cache-stable:
//   - every request of the conversation after the first extends the last (extended);
//   - the tiers act (ctx-summarize for Claude Code, Codex and the Anthropic SDK; for the
//     OpenAI SDKs, whose results are no reads or searches, ctx-snip's clearing of old
//     results keeps the request under ctx-summarize's trigger); ctx-summarize never fires
//     on two requests in a row, and leaves the request below its trigger;
//   - a request where no tier fired reuses every message the request before it sent.

// loopTurns is how many tool round trips each client makes.
const loopTurns = 12

// checkLoop holds the log lines of one client's session to the loop's promises. window
// is the effective window the stages measured against (--reserve 0).
func checkLoop(t *testing.T, recs []proxy.Record, window int) {
	t.Helper()
	// The session's conversation is the one with most requests (a client's side requests,
	// a title or a quota check, are conversations of their own).
	count := map[string]int{}
	for _, r := range recs {
		count[r.Conversation]++
	}
	main := ""
	for c, n := range count {
		if n > count[main] {
			main = c
		}
	}
	var conv []proxy.Record
	for _, r := range recs {
		if r.Conversation == main {
			conv = append(conv, r)
		}
	}
	if len(conv) < loopTurns {
		t.Fatalf("the session's conversation has %d requests, want at least %d", len(conv), loopTurns)
	}
	summaries, acted, lastFired := 0, 0, -2
	for i, r := range conv {
		fired := map[string]bool{}
		for _, f := range r.Tiers {
			fired[f.Tool] = true
		}
		t.Logf("request %2d: %6d -> %6d tokens (%3.0f%%), extended %-5v, %2d of %2d messages reused, fired %v",
			i, r.TokensIn, r.TokensSent, 100*float64(r.TokensSent)/float64(window), r.Extended, r.CachedMessages, r.MessagesSent, r.Tiers)
		if r.Fallback != "" {
			t.Errorf("request %d fell back: %s", i, r.Fallback)
		}
		if i > 0 && !r.Extended {
			t.Errorf("request %d does not extend the one before", i)
		}
		if i > 0 && len(r.Tiers) == 0 && r.CachedMessages != conv[i-1].MessagesSent {
			t.Errorf("request %d changed nothing but reuses %d of the %d messages sent before it", i, r.CachedMessages, conv[i-1].MessagesSent)
		}
		if fired["ctx-snip"] || fired["ctx-budget"] || fired["ctx-trim"] {
			acted++
		}
		if fired["ctx-summarize"] {
			summaries++
			if lastFired == i-1 {
				t.Errorf("ctx-summarize fired on requests %d and %d in a row", i-1, i)
			}
			lastFired = i
			if r.TokensSent > int(summarize.Defaults().Trigger*float64(window)) {
				t.Errorf("request %d: ctx-summarize left %d tokens, above its trigger (%.0f%% of %d)", i, r.TokensSent, 100*summarize.Defaults().Trigger, window)
			}
		}
	}
	if summaries == 0 && acted == 0 {
		t.Errorf("no lossy tier fired: the window (%d) is too big for the test", window)
	}
}

// loopEnv is the stages' environment for a loop test: the window, no reserve.
func loopEnv(window int) map[string]string {
	return map[string]string{"CTX_WINDOW": strconv.Itoa(window), "CTX_RESERVE": "0", "CTX_CACHE_DIR": "off"}
}

func TestClaudeCodeLoop(t *testing.T) {
	claude := clientBinary(t, "node_modules/.bin/claude")
	var turns []fakeupstream.Turn
	for i := range loopTurns {
		turns = append(turns, fakeupstream.Turn{Tool: "Bash", Input: fmt.Sprintf(`{"command":"seq %d %d","description":"Count"}`, i*10000, i*10000+900)})
	}
	turns = append(turns, fakeupstream.Turn{Text: "ctxkit-final: counted"})
	u := fakeupstream.New(turns...)
	srv := u.Start(t)
	// Claude Code's system prompt and tools are about 22K tokens; each result about 5.8K
	// (digits: under 3 bytes a token), a tenth of the window.
	const window = 60000
	url, records := startProxy(t, srv.URL, loopEnv(window))
	home := t.TempDir()
	runClient(t, []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}, home, claude,
		"-p", "Run the counting commands you are given, one at a time.", "--output-format", "json", "--allowedTools", "Bash")
	noViolations(t, u)
	waitRecords(t, records, len(u.Requests()))
	checkLoop(t, records(), window)
}

func TestCodexLoop(t *testing.T) {
	codex := clientBinary(t, "node_modules/.bin/codex")
	var turns []fakeupstream.Turn
	for i := range loopTurns {
		turns = append(turns, fakeupstream.Turn{Tool: "exec_command", Input: fmt.Sprintf(`{"cmd":"seq %d %d"}`, i*10000, i*10000+900)})
	}
	turns = append(turns, fakeupstream.Turn{Text: "ctxkit-final: counted"})
	u := fakeupstream.New(turns...)
	srv := u.Start(t)
	// Codex's instructions and tools are about 8K tokens.
	const window = 24000
	url, records := startProxy(t, srv.URL, loopEnv(window))
	home := t.TempDir()
	codexHome, work := codexDirs(t, home)
	writeCodexConfig(t, codexHome, url, "")
	runClient(t, []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "CTXKIT_FAKE_KEY=sk-test-not-a-key"},
		work, codex, "exec", "--skip-git-repo-check", "Run the counting commands you are given, one at a time.")
	noViolations(t, u)
	waitRecords(t, records, len(u.Requests()))
	checkLoop(t, records(), window)
}

// sdkLoop runs an SDK script for loopTurns tool round trips with padded results.
func sdkLoop(t *testing.T, script, pkg string, window int, args ...string) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	clientPath(t, filepath.Join("node_modules", pkg, "package.json"))
	var turns []fakeupstream.Turn
	for i := range loopTurns {
		turns = append(turns, fakeupstream.Turn{Tool: "get_weather", Input: fmt.Sprintf(`{"city":"city-%d"}`, i)})
	}
	turns = append(turns, fakeupstream.Turn{Text: "ctxkit-final: sunny everywhere"})
	u := fakeupstream.New(turns...)
	srv := u.Start(t)
	url, records := startProxy(t, srv.URL, loopEnv(window))
	abs, err := filepath.Abs(filepath.Join("testdata", "clients", script))
	if err != nil {
		t.Fatal(err)
	}
	runClient(t, []string{"HOME=" + t.TempDir(), "NODE_PATH=" + filepath.Join(clientsDir(), "node_modules"),
		"CTXKIT_BASE_URL=" + url, "CTXKIT_TURNS=" + strconv.Itoa(loopTurns+1), "CTXKIT_PAD=4000"}, t.TempDir(), node, append([]string{abs}, args...)...)
	noViolations(t, u)
	waitRecords(t, records, len(u.Requests()))
	checkLoop(t, records(), window)
}

func TestAnthropicSDKLoop(t *testing.T) { sdkLoop(t, "anthropic.cjs", "@anthropic-ai/sdk", 9000) }
func TestOpenAISDKResponsesLoop(t *testing.T) {
	sdkLoop(t, "openai.cjs", "openai", 9000, "responses")
}
func TestOpenAISDKChatLoop(t *testing.T) { sdkLoop(t, "openai.cjs", "openai", 9000, "chat") }

// waitRecords waits for the proxy to have logged n requests (a line is written once its
// response has gone back, a little after the client has it), at most 10 seconds.
func waitRecords(t *testing.T, records func() []proxy.Record, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(records()) >= n {
			return
		}
	}
}
