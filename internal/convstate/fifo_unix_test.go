//go:build unix

package convstate

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// TestFIFOIgnored: a FIFO named like a conversation's state file is refused at once, by Get
// and by All; before, reading it waited for a writer forever.
func TestFIFOIgnored(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, fileName("k")), 0o600); err != nil {
		t.Skip(err)
	}
	d.sizes[fileName("k")] = fileInfo{updated: time.Now()} // as if it were listed when opened
	done := make(chan error, 1)
	go func() {
		st, err := d.Get("k")
		if st != nil {
			err = errors.New("a state was read from a FIFO")
		}
		d.All()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, safefile.ErrUnsafe) {
			t.Errorf("Get: %v, want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Get waited on a FIFO")
	}
	d.Keep(&State{Key: "k", Orig: []string{Hash("a")}})
	if st, err := d.Get("k"); st == nil || err != nil {
		t.Errorf("the conversation is not remembered in memory: %v", err)
	}
}
