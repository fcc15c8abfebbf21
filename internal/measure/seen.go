package measure

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The figure every decision uses is what the model would see if the document were sent
// now (DESIGN §5). The file does not hold all of it: an agent sends a system prompt and
// tool schemas its transcript never records (Claude Code: 15-28K tokens). What it records
// in a form the model does not read is counted as the model reads it: thinking stored
// empty from its signature, attachments as the text they put in the prompt. Where the
// transcript records usage, the newest
// figure is the truth at that request; the tally learns from it the part not in the file
// (Hidden), and the total is Hidden plus everything counted. So the total at the newest
// request equals what was recorded, and what came after it is counted on top.
//
// An edit by a ctxkit tier leaves the recorded figures as they were, measuring content
// that is no longer there. Every tier's marker says how much the text it stands for held
// (Block.Was): the part not in the file is worked out against the content as it was, so a
// tier's output counts what it saved less, not the same as before (no stale anchor).

// Anchor is the evidence behind Hidden: the recorded figure it was learned from.
type Anchor struct {
	// Recorded is the context the agent recorded at its newest request: the prompt, plus
	// the reply as the next request sends it (its recorded output, or its content when
	// that holds more: output is sometimes logged at stream start).
	Recorded int
	// At is the message the figure covers up to (the reply).
	At int
	// CacheRead and CacheCreation are the parts of the prompt the provider reported as
	// cache hits and cache writes.
	CacheRead, CacheCreation int
	// Counted is our count of messages 0..At as they are now; Removed what ctxkit's
	// markers among them say was taken out of them since.
	Counted, Removed int
	// Stale is what the reasoning the figure's request sent, and no request sends any
	// more, costs by our count: the encrypted reasoning of the turn the figure is of, once
	// a newer user message follows it (dropStaleReasoning). The figure holds it; the
	// next request does not.
	Stale int
}

// Hidden sources.
const (
	FromUsage    = "recorded usage"
	FromOverhead = "--overhead"
)

// anchor works out the part of the conversation the file does not hold, from the newest
// usage figure: Hidden = recorded - (counted up to it + what edits removed up to it + the
// reasoning it holds that is no longer sent), never below zero. Without a figure it leaves Hidden to the caller (AddOverhead).
func (tl *Tally) anchor() {
	u, ok := transcript.LastUsage(tl.Usage)
	if !ok || u.After < 0 || u.After >= len(tl.Messages) {
		return
	}
	framing := tl.Framing()
	a := &Anchor{At: u.After, CacheRead: u.CacheRead, CacheCreation: u.CacheCreation}
	turn := 0 // the newest user message the figure's request sent: its reasoning after it was sent
	for mi := u.After; mi >= 0; mi-- {
		if tl.Messages[mi].Role == "user" {
			turn = mi
			break
		}
	}
	for mi := 0; mi <= u.After; mi++ {
		m := &tl.Messages[mi]
		a.Counted += m.Tokens(framing)
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Was > b.Tokens {
				a.Removed += b.Was - b.Tokens
			}
			if mi > turn {
				a.Stale += b.Stale
			}
		}
	}
	for _, at := range tl.Attachments {
		if at.Before <= u.After {
			a.Counted += at.Tokens
		}
	}
	if tl.HasSchema {
		a.Counted += tl.Schema
	}
	a.Counted += replyPriming(len(tl.Messages))
	a.Recorded = u.Context()
	if tl.Format == transcript.ClaudeCode {
		// The figure is the prompt of the reply at u.After; the reply itself is sent
		// back with the next request. Its output_tokens is sometimes logged when the
		// stream starts (a 15K-character edit recorded as 1 token), so it counts at
		// least what its content holds.
		reply := tl.Messages[u.After].Tokens(framing)
		a.Recorded = u.Input + max(u.Output, reply)
	}
	tl.Anchor = a
	tl.Hidden = max(0, a.Recorded-a.Counted-a.Removed-a.Stale)
	tl.HiddenFrom = FromUsage
}

