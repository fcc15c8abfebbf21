//go:build !unix

package cli

import (
	"io"
	"os"
)

// mapping is an input file mapped: never, here; inputs are read.
type mapping struct {
	file *os.File
	base int64
	data []byte
}

func mapInput(f *os.File) *mapping { return nil }
func (m *mapping) unmap()          {}
func (m *mapping) release(int)     {}
func (m *mapping) releaseAll()     {}

// growingMapping is a pipe's spool mapped: never, here.
type growingMapping struct{}

func mapSpool(s *spool, src io.Reader) *growingMapping { return nil }
func (g *growingMapping) more() ([]byte, error)        { return nil, io.EOF }
func (g *growingMapping) release(int)                  {}
func (g *growingMapping) releaseAll()                  {}
