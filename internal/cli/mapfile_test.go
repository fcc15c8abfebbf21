package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestMappedInputCutShort: a mapped input whose file another program truncates is a
// memory fault when read; under the guard it is transcript.ErrCutShort, on the goroutine
// that read it and, rethrown, on the one that waited for a worker, not a crash.
func TestMappedInputCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := mapInput(f)
	if m == nil {
		t.Skip("files are not mapped on this system")
	}
	defer m.unmap()
	data := m.data
	if len(data) != 256<<10 || data[len(data)-1] != 'x' {
		t.Fatalf("mapped %d bytes", len(data))
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	sum := func() (n int) {
		for i := 0; i < len(data); i += 4096 {
			n += int(data[i])
		}
		return n
	}
	read := func() (err error) {
		defer transcript.GuardFaults()()
		defer transcript.RecoverFault(&err)
		sum()
		return nil
	}
	if err := read(); !errors.Is(err, transcript.ErrCutShort) {
		t.Errorf("reading the cut mapping: %v, want ErrCutShort", err)
	}

	waited := func() (err error) {
		defer transcript.GuardFaults()()
		defer transcript.RecoverFault(&err)
		var faults transcript.Faults
		var wg sync.WaitGroup
		wg.Go(func() {
			defer transcript.GuardFaults()()
			defer faults.Keep()
			sum()
		})
		wg.Wait()
		faults.Rethrow()
		return nil
	}
	if err := waited(); !errors.Is(err, transcript.ErrCutShort) {
		t.Errorf("a worker reading the cut mapping: %v, want ErrCutShort", err)
	}
}
