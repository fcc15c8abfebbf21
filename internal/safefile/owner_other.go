//go:build !unix

package safefile

import "io/fs"

// oNoFollow: no such flag here; links are still refused by the Lstat checks.
const oNoFollow = 0

// ownerOf: files have no numeric owner here, so nothing is refused for its owner.
func ownerOf(fs.FileInfo) (int, bool) { return 0, false }
