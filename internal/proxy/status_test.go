package proxy

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// ttyBuffer is a stdout that says it is a terminal.
type ttyBuffer struct{ bytes.Buffer }

func (*ttyBuffer) IsTerminal() bool { return true }

// TestStatusFlag: ctx-proxy --status reads a running proxy's /ctxkit/status: the JSON when
// piped, a table on a terminal.
func TestStatusFlag(t *testing.T) {
	up := newUpstream(t)
	_, px, _ := proxyFor(t, up.URL, "ctx-budget --cap 500 --keep-recent 0", t.TempDir())
	post(t, px.URL+"/v1/messages", conversation(userText("go"), toolUse("a", "ls"), toolResult("a", bigOutput("a"))), nil)
	addr := strings.TrimPrefix(px.URL, "http://")
	var st statusPage
	var stdout, stderr bytes.Buffer
	// The totals are added once the response has gone back: wait for them.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		stdout.Reset()
		stderr.Reset()
		if code := Main([]string{"--status", "--listen", addr}, nil, &stdout, &stderr, func(string) string { return "" }); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
			t.Fatalf("piped --status is not JSON: %v\n%s", err, stdout.String())
		}
		if len(st.Conversations) == 1 && st.Conversations[0].Requests == 1 {
			break
		}
	}
	if len(st.Conversations) != 1 || st.Conversations[0].Requests != 1 || st.Conversations[0].Saved <= 0 || stderr.Len() != 0 {
		t.Fatalf("status %+v, stderr %q", st, stderr.String())
	}

	var tty ttyBuffer
	stderr.Reset()
	if code := Main([]string{"--status", "--listen", addr}, nil, &tty, &stderr, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := tty.String()
	for _, want := range []string{"conversation", "saved", st.Conversations[0].Conversation, "1 conversations"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
	t.Logf("--status on a terminal:\n%s", out)
	if strings.HasPrefix(out, "{") {
		t.Errorf("a terminal got JSON:\n%s", out)
	}
}

// TestStatusFlagNoProxy: --status where nothing answers is a runtime failure with a hint;
// where something else answers, too.
func TestStatusFlagNoProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	other := newUpstream(t) // answers every path with a message, not a status page
	for _, addr := range []string{closed, strings.TrimPrefix(other.URL, "http://")} {
		var stdout, stderr bytes.Buffer
		code := Main([]string{"--status", "--listen", addr}, nil, &stdout, &stderr, func(string) string { return "" })
		if code != 4 || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q", addr, code, stdout.String())
		}
		if !strings.HasPrefix(stderr.String(), "ctx-proxy: error: ") || !strings.Contains(stderr.String(), "\nhint: start one with `ctx-proxy --listen "+addr+"`") {
			t.Errorf("%s: stderr %q", addr, stderr.String())
		}
	}
}
