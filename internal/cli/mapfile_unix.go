//go:build unix

package cli

import (
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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
	whole, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &mapping{file: f, whole: whole, base: off, data: whole[off:]}
}

// unmap undoes a mapping nothing points into (the input was read whole after all).
func (m *mapping) unmap() { unix.Munmap(m.whole) }

// release lets go of the pages of data[:upTo] not let go before.
func (m *mapping) release(upTo int) { m.released = releasePages(m.whole, m.released, int(m.base)+upTo) }

// releaseAll lets go of every page, read again since or not.
func (m *mapping) releaseAll() { m.released = releasePages(m.whole, 0, len(m.whole)) }

// releasePages lets go of the whole pages of mapped[from:to] (file pages: they come back
// from the page cache when read again) and returns where it stopped. Linux unmaps them at
// once; macOS and the BSDs take MADV_DONTNEED as a hint that the pages may be reclaimed
// first, which for clean file pages comes to the same.
func releasePages(mapped []byte, from, to int) int {
	to -= to % os.Getpagesize()
	if to > from {
		unix.Madvise(mapped[from:to], unix.MADV_DONTNEED)
		return to
	}
	return from
}

// growingMapping keeps a pipe's bytes in a spool's temp file, and maps that file as it
// grows, for the first pass to read in place what has arrived (transcript.NewGrowingInPlace)
// instead of copying each line. The spool is what it would hold anyway (a document over
// pipeMemory goes to a temp file), read again by the second pass.
type growingMapping struct {
	whole    []byte // the file's mapping: address space reserved, valid up to s.size
	s        *spool
	src      io.Reader
	buf      []byte
	released int
}

// growReserve is the address space a growing mapping reserves: the most a pipe can bring.
// Mapping a file beyond its end is POSIX: the pages past the end are not touched until
// written (more never hands out more than the file holds), and a write to the file shows
// in a shared mapping of it. Linux and macOS (whose 64-bit processes have 128 TB of
// address space, on arm64 as on amd64) both allow it; LMDB maps its files the same way.
const growReserve = 1 << 40

var errTooLarge = errors.New("more than a terabyte from a pipe")

// mapSpool makes s a temp file, mapped, that more fills from src; nil when that cannot be
// done (32-bit address space, no temp file, no mapping), and s is then as it was.
func mapSpool(s *spool, src io.Reader) *growingMapping {
	if strconv.IntSize < 64 || s.held > 0 || s.file != nil {
		return nil
	}
	if err := s.spill(); err != nil {
		return nil
	}
	whole, err := unix.Mmap(int(s.file.Fd()), 0, growReserve, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		s.close()
		return nil
	}
	return &growingMapping{whole: whole, s: s, src: src, buf: make([]byte, 256<<10)}
}

// more adds what src has next to the spool and returns all the spool holds, mapped.
func (g *growingMapping) more() ([]byte, error) {
	n, err := g.src.Read(g.buf)
	if n > 0 {
		if g.s.size+int64(n) > growReserve {
			return nil, errTooLarge
		}
		if _, werr := g.s.Write(g.buf[:n]); werr != nil {
			return nil, werr
		}
		return g.whole[:g.s.size:g.s.size], nil
	}
	if err == nil {
		return g.whole[:g.s.size:g.s.size], nil
	}
	return nil, err
}

// release lets go of the pages of the first upTo bytes not let go before.
func (g *growingMapping) release(upTo int) { g.released = releasePages(g.whole, g.released, upTo) }

// releaseAll lets go of every page of what the spool holds.
func (g *growingMapping) releaseAll() {
	g.released = releasePages(g.whole, 0, int(g.s.size)+os.Getpagesize()-1)
}
