//go:build unix

package benchload

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) the process has used so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
