package count

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestSavingsSetsNoMemoryLimit: --savings runs every tier on the document in this process,
// so reading a large document sets no memory limit from its size (cli.Filter.HoldsMore):
// at 1.7 times the document the tiers' copies kept the collector running without end
// (20 MB: 17-20 s of CPU where 5 do).
func TestSavingsSetsNoMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 17 MB document")
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the run leaves the limit to it")
	}
	was, percent := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	t.Cleanup(func() {
		debug.SetMemoryLimit(was)
		debug.SetGCPercent(percent)
	})
	debug.SetMemoryLimit(math.MaxInt64)
	result := strings.Repeat("line of output\n", 17<<20/15)
	doc := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"run it"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + transcript.Quote(result) + `}]},` +
		`{"role":"assistant","content":"done"}]}`
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CTX_CACHE_DIR": "off"}
	var out, errb bytes.Buffer
	if code := Main([]string{"--savings", file}, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("--savings on a %d MB document set a memory limit of %d MB", len(doc)>>20, got>>20)
	}
}
