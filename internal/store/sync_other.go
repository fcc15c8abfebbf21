//go:build !linux

package store

// syncFiles makes files, and the names in dirs (which hold the files), durable: an fsync
// each.
func (s *Store) syncFiles(dirs, files []string) error { return s.fsyncEach(dirs, files) }
