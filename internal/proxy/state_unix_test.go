//go:build unix

package proxy

import (
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStateFIFO: a FIFO where a conversation's state file would be does not hang it.
func TestStateFIFO(t *testing.T) {
	up := newUpstream(t)
	dir := t.TempDir()
	body := conversation(userText("hello"))
	if err := syscall.Mkfifo(stateFile(dir, keyOf(t, body)), 0o600); err != nil {
		t.Skip(err)
	}
	_, px, log := proxyFor(t, up.URL, "", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, px.URL+"/v1/messages", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// Let the stuck reader go, so that the server can close.
		if f, err := os.OpenFile(stateFile(dir, keyOf(t, body)), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("the request hung on the FIFO: %v", err)
	}
	resp.Body.Close()
	if got := string(up.last().Body); got != body {
		t.Errorf("sent %s", got)
	}
	if l := waitLog(t, log, 1); !strings.Contains(l, "state ignored") {
		t.Errorf("the log does not say the state was ignored: %s", l)
	}
}
