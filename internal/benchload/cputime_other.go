//go:build !unix

package benchload

import "time"

// CPUTime is 0 where getrusage is not available: the figures that need it are not given.
func CPUTime() time.Duration { return 0 }
