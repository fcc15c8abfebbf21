//go:build !unix

package safefile

import "io/fs"

// oNoFollow: no such flag here; links are still refused by the Lstat checks.
const oNoFollow = 0

// oNonBlock: no FIFOs to wait on here.
const oNonBlock = 0

// ownerOf: files have no numeric owner here, so nothing is refused for its owner.
func ownerOf(fs.FileInfo) (int, bool) { return 0, false }
