package offload

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

func TestEncodeIsQuote(t *testing.T) {
	cases := []string{"", "a", "\"\\/", "\b\f\n\r\t\x00\x01\x1f\x7f", "<>&", "\u2028\u2029", "é😀", "\ufffd", strings.Repeat("ab\n", 100)}
	r := rand.New(rand.NewSource(1))
	alphabet := []rune{'a', '"', '\\', '\n', 0, 0x1f, 0x7f, '<', 'é', 0x2028, 0x2029, 0x1F600, '/', '\t', 0xfffd}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for j := r.Intn(20); j > 0; j-- {
			b.WriteRune(alphabet[r.Intn(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		got, ok := Encode(s)
		if !ok || got != transcript.Quote(s) {
			t.Fatalf("Encode(%q) = %q, %v; Quote gives %q", s, got, ok, transcript.Quote(s))
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != s {
			t.Fatalf("Encode(%q) does not decode back: %q %v", s, back, err)
		}
	}
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80"} {
		if _, ok := Encode(s); ok {
			t.Errorf("Encode(%q) accepted invalid UTF-8", s)
		}
	}
}

// TestSaverUpdatesRecallIndex: the lines a Saver appends are indexed at once, but under
// ctx-proxy (syncs deferred), where ctx-recall indexes them when it searches.
func TestSaverUpdatesRecallIndex(t *testing.T) {
	for _, c := range []struct {
		sync, shown string
		want        bool
	}{{"", "", true}, {"later", "", false}, {"", "/ctx-replay/store", false}} {
		dir := filepath.Join(t.TempDir(), "store")
		sv := NewSaver(dir, "-", time.Now, func(string, ...any) {})
		sv.DeferSyncIf(func(k string) string {
			switch k {
			case store.SyncEnv:
				return c.sync
			case cli.StoreShownEnv:
				return c.shown
			}
			return ""
		})
		if err := sv.Put(Text("some tool output", "")); err != nil {
			t.Fatal(err)
		}
		if _, err := sv.Finish(); err != nil {
			t.Fatal(err)
		}
		sv.Close()
		segs, _ := filepath.Glob(filepath.Join(dir, index.Dir, "seg-*"))
		if got := len(segs) > 0; got != c.want {
			t.Errorf("%s=%q %s=%q: indexed %v, want %v", store.SyncEnv, c.sync, cli.StoreShownEnv, c.shown, got, c.want)
		}
	}
}

// TestSaverReleases: a blob's Release is called once, after its files are written and
// counted: blobs with a second file, a text put twice, one written before, and a store
// that cannot be made (released at once). A buffer released too early would be written
// over before the store reads it: each blob's data is spoiled as it is released, and
// every file must still read back whole.
func TestSaverReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	sv := NewSaver(dir, "-", time.Now, func(string, ...any) {})
	var mu sync.Mutex
	released := map[int]int{}
	var want []string
	var blobs []Blob
	for i := range 40 {
		text := []byte(fmt.Sprintf("tool output %d\n%s", i%30, strings.Repeat("x", i*100)))
		raw := ""
		if i%3 == 0 {
			raw = fmt.Sprintf(`"tool output %d\u000a"`, i)
		}
		b := Text(string(text), raw) // (a copy: text is spoiled below)
		b.Data = unsafe.String(&text[0], len(text))
		want = append(want, string(text))
		b.Release = func() {
			mu.Lock()
			released[i]++
			mu.Unlock()
			for k := range text {
				text[k] = '!'
			}
		}
		blobs = append(blobs, b)
	}
	for i := 0; i < len(blobs); i += 7 {
		if err := sv.Put(blobs[i:min(i+7, len(blobs))]...); err != nil {
			t.Fatal(err)
		}
	}
	n, err := sv.Finish()
	if err != nil {
		t.Fatal(err)
	}
	sv.Close()
	if n == 0 {
		t.Fatal("nothing stored")
	}
	for i := range blobs {
		if released[i] != 1 {
			t.Errorf("blob %d released %d times, want once", i, released[i])
		}
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, w := range want {
		if got, err := st.Get(store.HashString(w)); err != nil || string(got) != w {
			t.Errorf("text %d reads back %.40q %v", i, got, err)
		}
	}

	bad := filepath.Join(t.TempDir(), "file")
	os.WriteFile(bad, nil, 0o600)
	sv = NewSaver(filepath.Join(bad, "store"), "-", time.Now, func(string, ...any) {})
	calls := 0
	b := Text("text", "")
	b.Release = func() { calls++ }
	if err := sv.Put(b); err == nil || calls != 1 {
		t.Errorf("Put into a store that cannot be made: %v, released %d times, want an error and once", err, calls)
	}
}
