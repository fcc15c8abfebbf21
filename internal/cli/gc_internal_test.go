package cli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// isolateGC skips the test when GOMEMLIMIT is set (tuneGC leaves the limit to it), and has
// its end put back the memory limit, the collector's percent and gcLimit as they were; it
// returns the memory limit in force.
func isolateGC(t *testing.T) int64 {
	t.Helper()
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: tuneGC leaves the limit to it")
	}
	was, wasSet, wasPercent := debug.SetMemoryLimit(-1), gcLimit.set, debug.SetGCPercent(-1)
	debug.SetGCPercent(wasPercent)
	t.Cleanup(func() {
		debug.SetMemoryLimit(was)
		debug.SetGCPercent(wasPercent)
		gcLimit.set = wasSet
	})
	return was
}

// TestTuneGC: a large document read by a command of its own sets the soft memory limit at
// 1.7 times its size, one read by a stage of an in-process pipeline leaves it alone, and
// the limit only grows.
func TestTuneGC(t *testing.T) {
	was := isolateGC(t)
	gcLimit.set = 0
	const size = 64 << 20
	tuneGC(size, true, true)
	if got := debug.SetMemoryLimit(-1); got != was {
		t.Errorf("in-process stage: the limit went from %d to %d", was, got)
	}
	tuneGC(size, false, true)
	want := int64(size)*17/10 + gcSlack
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("limit %d, want %d", got, want)
	}
	tuneGC(size/2, false, true)
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("a smaller document lowered the limit to %d from %d", got, want)
	}
}

// TestHoldsMoreSetsNoLimit: a large document read for a tool whose process holds more than
// it (Filter.HoldsMore: ctx-replay) sets no memory limit; the same read for a filter does.
func TestHoldsMoreSetsNoLimit(t *testing.T) {
	isolateGC(t)
	doc := `[{"role":"user","content":"` + strings.Repeat("x", bigInput) + `"}]`
	file := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, holdsMore := range []bool{true, false} {
		gcLimit.set = 0
		debug.SetMemoryLimit(math.MaxInt64)
		g := &struct {
			Common `embed:""`
		}{}
		tool := &Tool{Name: "ctx-fake", Grammar: g, run: func(c *Context) error {
			return c.Run(Filter{Reports: true, Whole: true, HoldsMore: holdsMore, Plan: func(d *Doc) (*Plan, error) {
				return &Plan{}, nil
			}})
		}}
		var out, errb bytes.Buffer
		if code := Main(tool, []string{file}, strings.NewReader(""), &out, &errb, nil); code != 0 {
			t.Fatalf("HoldsMore %v: exit %d, stderr %q", holdsMore, code, errb.String())
		}
		limited := debug.SetMemoryLimit(-1) != math.MaxInt64
		if limited == holdsMore {
			t.Errorf("HoldsMore %v: a memory limit set: %v", holdsMore, limited)
		}
	}
}

// TestTuneGCPacing: a large document held whole, or read by a stage of an in-process
// pipeline (no memory limit), is collected at +50% of what is live; a streamed one, whose
// peak the memory limit bounds, keeps the collector's own pacing.
func TestTuneGCPacing(t *testing.T) {
	isolateGC(t)
	percent := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	const size = 64 << 20
	for _, c := range []struct {
		inProcess, held bool
		want            int
	}{{false, false, 100}, {false, true, 50}, {true, false, 50}, {true, true, 50}} {
		gcLimit.set = 0
		debug.SetGCPercent(100)
		tuneGC(size, c.inProcess, c.held)
		if got := percent(); got != c.want {
			t.Errorf("in process %v, held %v: collecting at +%d%%, want +%d%%", c.inProcess, c.held, got, c.want)
		}
	}
}