// carryHidden learns the part no record holds from the conversation the newest
// compaction replaced (transcript.Prior, counted as prior), for a conversation that
// records no figure since: the system prompt and tool schemas an agent sends do not
// change with a compaction, and without them the headline right after one is the
// summary alone, 87-97% short of what the next request sends. The figure the conversation
// records next takes over.
func (tl *Tally) carryHidden(prior *Tally) {
	dropStaleReasoning(prior.Messages)
	prior.anchor()
	if prior.Anchor == nil {
		return
	}
	tl.Hidden, tl.HiddenFrom, tl.HiddenAcross = prior.Hidden, FromUsage, true
}

// AddOverhead sets the part not in the file for a conversation that records no usage:
// what the user says the agent adds (--overhead). A recorded figure wins over it, one
// recorded before a compaction too.
func (tl *Tally) AddOverhead(n int) {
	if tl.Anchor != nil || tl.HiddenFrom == FromUsage || n <= 0 {
		return
	}
	tl.Hidden, tl.HiddenFrom = n, FromOverhead
}

// markerWas reads the size a ctxkit marker in a block's text says the text it stands for
// had (the tokens of a cleared, cut or stored result, or of the messages a summary
// replaces), 0 when the text holds no marker. text may be the block's JSON string literal
// as written: the parts read hold no characters JSON escapes.
//
// A summary's figure (and ctx-trim's note's) is of whole messages, their framing
// included, where the text that stands for them is framed once: messages says so.
func markerWas(text string) (n int, messages bool) {
	// ctx-snip's JSON placeholder is read only at the start of the text (its syntax is
	// anchored there): looking for it further on cost a scan that stops at every "c".
	if !strings.Contains(text, "[ctx-") && !strings.Contains(text, "<ctxkit-summary") && !strings.Contains(text[:min(len(text), snipAt)], "ctx_snip") {
		return 0, false
	}
	// Whole-message markers first: a summary quotes the markers of what it summarizes
	// (a cleared result's placeholder), and its own figure is the one that counts.
	syntax := wasSyntax()
	for i := range syntax {
		k := (i + wholeMessages) % len(syntax)
		if m := syntax[k].FindStringSubmatch(text); m != nil {
			n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			if err == nil {
				return n, k >= wholeMessages
			}
		}
	}
	return 0, false
}

// wasSyntax finds the original size in each tier's marker: ctx-snip's placeholder,
// ctx-budget's cut, ctx-persist's reference and ctx-summarize's summary.
// The entries from wholeMessages on stand for whole messages. They are compiled on first
// use: at start they cost every process 0.6-0.8 ms, most of its package's init, though
// only a document that holds a marker needs them.
var wasSyntax = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`\[ctx-snip: .*? cleared \(([0-9,]+) tokens?\)`),
		regexp.MustCompile(`^"?\{\\?"ctx_snip\\?":\\?"cleared ([0-9,]+) tokens?`),
		regexp.MustCompile(`^"\[ctx-snip: cleared ([0-9,]+) tokens?[\];]`),
		regexp.MustCompile(`\[ctx-budget: cut [0-9,]+ of [0-9,]+ characters? (?:here|in [0-9,]+ places?) \(originally ([0-9,]+) tokens?`),
		regexp.MustCompile(`\[ctx-persist: tool result stored in full \([0-9]+ bytes?, [0-9]+ lines?, ~([0-9]+) tokens?\)`),
		regexp.MustCompile(`<ctxkit-summary [^>]*?tokens=\\?"([0-9]+)\\?"`),
		regexp.MustCompile(`\[ctx-trim: .*? \(([0-9,]+) tokens?\)`),
	}
})

const wholeMessages = 5

// snipAt: "ctx_snip" of ctx-snip's JSON placeholder ends by this byte of the text, after
// `"{\"` at most (wasSyntax's second entry).
const snipAt = len(`"{\"ctx_snip`)
