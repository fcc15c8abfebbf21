//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

// oNoFollow makes an open fail on a symbolic link instead of following it.
const oNoFollow = syscall.O_NOFOLLOW

// oNonBlock makes opening a FIFO for reading return at once instead of waiting for a
// writer, so that Open can refuse it.
const oNonBlock = syscall.O_NONBLOCK

// ownerOf returns the user id that owns fi.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
