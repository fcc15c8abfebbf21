// Package tokens owns everything ctxkit knows about the size of a conversation in tokens:
// the token counters (a byte-based estimate; the Claude estimate, which prices characters
// by class at prices fitted per model family on real Claude usage; and the exact
// o200k_base and cl100k_base BPE vocabularies, embedded so counting never touches the
// network or a cache directory),
// the cost of content that is not counted as text (images priced from their pixel size,
// encrypted reasoning, per-message framing), and the table of models with their context
// windows and output limits from which a Budget is worked out.
//
// The counters themselves do no I/O: the vocabularies are compiled into the binary. The
// one side effect is DiskCache, the cache of exact counts shared between runs
// ($XDG_CACHE_HOME/ctxkit), which it reads and writes by safefile's rules when the runner
// asks for it.
package tokens
