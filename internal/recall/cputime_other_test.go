//go:build !unix

package recall

import "time"

// cpuTime is unknown here: 0, and the figures that need it are not reported.
func cpuTime() time.Duration { return 0 }
