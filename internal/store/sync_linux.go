package store

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// syncFiles makes files, and the names in dirs (which hold the files), durable: with one
// syncfs per file system the dirs are on, which costs one flush where an fsync per file
// costs one each. A kernel without syncfs gets an fsync per file and directory.
func (s *Store) syncFiles(dirs, files []string) error {
	seen := map[uint64]bool{}
	for _, dir := range dirs {
		d, err := s.root.Open(dir)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(d.Fd()), &st); err != nil {
			d.Close()
			return err
		}
		if seen[st.Dev] {
			d.Close()
			continue
		}
		seen[st.Dev] = true
		err = unix.Syncfs(int(d.Fd()))
		d.Close()
		if err == syscall.ENOSYS {
			return s.fsyncEach(dirs, files)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
