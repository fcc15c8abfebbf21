// Package heldout is the repository's one rule for splitting a set of files into the
// half a heuristic is tuned on (training) and the half its figures are reported on (test):
// the calibration's sessions, the real outputs ctx-budget is measured on, the cut points
// of summaries, the sessions the loop is replayed on.
//
// A file is in the test half when the FNV-1a hash of its base name is 0 modulo 3: one file
// in three, fixed by the name alone, so the split does not change when files are added,
// moved or copied, and nobody chooses it after seeing a result. A rule or setting changed
// to fix a test file must also hold on the training files; figures published in the
// README, the man pages and closing notes are the test half's.
package heldout

import (
	"hash/fnv"
	"path/filepath"
)

// Test reports whether the file at path belongs to the test half (its figures are
// reported, nothing is tuned on it).
func Test(path string) bool {
	h := fnv.New32a()
	h.Write([]byte(filepath.Base(path)))
	return h.Sum32()%3 == 0
}

// Split divides paths into the training and test halves, in the order given.
func Split(paths []string) (train, test []string) {
	for _, p := range paths {
		if Test(p) {
			test = append(test, p)
		} else {
			train = append(train, p)
		}
	}
	return train, test
}
