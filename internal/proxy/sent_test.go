package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// claudeCodeSystem is how Claude Code names its working directory in its system prompt.
const claudeCodeSystem = `[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Here is useful information about the environment you are running in:\n<env>\nPrimary working directory: /home/me/src/app\nIs directory a git repo: Yes\n</env>"}]`

// TestSentDocument: once a request has been answered, its conversation's last request as
// sent is in the state directory, byte for byte the body forwarded upstream, described
// (session, working directory, tools, tokens, window), and ctx-count reads it as the
// request it is: the system prompt and the tools counted with the messages.
func TestSentDocument(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", dir)
	body := strings.Replace(conversation(userText("go"), toolUse("a", "ls"), toolResult("a", bigOutput("a"))),
		`[{"type":"text","text":"You are a coding agent."}]`, claudeCodeSystem, 1)
	post(t, px.URL+"/v1/messages", body, map[string]string{"X-Claude-Code-Session-Id": "5f0c7c1e-0000-4000-8000-000000000001"})
	waitLog(t, log, 1)

	sent := convstate.ReadSent(dir)
	if len(sent) != 1 {
		t.Fatalf("%d documents as sent, want 1", len(sent))
	}
	s := sent[0]
	got, err := convstate.SentDocument(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	forwarded := up.last().Body
	if !bytes.Equal(got, forwarded) {
		t.Fatalf("the document as sent is not the body forwarded:\n%s\n---\n%s", got, forwarded)
	}
	if bytes.Equal(forwarded, []byte(body)) {
		t.Fatalf("the pipeline changed nothing: the test shows nothing")
	}
	if s.Session != "5f0c7c1e-0000-4000-8000-000000000001" || s.Cwd != "/home/me/src/app" || s.Format != "anthropic" ||
		s.Tools != 1 || s.Messages != 3 || s.Model != "claude-sonnet-4-5" || s.Tokens <= 0 || s.Window != 180000 ||
		s.Answered.IsZero() || s.Answered.Before(s.Received) {
		t.Errorf("described as %+v", s)
	}

	var stdout, stderr bytes.Buffer
	env := map[string]string{"CTX_CACHE_DIR": "off"}
	if code := count.Main([]string{"--json"}, bytes.NewReader(got), &stdout, &stderr, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("ctx-count: exit %d: %s", code, stderr.String())
	}
	var r struct {
		Format    string `json:"format"`
		Tokens    int    `json:"tokens"`
		Effective int    `json:"effective_window"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("ctx-count: %v\n%s", err, stdout.String())
	}
	if r.Format != "anthropic" || r.Tokens <= 0 || r.Effective != s.Window {
		t.Errorf("ctx-count reads it as %s, %d tokens of %d; the proxy counted %d of %d\n%s", r.Format, r.Tokens, r.Effective, s.Tokens, s.Window, stdout.String())
	}
}

// TestStatusUtilization: --status gives each conversation's last request as sent against
// its model's effective window, in the JSON and in the table.
func TestStatusUtilization(t *testing.T) {
	up := newUpstream(t)
	_, px, log := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	post(t, px.URL+"/v1/messages", conversation(userText("go"), toolUse("a", "ls"), toolResult("a", bigOutput("a"))), nil)
	waitLog(t, log, 1)
	addr := strings.TrimPrefix(px.URL, "http://")
	getenv := func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--status", "--listen", addr}, nil, &stdout, &stderr, getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var st statusPage
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || len(st.Conversations) != 1 {
		t.Fatalf("status %s: %v", stdout.String(), err)
	}
	c := st.Conversations[0]
	want := float64(c.LastSent) / 180000
	if c.LastSent <= 0 || c.LastSent != c.TokensSent || c.Window != 180000 || c.Model != "claude-sonnet-4-5" ||
		c.Utilization < want-0.0001 || c.Utilization > want+0.0001 {
		t.Errorf("status %+v, want utilization %.4f", c, want)
	}
	var tty ttyBuffer
	if code := Main([]string{"--status", "--listen", addr}, nil, &tty, &stderr, getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{"last sent", "window %", percent(c.LastSent, c.Window)} {
		if !strings.Contains(tty.String(), w) {
			t.Errorf("the table has no %q:\n%s", w, tty.String())
		}
	}
	t.Logf("--status:\n%s", tty.String())
}

// TestCwdOf: the working directory as Claude Code (older and newer system prompts) and
// Codex (environment_context in a user message) name it; none where none is named.
func TestCwdOf(t *testing.T) {
	for _, c := range []struct {
		body   string
		format transcript.Format
		want   string
	}{
		{`{"system":` + claudeCodeSystem + `,"messages":[]}`, transcript.Anthropic, "/home/me/src/app"},
		{`{"system":"x\n<env>\nWorking directory: /srv/old app/\nPlatform: linux\n</env>","messages":[]}`, transcript.Anthropic, "/srv/old app"},
		{`{"instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/me/proj</cwd>\n</environment_context>"}]}]}`,
			transcript.Responses, "/home/me/proj"},
		{`{"messages":[{"role":"user","content":"Working directory: relative/path"}]}`, transcript.OpenAI, ""},
		{`{"messages":[{"role":"user","content":"hello"}]}`, transcript.Anthropic, ""},
		// Each form the expressions know, past the words looked for first (cwdNeeds).
		{`{"system":"a\n - Primary working directory: /p/q\n","messages":[]}`, transcript.Anthropic, "/p/q"},
		{`{"system":"a\nCurrent working directory:\t/c\n","messages":[]}`, transcript.Anthropic, "/c"},
		{`{"messages":[{"role":"user","content":"x <cwd> /t/u </cwd>"}]}`, transcript.OpenAI, "/t/u"},
	} {
		if got := cwdOf([]byte(c.body), c.format); got != c.want {
			t.Errorf("cwdOf(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}

// cwdOf is cwdIn of a whole body.
func cwdOf(body []byte, format transcript.Format) string {
	doc := gjson.ParseBytes(body)
	return cwdIn([]gjson.Result{doc.Get("system"), doc.Get("instructions")}, doc.Get(arrayKey(format)).Array())
}

// TestSentEachTurn: turn after turn, with the pipeline and without it, and for a client
// that indents its JSON, the request read from the state (what ctx-count --latest shows)
// is byte for byte the body forwarded for the conversation's last request.
func TestSentEachTurn(t *testing.T) {
	for _, c := range []struct {
		name, pipe string
		indent     bool
	}{{"no pipe", "", false}, {"piped", "ctx-budget --cap 500 --keep-recent 0", false}, {"indented", "", true}} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t)
			dir := t.TempDir()
			_, px, log := proxyFor(t, up.URL, c.pipe, dir)
			msgs := []string{userText("go")}
			for turn := 0; turn < 3; turn++ {
				id := fmt.Sprint("t", turn)
				msgs = append(msgs, toolUse(id, "ls"), toolResult(id, bigOutput(id)))
				body := conversation(msgs...)
				if c.indent {
					var buf bytes.Buffer
					json.Indent(&buf, []byte(body), "", "  ")
					body = buf.String()
				}
				post(t, px.URL+"/v1/messages", body, map[string]string{"X-Claude-Code-Session-Id": "each"})
				waitLog(t, log, 2*(turn+1)) // (a JSON line and a short one a request)
				sent := convstate.ReadSent(dir)
				if len(sent) != 1 {
					t.Fatalf("turn %d: %d requests as sent", turn, len(sent))
				}
				got, err := convstate.SentDocument(sent[0].Path)
				if err != nil || !bytes.Equal(got, up.last().Body) {
					t.Fatalf("turn %d: read %q, %v\nforwarded %q", turn, got, err, up.last().Body)
				}
			}
		})
	}
}
