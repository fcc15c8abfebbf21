package count

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// TestCountCache: ctx-count leaves the exact counts of a large document in CTX_CACHE_DIR
// (or ~/.cache/ctxkit) and reports the same figures when it reads them back; with
// CTX_CACHE_DIR=off, or no directory to use, nothing is written.
func TestCountCache(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.jsonl")
	var b bytes.Buffer
	// Large enough that what ctx-count counts of it, the part after the compaction (the
	// history before it is not counted), passes the 2 MB a run counts before it writes.
	if err := testgen.Generate(&b, testgen.Options{Format: "codex", Size: 12 << 20, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(env map[string]string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main([]string{doc}, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] }); code != 0 {
			t.Fatalf("ctx-count: exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	files := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "counts-*"))
		return m
	}

	plain := run(nil)
	cache := filepath.Join(dir, "cache")
	cold := run(map[string]string{"CTX_CACHE_DIR": cache})
	if len(files(cache)) != 1 {
		t.Fatalf("no count cache in %s after counting a 12 MB rollout", cache)
	}
	warm := run(map[string]string{"CTX_CACHE_DIR": cache})
	if cold != plain || warm != plain {
		t.Fatal("the report with the count cache differs from the report without it")
	}

	home := filepath.Join(dir, "home")
	run(map[string]string{"HOME": home})
	if len(files(filepath.Join(home, ".cache", "ctxkit"))) != 1 {
		t.Error("no count cache in ~/.cache/ctxkit")
	}
	xdg := filepath.Join(dir, "xdg")
	run(map[string]string{"HOME": home, "XDG_CACHE_HOME": xdg})
	if len(files(filepath.Join(xdg, "ctxkit"))) != 1 {
		t.Error("no count cache in $XDG_CACHE_HOME/ctxkit")
	}
	off := filepath.Join(dir, "off")
	run(map[string]string{"HOME": off, "CTX_CACHE_DIR": "off"})
	if _, err := os.Stat(off); !os.IsNotExist(err) {
		t.Error("CTX_CACHE_DIR=off wrote a cache")
	}
}
