package proxy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/store"
)

// syncPipe clears every tool result to the store at each request: each request of a
// conversation whose new turns bring new results names new files there.
const syncPipe = "ctx-snip --idle 0 --trigger 0 --target 0 --keep 0 --clear-at-least 0 --repay 0"

// TestStoreSyncedAfterEachRequest: ctx-proxy's tiers name the store's files at once and
// leave their syncing to the proxy, which syncs (store.SyncWritten) once the response has
// gone back. After each request of a conversation, what it wrote to the store is synced:
// the sync ran, found the request's files to sync, ran after the client had its response,
// and left nothing unsynced.
func TestStoreSyncedAfterEachRequest(t *testing.T) {
	store.SyncWritten() // what other tests left
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, syncPipe, t.TempDir())
	s.Store = s.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
	var mu sync.Mutex
	var received chan struct{} // closed once the client has read the request's response
	var syncs []string         // for each SyncWritten: how many paths, after the response or not
	restore := store.SetSyncHookForTest(func(paths int) error {
		mu.Lock()
		ch := received
		mu.Unlock()
		when := "after the response"
		select {
		case <-ch:
		case <-time.After(10 * time.Second): // the client never had it: a sync before
			when = "before the response"
		}
		mu.Lock()
		syncs = append(syncs, fmt.Sprintf("%d paths %s", paths, when))
		mu.Unlock()
		return nil
	})
	defer restore()
	hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": "synced"}
	msgs := []string{userText("build it")}
	for i := range 4 {
		for j := range 2 {
			id := fmt.Sprintf("tu_%d_%d", i, j)
			msgs = append(msgs, toolUse(id, "make "+id), toolResult(id, bigOutput(id)))
		}
		before := storedFiles(t, s.Store)
		mu.Lock()
		received = make(chan struct{})
		ch := received
		mu.Unlock()
		resp, body := post(t, px.URL+"/v1/messages", conversation(append(msgs, userText("go on"))...), hdr)
		close(ch)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, body)
		}
		waitLog(t, log, 2*(i+1)) // a request's line is written once finish has run
		if after := storedFiles(t, s.Store); after <= before {
			t.Fatalf("request %d stored nothing (%d files, then %d): the case is not tested", i, before, after)
		}
		if n := store.PendingForTest(); n != 0 {
			t.Errorf("request %d: %d paths named in the store and left unsynced", i, n)
		}
		mu.Lock()
		got := append([]string(nil), syncs...)
		mu.Unlock()
		if len(got) != i+1 {
			t.Fatalf("request %d: %d syncs in all (%v), want one a request", i, len(got), got)
		}
		if last := got[i]; strings.HasPrefix(last, "0 ") || !strings.HasSuffix(last, "after the response") {
			// Fatal: a sync before the response waits 10 s for it, once is enough.
			t.Fatalf("request %d: its sync: %s, want its files synced after the response", i, last)
		}
		msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"ok"}]}`, userText(fmt.Sprintf("next %d", i)))
	}
}

// TestStoreNotSyncedWarned: when the sync after a request fails (here a file the request
// stored is replaced, before the response, by a symlink out of the store, which the sync
// does not follow), the request's log record carries the warning, and the next request,
// which syncs fine, does not.
func TestStoreNotSyncedWarned(t *testing.T) {
	store.SyncWritten() // what other tests left
	up := newUpstream(t)
	s, px, log := proxyFor(t, up.URL, syncPipe, t.TempDir())
	s.Store = s.Env["CTX_STORE"]
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("not the store's"), 0o600); err != nil {
		t.Fatal(err)
	}
	var replaced string
	first := true
	up.sse = func(w http.ResponseWriter, r *http.Request, body []byte) {
		if first { // the first request: its files are named, not synced yet
			first = false
			if replaced = newestStored(t, s.Store); replaced != "" {
				os.Remove(replaced)
				os.Symlink(outside, replaced)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}`)
	}
	hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": "unsynced"}
	msgs := []string{userText("build it")}
	for i := range 2 {
		id := fmt.Sprintf("tu_%d", i)
		msgs = append(msgs, toolUse(id, "make "+id), toolResult(id, bigOutput(id)))
		if resp, body := post(t, px.URL+"/v1/messages", conversation(append(msgs, userText("go on"))...), hdr); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, body)
		}
		waitLog(t, log, 2*(i+1))
		msgs = append(msgs, `{"role":"assistant","content":[{"type":"text","text":"ok"}]}`, userText(fmt.Sprintf("next %d", i)))
	}
	if replaced == "" {
		t.Fatal("the first request stored nothing: the case is not tested")
	}
	var recs []Record
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec Record
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &rec) == nil && rec.Conversation != "" {
			recs = append(recs, rec)
		}
	}
	if len(recs) != 2 {
		t.Fatalf("%d request records in the log, want 2:\n%s", len(recs), log.String())
	}
	if !strings.Contains(recs[0].Warning, "store not synced: ") || !strings.Contains(recs[0].Warning, filepath.Base(replaced)) {
		t.Errorf("the first request's record warns %q, want the store not synced (%s)", recs[0].Warning, filepath.Base(replaced))
	}
	if strings.Contains(recs[1].Warning, "store not synced") {
		t.Errorf("the second request's record warns %q: its sync did not fail", recs[1].Warning)
	}
}

// storedFiles counts the regular files in the store's shards and packs.
func storedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Dir(p) != dir {
			n++
		}
		return nil
	})
	return n
}

// newestStored is the path of the last stored file of the store's shards ("" if none).
func newestStored(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "[0-9a-f][0-9a-f]", "*"))
	if len(files) == 0 {
		return ""
	}
	return files[len(files)-1]
}
