package count

import (
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Comparison relates two versions of one conversation: what a tool saved, and how much of
// the provider's prompt cache the new version can still use.
type Comparison struct {
	Before     Side    `json:"before"`
	After      Side    `json:"after"`
	Saved      int     `json:"saved"`
	SavedRatio float64 `json:"saved_ratio"`
	Unchanged  int     `json:"messages_unchanged"`
	Changed    int     `json:"messages_changed"`
	Removed    int     `json:"messages_removed"`
	Added      int     `json:"messages_added"`
	// PrefixBytes is the length of the identical byte prefix of the two files.
	// PrefixMessages are the messages the two send identical from the first on, and
	// PrefixTokens their tokens (with the tool schemas when those are identical too):
	// what a prompt cache keyed on the request's prefix would still hit. They compare the
	// conversations as sent, not the files: a Claude Code log compacted by ctx-summarize
	// still starts with the records the summary replaced, but its request starts with
	// the summary.
	PrefixBytes    int     `json:"prefix_bytes"`
	PrefixMessages int     `json:"prefix_messages"`
	PrefixTokens   int     `json:"prefix_tokens"`
	PrefixRatio    float64 `json:"prefix_ratio"`
	// SchemaVersion is schema/count-comparison.json's version, last as in the report.
	SchemaVersion int `json:"schema_version"`
}

// Side is one version in a Comparison.
type Side struct {
	File     string `json:"file"`
	Tokens   int    `json:"tokens"`
	Messages int    `json:"messages"`
}

// Compare measures what changed from a to b, given both transcripts and their reports.
func Compare(a *transcript.Transcript, ra Report, b *transcript.Transcript, rb Report) Comparison {
	c := Comparison{
		Before: Side{File: ra.File, Tokens: ra.Tokens, Messages: len(a.Messages)},
		After:  Side{File: rb.File, Tokens: rb.Tokens, Messages: len(b.Messages)},
		Saved:  ra.Tokens - rb.Tokens,

		SchemaVersion: SchemaVersion,
	}
	c.SavedRatio = measure.Ratio(c.Saved, ra.Tokens)

	// Messages are matched by their bytes, so dropping or inserting messages does not
	// make every later message look changed.
	inB := make(map[string]int, len(b.Messages))
	for i := range b.Messages {
		inB[b.MessageBytes(i)]++
	}
	for i := range a.Messages {
		key := a.MessageBytes(i)
		if inB[key] > 0 {
			inB[key]--
			c.Unchanged++
		}
	}
	// What is left on each side was changed (a pair) or removed/added (the surplus).
	leftA := len(a.Messages) - c.Unchanged
	leftB := len(b.Messages) - c.Unchanged
	c.Changed = min(leftA, leftB)
	c.Removed = leftA - c.Changed
	c.Added = leftB - c.Changed

	n := min(len(a.Doc), len(b.Doc))
	p := 0
	for p < n && a.Doc[p] == b.Doc[p] {
		p++
	}
	c.PrefixBytes = p
	if p == len(a.Doc) && p == len(b.Doc) {
		c.PrefixMessages, c.PrefixTokens, c.PrefixRatio = len(a.Messages), ra.Tokens, 1
		return c
	}
	if a.Slice(a.Tools) != b.Slice(b.Tools) {
		// The tool schemas come first in the request: changed, nothing after them is read.
		c.PrefixRatio = 0
		return c
	}
	if !a.Tools.IsZero() {
		c.PrefixTokens += ra.ByKind["tools"]
	}
	for k := 0; k < len(a.Messages) && k < len(b.Messages) && a.MessageBytes(k) == b.MessageBytes(k); k++ {
		c.PrefixMessages++
		c.PrefixTokens += ra.Messages[k].Tokens
	}
	c.PrefixRatio = measure.Ratio(c.PrefixTokens, ra.Tokens)
	return c
}
