package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneGC: a large document read by a command of its own sets the soft memory limit at
// 1.7 times its size, one read by a stage of an in-process pipeline leaves it alone, and
// the limit only grows.
func TestTuneGC(t *testing.T) {
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
	gcLimit.set = 0
	const size = 64 << 20
	tuneGC(size, true)
	if got := debug.SetMemoryLimit(-1); got != was {
		t.Errorf("in-process stage: the limit went from %d to %d", was, got)
	}
	tuneGC(size, false)
	want := int64(size)*17/10 + gcSlack
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("limit %d, want %d", got, want)
	}
	tuneGC(size/2, false)
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("a smaller document lowered the limit to %d from %d", got, want)
	}
}
