package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// spoolMemory is how many bytes a spool keeps in memory before it moves to a temp file,
// for a stage of an in-process pipeline (ctx-replay, ctx-proxy), whose input is in memory.
const spoolMemory = 8 << 20

// pipeMemory is what a spool keeps in memory when it holds a process's stdin for a second
// pass, or its output until the run has succeeded. A larger document was first copied
// into 8 MB of fresh memory and then all of it into the temp file: each new page of that
// memory is a page fault, and a fault costs far more than the write that puts the page in
// the page cache (on a 10 MB Codex rollout, ~15% of each stage's CPU time, on the VMs the
// benchmarks run on). Below pipeMemory a document still costs no file.
const pipeMemory = 1 << 20

// unsizedMemory is how much of a document of unknown size readUnsized keeps in memory
// before it moves to a temp file: less than spoolMemory, because the bytes are read back
// into a second allocation; a document this small costs no file.
const unsizedMemory = 1 << 20

// spool keeps the bytes written to it to be read back: in memory up to spoolMemory, then in
// a temp file, so that holding a large stream costs the page cache, not the process. It
// holds stdin for a second pass over a streamed transcript, and a filter's streamed output
// until the run has succeeded.
type spool struct {
	limit int // bytes kept in memory; 0 means spoolMemory, negative no limit
	// mem holds the bytes in chunks that are filled, never grown: growing one slice copied
	// everything held at each doubling, and a copy of megabytes is a stretch the garbage
	// collector cannot interrupt, so on two cores it spun waiting for it (as much system
	// time as the whole run's work on a 10 MB Codex rollout).
	mem  [][]byte
	held int      // bytes in mem
	file *os.File // nil until the bytes outgrow mem
	size int64
	err  error // the first write error: the spool is then useless
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
	if s.file == nil && s.held+len(p) > limit && limit > 0 {
		s.err = s.spill()
		if s.err != nil && s.memoryOK {
			s.err, s.limit = nil, -1 // never try again
		}
		if s.err != nil {
			return 0, s.err
		}
	}
	if s.file == nil {
		s.keep(p)
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
	for _, c := range s.mem {
		if _, err := f.Write(c); err != nil {
			f.Close()
			return err
		}
	}
	s.file, s.mem, s.held = f, nil, 0
	return nil
}

// Chunks of a spool's memory start at firstChunk bytes (or the size reserved) and double
// up to lastChunk, so a small output costs little and a large one few allocations, and no
// single copy is longer than lastChunk.
const (
	firstChunk = 32 << 10
	lastChunk  = 1 << 20
)

// reserve makes the first chunk n bytes, for a spool whose size is about known.
func (s *spool) reserve(n int) {
	if len(s.mem) == 0 {
		s.mem = [][]byte{make([]byte, 0, n)}
	}
}

// keep copies p into the memory chunks, starting new ones as they fill.
func (s *spool) keep(p []byte) {
	s.held += len(p)
	for len(p) > 0 {
		n := len(s.mem)
		if n == 0 || len(s.mem[n-1]) == cap(s.mem[n-1]) {
			size := firstChunk
			if n > 0 {
				size = min(max(2*cap(s.mem[n-1]), firstChunk), lastChunk)
			}
			s.mem = append(s.mem, make([]byte, 0, size))
			n++
		}
		last := s.mem[n-1]
		k := min(len(p), cap(last)-len(last))
		s.mem[n-1] = append(last, p[:k]...)
		p = p[k:]
	}
}

// ReadAt reads the bytes held in memory at off, for a spool that has not spilled.
func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("spool: negative offset")
	}
	n := 0
	for _, c := range s.mem {
		if off >= int64(len(c)) {
			off -= int64(len(c))
			continue
		}
		k := copy(p[n:], c[off:])
		n, off = n+k, 0
		if n == len(p) {
			return n, nil
		}
	}
	return n, io.EOF
}

// readerAt reads everything written so far, at any offset.
func (s *spool) readerAt() (io.ReaderAt, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.file == nil {
		return s, nil
	}
	return s.file, nil
}

// bytes is what the spool holds in memory, in one slice (a copy when it is in chunks).
func (s *spool) bytes() []byte {
	if len(s.mem) == 1 {
		return s.mem[0]
	}
	return bytes.Join(s.mem, nil)
}

// reader reads everything written so far, from the start.
func (s *spool) reader() (io.Reader, error) {
	ra, err := s.readerAt()
	if err != nil {
		return nil, err
	}
	return io.NewSectionReader(ra, 0, s.size), nil
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
	s := NewSpool()
	defer s.Close()
	if _, err := io.Copy(s, r); err != nil {
		return nil, err
	}
	return s.Bytes()
}

// Spool holds a document written to it a piece at a time until Bytes reads it back into
// one slice of its size, as readUnsized reads a pipe: in memory up to unsizedMemory, then
// in a temp file (in memory still when none can be made). A tier that makes a new
// document (ctx-convert) writes it there, so that it is not held in memory beside what it
// is made from.
type Spool struct{ s spool }

// NewSpool makes an empty Spool; Close it when done.
func NewSpool() *Spool { return &Spool{spool{memoryOK: true, limit: unsizedMemory}} }

// Write implements io.Writer.
func (s *Spool) Write(p []byte) (int, error) { return s.s.Write(p) }

// Bytes is everything written, in one slice of its size with room for a few bytes more.
func (s *Spool) Bytes() ([]byte, error) {
	if s.s.err != nil {
		return nil, s.s.err
	}
	if s.s.file == nil {
		return s.s.bytes(), nil
	}
	rr, err := s.s.reader()
	if err != nil {
		return nil, err
	}
	// The same room at the end as readWhole leaves after a file (bytes.MinRead): a
	// document that gains a final line break is not copied for it.
	data := make([]byte, s.s.size, s.s.size+bytes.MinRead)
	if _, err := io.ReadFull(rr, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Close frees the spool.
func (s *Spool) Close() { s.s.close() }
