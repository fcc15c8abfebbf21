//go:build unix

package safefile

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesFIFO: a FIFO planted where a file is read back is refused at once; before,
// the open waited for a writer that never came.
func TestOpenRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := Open(path)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("Open of a FIFO: %v, want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open waited on a FIFO")
	}
}
