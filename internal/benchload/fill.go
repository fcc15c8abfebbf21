package benchload

import (
	"os"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Fill writes files of size bytes in dir over and over, never syncing, until stop closes;
// each is a new owner-only file (safefile.CreateTemp: never a name planted there), removed
// once written. done closes when it ends.
func Fill(dir string, size int64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	chunk := make([]byte, 4<<20)
	for {
		f, err := safefile.CreateTemp(dir, "neighbour-", "")
		if err != nil {
			return
		}
		stopped := false
		for n := int64(0); n < size && !stopped; n += int64(len(chunk)) {
			select {
			case <-stop:
				stopped = true
				continue
			default:
			}
			if _, err := f.Write(chunk); err != nil {
				stopped = true
			}
		}
		f.Close()
		os.Remove(f.Name())
		if stopped {
			return
		}
	}
}
