//go:build unix

package replay

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own and makes cancelling it kill the whole
// group: a shell pipeline's programs, not only the shell, which would leave them holding
// the output pipe open until they end by themselves.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
