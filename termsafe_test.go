package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/sessions"
)

// DESIGN §6: everything shown on a terminal that came from a transcript, a file name or a
// peer has its control characters escaped. A web page or file an agent read carries these
// into the transcript; a person then runs ctx-count on it.

// hostile is every sequence at once: a title set (OSC 0), a clipboard write (OSC 52), the
// screen cleared, a link (OSC 8), a forged line, C1 controls, a bidirectional override.
const hostile = "\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\" +
	"\nforged line\rover\u009b2J\u009d0;t\u009c\u202eexe.txt\u202c\u2066x\u2069"

// hostileName is a file name with the same. A file name that is not UTF-8 cannot be named
// on the command line (kong makes its bytes U+FFFD): foundName, a name ctx-count --sessions
// and --latest find in a folder, has a raw C1 byte.
const (
	hostileName = "s\x1b]0;pwned\x07\x1b[2J\nforged\r\u009b2J\u202e.json"
	foundName   = "s\x1b]0;pwned\x07\x1b[2J\nforged\r\x9b2J\u202e.jsonl"
)

// terminalTTY is a stdout or stderr that says it is a terminal.
type terminalTTY struct{ bytes.Buffer }

func (*terminalTTY) IsTerminal() bool { return true }

// leak names the first thing in out a terminal would act on, "" when there is none: a
// control character but newline, a C1 control (as UTF-8 or a lone byte), a byte that is not
// UTF-8, a bidirectional control, or a line the hostile newline forged.
func leak(out string) string {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("byte %#x at %d", out[i], i)
		case r < 0x20 && r != '\n', r >= 0x7f && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at %d", r, i)
		}
		i += size
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "forged") {
			return "a forged line: " + line
		}
	}
	return ""
}

// hostileDoc is an Anthropic conversation with the hostile text everywhere a person's view
// shows one: the model, tool names (an MCP server's too), tool ids, file paths read, the
// arguments of calls and the text of results (previews).
func hostileDoc(t *testing.T) []byte {
	t.Helper()
	big := strings.Repeat("output line of the tool "+hostile+"\n", 200)
	type m = map[string]any
	call := func(id, name string, input m) m {
		return m{"role": "assistant", "content": []m{{"type": "tool_use", "id": id, "name": name, "input": input}}}
	}
	result := func(id, text string) m {
		return m{"role": "user", "content": []m{{"type": "tool_result", "tool_use_id": id, "content": text}}}
	}
	doc := m{
		"model":      "claude-sonnet-4-5" + hostile,
		"max_tokens": 1024,
		"system":     "You are an agent. " + hostile,
		"messages": []m{
			{"role": "user", "content": hostile + " fix the bug"},
			call("toolu_1"+hostile, "Read", m{"file_path": "/src/" + hostile + "/a.go"}),
			result("toolu_1"+hostile, big),
			call("toolu_2", "Bash"+hostile, m{"command": "grep -r " + hostile}),
			result("toolu_2", big),
			call("toolu_3", "mcp__evil"+hostile+"__fetch", m{"url": "https://x/" + hostile}),
			result("toolu_3", big),
			call("toolu_4", "Read", m{"file_path": "/src/" + hostile + "/a.go"}),
			result("toolu_4", big),
			{"role": "assistant", "content": "Done. " + hostile},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileSession is a Claude Code log with the hostile text in its tool names, ids,
// arguments and results, and old time stamps (ctx-snip finds the results idle).
func hostileSession(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	parent := any(nil)
	at := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	add := func(kind, uuid string, msg map[string]any) {
		rec := map[string]any{"parentUuid": parent, "isSidechain": false, "type": kind, "uuid": uuid,
			"timestamp": at.Format(time.RFC3339), "message": msg}
		at = at.Add(10 * time.Second)
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		parent = uuid
	}
	add("user", "u0", map[string]any{"role": "user", "content": "go " + hostile})
	for i := range 4 {
		id := fmt.Sprintf("toolu_%d%s", i, hostile)
		add("assistant", fmt.Sprintf("a%d", i), map[string]any{"id": fmt.Sprintf("msg_%d", i), "role": "assistant",
			"model": "claude-sonnet-4-5" + hostile,
			"usage": map[string]any{"input_tokens": 1000 * (i + 1), "output_tokens": 10},
			"content": []map[string]any{{"type": "tool_use", "id": id, "name": "Bash" + hostile,
				"input": map[string]any{"command": "make " + hostile}}}})
		add("user", fmt.Sprintf("r%d", i), map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result",
			"tool_use_id": id, "content": strings.Repeat(hostile+" step output\n", 300)}}})
	}
	add("assistant", "end", map[string]any{"id": "msg_end", "role": "assistant", "content": []map[string]any{{"type": "text", "text": "Built. " + hostile}}})
	return b.Bytes()
}

