//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
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

// TestOpenStream: a FIFO without a writer opens at once and reads as at its end; a name
// that does not exist is not created; a regular file and a directory are refused.
func TestOpenStream(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenStream(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("OpenStream of a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OpenStream waited for a writer")
	}
	missing := filepath.Join(dir, "missing")
	if f, err := OpenStream(missing); err == nil {
		f.Close()
		t.Error("OpenStream of a missing name succeeded")
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenStream created %s: %v", missing, err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, dir} {
		if f, err := OpenStream(p); err == nil {
			f.Close()
			t.Errorf("OpenStream(%s) succeeded, want a refusal", p)
		}
	}
}
