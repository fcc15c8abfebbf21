package proxy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/recall"
	"github.com/ctxkit/ctxkit/internal/store"
)

// TestFirstRequestPacks: the first request of a resumed long conversation may clear more
// than 8 results at once; ctx-snip, run in process with the store's syncing left to the
// proxy, then packs them. What the model receives names ctx-recall, not a file (a packed
// text has none), and once the response has gone back (store.SyncWritten) another
// process reads each text from the pack: store.Get and ctx-recall --read with the path the
// placeholder gives.
func TestFirstRequestPacks(t *testing.T) {
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, "ctx-snip --idle 0 --trigger 0 --target 0 --keep 0 --clear-at-least 0 --repay 0", t.TempDir())
	s.Store = s.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
	msgs := []string{userText("resume the work")}
	outputs := map[string]string{}
	for i := range 12 {
		id := fmt.Sprintf("tu_%d", i)
		outputs[id] = bigOutput(id)
		msgs = append(msgs, toolUse(id, "make step "+id), toolResult(id, outputs[id]))
	}
	msgs = append(msgs, userText("go on"))
	hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": "resumed"}
	if resp, body := post(t, px.URL+"/v1/messages", conversation(msgs...), hdr); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	waitLog(t, log, 2) // the record is written once finish (SyncWritten) has run
	placeholder := regexp.MustCompile(`^\[ctx-snip: result of Bash\("make step (tu_[0-9]+)"\) cleared \([0-9,]+ tokens\); .* — re-run the call or read it with: ctx-recall --read (\S+/[0-9a-f]{2}/([0-9a-f]{64}))\]$`)
	sent := up.last().Body
	cleared := 0
	for _, m := range gjson.GetBytes(sent, "messages").Array() {
		for _, b := range m.Get("content").Array() {
			if b.Get("type").String() != "tool_result" {
				continue
			}
			text := b.Get("content").String()
			p := placeholder.FindStringSubmatch(text)
			if p == nil {
				if strings.Contains(text, "[ctx-snip") {
					t.Errorf("a placeholder the model cannot follow: %s", text)
				}
				continue
			}
			cleared++
			id, path, h := p[1], p[2], p[3]
			if _, err := os.Lstat(path); err == nil {
				t.Errorf("%s: a file of its own at %s: not packed, the case is not tested", id, path)
			}
			st, err := store.Open(filepath.Dir(filepath.Dir(path)))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := st.Get(h); err != nil || string(got) != outputs[id] {
				t.Errorf("%s: Get %s: %v (%d bytes, want %d)", id, h[:12], err, len(got), len(outputs[id]))
			}
			st.Close()
			var out, errb bytes.Buffer
			if code := recall.Main([]string{"--read", path}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 || out.String() != outputs[id] {
				t.Errorf("%s: ctx-recall --read %s: exit %d, %s (%d bytes, want %d)", id, path, code, errb.String(), out.Len(), len(outputs[id]))
			}
		}
	}
	if cleared <= 8 {
		t.Fatalf("%d results cleared, want more than 8 (a pack)", cleared)
	}
	packs, _ := filepath.Glob(filepath.Join(s.Store, store.PacksDir, "*.pack"))
	if len(packs) != 1 {
		t.Errorf("%d packs in the store, want 1", len(packs))
	}
	if err := store.SyncWritten(); err != nil {
		t.Errorf("SyncWritten after the request: %v", err)
	}
}
