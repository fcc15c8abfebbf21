// Package cli is the one runner every ctx-* binary uses. It owns the edges
// of a run: flag parsing (kong), stdin and stdout, -o/--output and
// -i/--in-place, exit statuses, error text, TTY decisions, the version
// string and --stats. Tools plug in a grammar struct that embeds [Common]
// and a Run function.
//
// It also owns the run loop of every filter ([Context.Run]): it reads each
// input (a Claude Code or Codex transcript streamed in two passes, anything
// else whole), measures it (package measure), asks the tier for a [Plan]
// (the tier decides, from a [Doc]), writes the document with the plan's
// edits, and writes --stats. Tiers read, count and write nothing themselves.
//
// Invariants the runner enforces for every tool:
//
//   - Output is buffered. Stdout and any -o/--in-place files are written
//     only when Run returns nil or a [CheckFailed] error; on any other error
//     nothing reaches stdout and no file is replaced.
//   - Diagnostics go to stderr as "ctx-x: error: ..." (plus an optional
//     "hint: ..." line) and "ctx-x: warning: ...".
//   - Exit statuses follow DESIGN §6: see [ExitOK] and its siblings.
//   - Reading a document from a terminal is refused with a hint, so a tool
//     never sits waiting on an interactive stdin.
//
// The package has no mutable package-level state and never calls os.Exit:
// [Main] returns the exit status for cmd/ctx-*/main.go to pass to os.Exit.
package cli