func TestTerminalOutputEscaped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows takes no control characters in file names")
	}
	found := foundName
	if runtime.GOOS != "linux" {
		found = hostileName + "l" // (APFS takes no file name that is not UTF-8)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	doc := write(hostileName, hostileDoc(t))
	other := write("other"+hostileName, hostileDoc(t))
	session := write("session"+hostileName+"l", hostileSession(t))
	// A tool_use without its result: ctx-repair --check names the call's id.
	broken := write("broken"+hostileName, []byte(`{"messages":[{"role":"user","content":"hi"},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_\u001b]0;pwned\u0007","name":"Bash\u001b[2J","input":{}}]},`+
		`{"role":"user","content":"next \u009b2J"}]}`))
	notDoc := write("notdoc"+hostileName, []byte("{\"messages\": 3}"))
	notUTF8 := write("text"+hostileName+".txt", []byte("plain \xff text"))

	// Sessions where ctx-count --sessions and --latest look: the project of the working
	// directory, in the configuration folder CLAUDE_CONFIG_DIR names.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("claude", "projects", sessions.Mangle(wd), found), hostileSession(t))
	store := filepath.Join(dir, "store")
	env := map[string]string{"HOME": filepath.Join(dir, "home"), "CLAUDE_CONFIG_DIR": filepath.Join(dir, "claude"),
		"NO_COLOR": "1", "COLUMNS": "120", "CTX_CACHE_DIR": filepath.Join(dir, "cache"),
		"XDG_STATE_HOME": filepath.Join(dir, "state"), "XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	getenv := func(k string) string { return env[k] }

	// A peer: a server answering ctx-proxy --status with a hostile conversation key.
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"conversations": []map[string]any{{
			"conversation": "key " + hostile, "updated": time.Now(), "requests": 1, "tokens_in": 10, "tokens_sent": 5}}})
	}))
	defer peer.Close()
	peerAddr := peer.Listener.Addr().(*net.TCPAddr).String()

	// ctx-persist --list needs results stored: offload the session's.
	var out, errOut bytes.Buffer
	if code := mains["ctx-persist"]([]string{"--threshold", "1KB", "--store", store, "-o", filepath.Join(dir, "persisted.jsonl"), session},
		nil, &out, &errOut, getenv); code != 0 {
		t.Fatalf("ctx-persist: exit %d: %s", code, errOut.String())
	}
	// ctx-recall shows what the store holds: the first item's reference
	index, err := os.ReadFile(filepath.Join(store, "index.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var first struct{ Hash string }
	if err := json.Unmarshal(index[:bytes.IndexByte(index, '\n')], &first); err != nil || len(first.Hash) != 64 {
		t.Fatalf("index line: %v", err)
	}
	ref := first.Hash[:12]

	for _, c := range []struct {
		name string
		tool string
		args []string
		code int
		want string // a word the output must show, so the view was drawn
	}{
		{"count picture", "ctx-count", []string{"--window", "200000", doc}, 0, "Top tool consumers"},
		{"count picture of a session", "ctx-count", []string{"--window", "200000", session}, 0, "Largest messages"},
		{"count --pass picture on stderr", "ctx-count", []string{"--pass", "--window", "200000", doc}, 0, "Top tool consumers"},
		{"count --vs", "ctx-count", []string{"--vs", other, doc}, 0, "before"},
		{"count --text", "ctx-count", []string{"--text", doc, notUTF8}, 0, "text"},
		{"count --sessions", "ctx-count", []string{"--sessions", "--window", "200000"}, 0, "ACTIVE"},
		{"count --latest", "ctx-count", []string{"--latest", "--window", "200000"}, 0, "--latest"},
		{"replay header", "ctx-replay", []string{"--window", "200000", doc}, 0, "requests through"},
		{"proxy --status", "ctx-proxy", []string{"--status", "--listen", peerAddr}, 0, "conversation"},
		{"repair --check", "ctx-repair", []string{"--check", broken}, 1, "broken"},
		{"persist --list", "ctx-persist", []string{"--list", "--store", store}, 0, "TOOL"},
		{"recall search", "ctx-recall", []string{"--store", store, "--regexp", "."}, 0, "stored match"},
		{"recall --meta", "ctx-recall", []string{"--store", store, "--meta", ref}, 0, "tool call id"},
		{"recall --outline", "ctx-recall", []string{"--store", store, "--outline", ref}, 0, "read a part"},
		{"recall --read on a terminal", "ctx-recall", []string{"--store", store, "--read", ref}, 0, ""},
		{"snip --dry-run", "ctx-snip", []string{"--dry-run", "--window", "20000", "--now", "2026-03-05T00:00:00Z", session}, 0, "would clear"},
		{"trim --dry-run", "ctx-trim", []string{"--dry-run", "--max-tokens", "3000", doc}, 0, "would drop"},
		{"error naming a file", "ctx-count", []string{notDoc}, 3, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr terminalTTY
			code := mains[c.tool](c.args, nil, &stdout, &stderr, getenv)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), c.want) {
				t.Errorf("no %q in the output:\n%s%s", c.want, stdout.String(), stderr.String())
			}
			for _, o := range []struct{ name, text string }{{"stdout", stdout.String()}, {"stderr", stderr.String()}} {
				if o.name == "stdout" && slices.Contains(c.args, "--pass") {
					// stdout is the document, JSON pretty-printed on a terminal: not
					// escaped (JSON output is unchanged, and JSON escapes C0 itself)
					continue
				}
				if l := leak(o.text); l != "" {
					t.Errorf("%s reaches the terminal raw: %s\n%q", o.name, l, o.text)
				}
			}
		})
	}

	// JSON output is unchanged: the values as the transcript has them.
	var js bytes.Buffer
	if code := mains["ctx-count"]([]string{"--json", "--window", "200000", doc}, nil, &js, &errOut, getenv); code != 0 {
		t.Fatalf("ctx-count --json: exit %d", code)
	}
	var r struct {
		File string `json:"file"`
	}
	if err := json.Unmarshal(js.Bytes(), &r); err != nil || r.File != doc {
		t.Errorf("--json: %v, file %q", err, r.File)
	}
}
