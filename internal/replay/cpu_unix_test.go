//go:build unix

package replay

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used: on a machine shared with other work, a
// benchmark's wall time says more about the others than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
