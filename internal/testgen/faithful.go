package testgen

import "strings"

// A Version session (Options.Version) is written as a given version of its agent writes
// it, and records at each request the prompt its provider would bill for it, in tokens
// of Options.Tokens: what was sent before, with the rules of what is sent.
//
//   - The request sends a part no record holds: the system prompt and tool schemas
//     (Claude Code: both, about 20K tokens; Codex: the tool schemas, 3K, its
//     instructions being in the rollout). It does not change with a compaction.
//   - Messages cost their text and their framing as ctxkit prices it (3 tokens a message,
//     Claude's 46 a tool block): what the tests measure is not the counter's rate.
//   - Claude Code 2.1 (Opus 4.7) stores thinking empty with only its signature; the
//     thinking costs what its text would, and its signature is 260 bytes plus a byte for
//     every r tokens, r drawn for each block between 0.22 and 0.32 (the spread of the
//     corpus's Opus 4.7 blocks, output_tokens less the rest of the reply). Thinking of
//     every earlier turn is sent again (Opus 4.7 keeps it). Attachment records put
//     their text in the prompt (a hook's success after a tool call does not).
//   - Codex 0.114 writes each token_count twice, the second after the tool outputs; a
//     reasoning item costs its summary and its reasoning, and the first request of a new
//     user turn sends none of the turn before's. The encrypted payload is 4 bytes a
//     reasoning token and up to 24 more, the size tokens.EncryptedTokens assumes: how
//     Codex sizes it is not documented, and what these sessions test is which reasoning
//     is sent, not that rate.
//   - A compaction leaves the part no record holds, the summary and what it keeps: Claude
//     Code the last turn whole half of the time (compactMetadata.preservedSegment),
//     Codex its instructions, the environment, the first request and the summary.
type faithful struct {
	on    bool
	r     rng // the Version's own draws, so the historical documents keep theirs
	count func(string) int

	tok     int // the prompt the next request sends
	prevTok int // the prompt of the request before: what the prompt cache holds
	// turnReasoning is what the current user turn's reasoning items cost (Codex); lastTurn
	// what the newest reply and its results cost (Claude Code: a compaction may keep it).
	turnReasoning, lastTurn int
	preserve                bool // the compaction keeps the last turn whole
}

const (
	ccToolSchemas    = 18000 // Claude Code's tool schemas, in tokens
	codexToolSchemas = 3000
	framingMessage   = 3
	framingToolBlock = 46 // Claude's, for a tool_use or a tool_result block
)

// n counts a text as the provider does.
func (f *faithful) n(s string) int {
	if f.count != nil {
		return f.count(s)
	}
	return (len(s) + 3) / 4
}

// base is the part of the prompt no record holds, with Codex's instructions.
func (f *faithful) base(g *gen) int {
	if g.d == dCodex {
		return f.n(g.system) + framingMessage + codexToolSchemas
	}
	return f.n(g.system) + ccToolSchemas
}

// user adds a user message; a new Codex turn sends none of the reasoning of the one
// before.
func (f *faithful) user(g *gen, m *userMsg) {
	if g.d == dCodex {
		f.tok -= f.turnReasoning
		f.turnReasoning = 0
	}
	f.tok += f.n(m.text) + framingMessage
}

// request fills in the usage a request records: its prompt, what the cache held of it,
// and its output.
func (f *faithful) request(g *gen, t *turn) {
	if t.thinking != "" {
		t.think = f.n(t.thinking)
		if g.d == dCodex {
			first, _, _ := strings.Cut(t.thinking, ". ")
			t.summary = "**" + title(g.r.pick(verbs)) + "ing the " + g.r.pick(nouns) + "**\n\n" + first + "."
		}
	}
	visible := f.n(t.text)
	for _, c := range t.calls {
		visible += f.n(string(c.input)) + f.n(c.name)
	}
	in := min(f.r.between(1, 9), f.tok)
	read := min(f.prevTok, f.tok-in)
	t.usage = usage{in: in, read: read, create: f.tok - in - read, out: t.think + visible, reasoning: t.think}
}

// reply adds the reply, as the next request sends it back.
func (f *faithful) reply(g *gen, t *turn) {
	added := 0
	if g.d == dCodex {
		if t.thinking != "" {
			r := f.n(t.summary) + t.think + framingMessage
			added += r
			f.turnReasoning += r
		}
		if t.text != "" {
			added += f.n(t.text) + framingMessage
		}
		for _, c := range t.calls {
			added += f.n(string(c.input)) + f.n(c.name) + framingMessage
		}
	} else {
		added = t.think + f.n(t.text) + framingMessage
		for _, c := range t.calls {
			added += f.n(string(c.input)) + f.n(c.name) + framingToolBlock
		}
		f.lastTurn = 0
	}
	f.prevTok = f.tok
	f.tok += added
	f.lastTurn += added
}

// result adds a tool's result, as the model reads it.
func (f *faithful) result(g *gen, text string) {
	n := f.n(text) + framingMessage
	if g.d != dCodex {
		n += framingToolBlock
	}
	f.tok += n
	f.lastTurn += n
}

// attached adds what an attachment record puts into the prompt.
func (f *faithful) attached(text string) {
	f.tok += f.n(text) + f.n("<system-reminder>\n\n</system-reminder>")
}

// compacted starts the prompt again from what a compaction leaves: the part no record
// holds, and the history it writes (the summary, what it keeps whole), with a cold cache.
func (f *faithful) compacted(g *gen, history ...string) {
	f.tok = f.base(g)
	for _, h := range history {
		f.tok += f.n(h) + framingMessage
	}
	if f.preserve {
		f.tok += f.lastTurn
	}
	f.prevTok, f.turnReasoning = 0, 0
}

// signature is a thinking block's signature, of the size that carries think tokens.
func (f *faithful) signature(think int) string {
	rate := float64(f.r.between(22, 32)) / 100
	n := 260 + int(float64(think)/rate)
	return f.r.b64(n * 3 / 4)
}
