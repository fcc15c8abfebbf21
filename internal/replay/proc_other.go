//go:build !unix

package replay

import "os/exec"

// ownGroup leaves cmd as it is: without process groups, cancelling kills the shell, and
// exec.Cmd.WaitDelay stops waiting for the programs it started.
func ownGroup(cmd *exec.Cmd) {}
