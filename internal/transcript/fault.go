package transcript

import (
	"errors"
	"runtime/debug"
	"sync"
)

// An input read in place (InPlace) is a file mapped into memory: if the file is cut short
// while it is read (truncated by another program), touching a page past its new end is a
// memory fault, which would crash the process. A goroutine that reads such an input runs
// under GuardFaults, which makes the fault a panic, and RecoverFault (after Faults.Rethrow,
// for worker goroutines) turns it into ErrCutShort, worded like any input that changed under
// a run.

// ErrCutShort is the error of a memory fault reading an input in place.
var ErrCutShort = errors.New("the input was cut short while it was being read; run again")

// GuardFaults makes a memory fault of the calling goroutine a panic until restore is
// called: defer transcript.GuardFaults()().
func GuardFaults() (restore func()) {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// RecoverFault, deferred in a goroutine under GuardFaults, sets *err to ErrCutShort when
// the goroutine panicked with a memory fault; any other panic goes on.
func RecoverFault(err *error) {
	if r := recover(); r != nil {
		if !isFault(r) {
			panic(r)
		}
		*err = ErrCutShort
	}
}

// Faults keeps the first memory fault of worker goroutines for the goroutine that waits
// for them to rethrow, so that the workers end cleanly. Its zero value is ready.
type Faults struct {
	mu    sync.Mutex
	first any
}

// Keep, deferred in a worker goroutine under GuardFaults, keeps a memory fault's panic;
// any other panic goes on.
func (f *Faults) Keep() {
	if r := recover(); r != nil {
		if !isFault(r) {
			panic(r)
		}
		f.mu.Lock()
		if f.first == nil {
			f.first = r
		}
		f.mu.Unlock()
	}
}

// Rethrow panics again, on the calling goroutine, with the fault a worker kept, if any;
// call it once the workers are done.
func (f *Faults) Rethrow() {
	f.mu.Lock()
	r := f.first
	f.mu.Unlock()
	if r != nil {
		panic(r)
	}
}

// isFault reports whether a panic's value is the runtime's error for a memory fault under
// debug.SetPanicOnFault, which tells the faulting address.
func isFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}
