package benchload

import "os"

// Fill writes size bytes to path over and over, never syncing, until stop closes; it
// removes path and closes done when it ends.
func Fill(path string, size int64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer os.Remove(path)
	chunk := make([]byte, 4<<20)
	for {
		f, err := os.Create(path)
		if err != nil {
			return
		}
		for n := int64(0); n < size; n += int64(len(chunk)) {
			select {
			case <-stop:
				f.Close()
				return
			default:
			}
			if _, err := f.Write(chunk); err != nil {
				f.Close()
				return
			}
		}
		f.Close()
	}
}
