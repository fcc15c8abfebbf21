// Package benchload is what a benchmark needs on a machine shared with other work: the
// CPU time the process used (`CPUTime`), which says more about the code than the wall
// clock does there, and a noisy neighbour that fills the file system with dirty pages
// (`Fill`), so that a benchmark measures what syncing costs under a loaded disk.
package benchload
