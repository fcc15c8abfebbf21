package transcript

// Ref locates a block: Messages[Message].Blocks[Block]. Message is -1 for "none".
type Ref struct{ Message, Block int }

// None is the Ref of a missing call or result.
var None = Ref{-1, -1}

// Pair links a tool call with its result. Either side may be None: a call that was never
// answered, or a result whose call is not in the conversation.
type Pair struct {
	ID           string
	Call, Result Ref
}

// ToolBlocks is a conversation as pairing sees it: messages of blocks, each with a kind and
// tool ids. A Transcript is one; so is a summary that keeps only those facts of each block
// (ctx-count's counts of a streamed document), which PairsOf pairs by the same rule.
type ToolBlocks interface {
	// Len is the number of messages, Blocks(m) the number of blocks of message m.
	Len() int
	Blocks(m int) int
	// Tool describes block b of message m: its kind, its tool id and, for a result that
	// answers a list of calls, every id.
	Tool(m, b int) (kind Kind, id string, ids []string)
}

// Pairs links every tool call with its result, in document order of the calls (orphan
// results last). Ids are not trusted to be unique: real transcripts reuse an id for a
// later, different call, so a result answers the oldest call still waiting with its id; a
// result with no id answers the oldest waiting call.
func (t *Transcript) Pairs() []Pair { return PairsOf(transcriptBlocks{t}) }

// PairsOf pairs the calls and results of any ToolBlocks the way Transcript.Pairs does.
func PairsOf(s ToolBlocks) []Pair {
	type waiting struct {
		ref    Ref
		id     string
		pair   int
		closed bool
	}
	var pairs []Pair
	var pending []waiting
	var orphans []Pair
	open := 0
	for mi, n := 0, s.Len(); mi < n; mi++ {
		for bi, nb := 0, s.Blocks(mi); bi < nb; bi++ {
			kind, toolID, toolIDs := s.Tool(mi, bi)
			here := Ref{mi, bi}
			switch kind {
			case ToolCall:
				pending = append(pending, waiting{ref: here, id: toolID, pair: len(pairs)})
				pairs = append(pairs, Pair{ID: toolID, Call: here, Result: None})
				open++
			case ToolResult:
				ids := toolIDs
				if len(ids) == 0 {
					ids = []string{toolID}
				}
				for _, id := range ids {
					found := false
					for k := range pending {
						w := &pending[k]
						if w.closed || (id != "" && w.id != id) {
							continue
						}
						w.closed, found = true, true
						pairs[w.pair].Result = here
						open--
						break
					}
					if !found {
						orphans = append(orphans, Pair{ID: id, Call: None, Result: here})
					}
				}
				if open == 0 {
					pending = pending[:0]
				}
			}
		}
	}
	return append(pairs, orphans...)
}

type transcriptBlocks struct{ t *Transcript }

func (s transcriptBlocks) Len() int         { return len(s.t.Messages) }
func (s transcriptBlocks) Blocks(m int) int { return len(s.t.Messages[m].Blocks) }
func (s transcriptBlocks) Tool(m, b int) (Kind, string, []string) {
	bl := &s.t.Messages[m].Blocks[b]
	return bl.Kind, bl.ToolID, bl.ToolIDs
}

// Block returns the block a Ref points at.
func (t *Transcript) Block(r Ref) *Block {
	return &t.Messages[r.Message].Blocks[r.Block]
}

// OnlyResults reports whether a message holds nothing but tool results.
func (m *Message) OnlyResults() bool {
	if len(m.Blocks) == 0 {
		return false
	}
	for bi := range m.Blocks {
		if m.Blocks[bi].Kind != ToolResult {
			return false
		}
	}
	return true
}

// AfterReasoning reports whether message mi follows a Responses (or Codex) reasoning item,
// which must stay with the call or message it leads to: a tier that drops or replaces
// messages never parts the two.
func (t *Transcript) AfterReasoning(mi int) bool {
	if mi == 0 || mi >= len(t.Messages) || (t.Format != Responses && t.Format != Codex) {
		return false
	}
	prev := &t.Messages[mi-1]
	return len(prev.Blocks) > 0 && prev.Blocks[0].Kind == Thinking
}

// Glued marks the messages a tier may not part from the one before them: every message
// inside a call..result span (glued[m] for message m; one more entry, false, for the end),
// so a call is never dropped or summarized away without its result.
func (t *Transcript) Glued() []bool {
	glued := make([]bool, len(t.Messages)+1)
	for _, p := range t.Pairs() {
		if p.Call == None || p.Result == None {
			continue
		}
		lo, hi := min(p.Call.Message, p.Result.Message), max(p.Call.Message, p.Result.Message)
		for mi := lo + 1; mi <= hi; mi++ {
			glued[mi] = true
		}
	}
	return glued
}
