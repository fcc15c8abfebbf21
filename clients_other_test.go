//go:build !unix

package ctxkit_test

import (
	"os/exec"
	"time"
)

// killGroupOnCancel cannot make a process group here: cancelling kills the process alone,
// and WaitDelay stops waiting for the helpers it started that still hold its output.
func killGroupOnCancel(cmd *exec.Cmd) {
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
}
