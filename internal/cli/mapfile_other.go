//go:build !unix

package cli

import "os"

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
