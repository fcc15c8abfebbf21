//go:build unix

package cli

import (
	"io"
	"os"
	"syscall"
)

// mapping is an input file mapped read-only, to be streamed in place (transcript.InPlace).
type mapping struct {
	file     *os.File
	whole    []byte // the mapping, from the file's start
	base     int64  // the offset the input starts at (stdin may have been read into)
	data     []byte // the input: whole[base:]
	released int    // whole[:released] has been let go
}

// mapInput maps what is left to read of the regular file f, or returns nil when it cannot
// (not a regular file, nothing left, or the system refuses).
//
// The mapping is never undone once streamed: the records a tool keeps point into it until
// the process ends. Its pages are let go behind the reading (release), so that it costs
// the process no more memory than reading through a buffer; pages read again come back
// from the page cache.
func mapInput(f *os.File) *mapping {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || int64(int(st.Size())) != st.Size() {
		return nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off >= st.Size() {
		return nil
	}
	whole, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &mapping{file: f, whole: whole, base: off, data: whole[off:]}
}

// unmap undoes a mapping nothing points into (the input was read whole after all).
func (m *mapping) unmap() { syscall.Munmap(m.whole) }

// release lets go of the pages of data[:upTo] not let go before (whole pages only).
func (m *mapping) release(upTo int) {
	end := int(m.base) + upTo
	end -= end % os.Getpagesize()
	if end <= m.released {
		return
	}
	syscall.Madvise(m.whole[m.released:end], syscall.MADV_DONTNEED)
	m.released = end
}

// releaseAll lets go of every page, read again since or not.
func (m *mapping) releaseAll() {
	syscall.Madvise(m.whole, syscall.MADV_DONTNEED)
	m.released = len(m.whole) - len(m.whole)%os.Getpagesize()
}
