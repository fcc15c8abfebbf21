package cli

import (
	"bytes"
	"io"
	"os"
)

// spoolMemory is how many bytes a spool keeps in memory before it moves to a temp file.
const spoolMemory = 8 << 20

// unsizedMemory is how much of a document of unknown size readUnsized keeps in memory
// before it moves to a temp file: less than spoolMemory, because the bytes are read back
// into a second allocation; a document this small costs no file.
const unsizedMemory = 1 << 20

// spool keeps the bytes written to it to be read back: in memory up to spoolMemory, then in
// a temp file, so that holding a large stream costs the page cache, not the process. It
// holds stdin for a second pass over a streamed transcript, and a filter's streamed output
// until the run has succeeded.
type spool struct {
	limit int // bytes kept in memory; 0 means spoolMemory
	mem   []byte
	file  *os.File // nil until the bytes outgrow mem
	size  int64
	err   error // the first write error: the spool is then useless
	// memoryOK keeps the bytes in memory when no temp file can be made, instead of
	// failing: for a reader (readUnsized) that would otherwise hold them in memory anyway.
	memoryOK bool
}

// Write implements io.Writer.
func (s *spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	limit := s.limit
	if limit == 0 {
		limit = spoolMemory
	}
	if s.file == nil && len(s.mem)+len(p) > limit && limit > 0 {
		s.err = s.spill()
		if s.err != nil && s.memoryOK {
			s.err, s.limit = nil, -1 // never try again
		}
		if s.err != nil {
			return 0, s.err
		}
	}
	if s.file == nil {
		s.mem = append(s.mem, p...)
	} else if _, s.err = s.file.Write(p); s.err != nil {
		return 0, s.err
	}
	s.size += int64(len(p))
	return len(p), nil
}

// spill moves the bytes held in memory to a temp file, removed at once so that nothing is
// left behind however the process ends (on systems that can remove an open file).
func (s *spool) spill() error {
	f, err := os.CreateTemp("", "ctxkit-*.spool")
	if err != nil {
		return err
	}
	os.Remove(f.Name())
	if _, err := f.Write(s.mem); err != nil {
		f.Close()
		return err
	}
	s.file, s.mem = f, nil
	return nil
}

// reader reads everything written so far, from the start.
func (s *spool) reader() (io.Reader, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.file == nil {
		return bytes.NewReader(s.mem), nil
	}
	return io.NewSectionReader(s.file, 0, s.size), nil
}

// close frees the spool.
func (s *spool) close() {
	if s.file != nil {
		name := s.file.Name()
		s.file.Close()
		os.Remove(name) // in case the early remove could not be done
		s.file = nil
	}
	s.mem = nil
}

// readUnsized reads all of r, whose size is not known beforehand (stdin from a pipe), into
// one slice of exactly its size. Growing a buffer as the bytes come would hold the old and
// the new buffer at once (up to three times the input at the last doubling, and twice
// after it), which is what made a JSON document read from a pipe cost one more input's
// worth of memory than the same file named as an argument. The bytes go through a spool
// instead (memory up to unsizedMemory, then a temp file in the page cache), and are read
// back into one allocation: the peak is the input and about twice unsizedMemory. When no
// temp file can be made the spool keeps them in memory, as a growing buffer would have.
func readUnsized(r io.Reader) ([]byte, error) {
	s := &spool{memoryOK: true, limit: unsizedMemory}
	defer s.close()
	if _, err := io.Copy(s, r); err != nil {
		return nil, err
	}
	if s.file == nil {
		return s.mem, nil
	}
	rr, err := s.reader()
	if err != nil {
		return nil, err
	}
	// The same room at the end as readWhole leaves after a file (bytes.MinRead): a
	// document that gains a final line break is not copied for it.
	data := make([]byte, s.size, s.size+bytes.MinRead)
	if _, err := io.ReadFull(rr, data); err != nil {
		return nil, err
	}
	return data, nil
}
