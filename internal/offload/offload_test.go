package offload

import (
	"encoding/json"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
