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

// Pairs links every tool call with its result, in document order of the calls (orphan
// results last). Ids are not trusted to be unique: real transcripts reuse an id for a
// later, different call, so a result answers the oldest call still waiting with its id; a
// result with no id answers the oldest waiting call.
func (t *Transcript) Pairs() []Pair {
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
	for mi := range t.Messages {
		for bi := range t.Messages[mi].Blocks {
			b := &t.Messages[mi].Blocks[bi]
			here := Ref{mi, bi}
			switch b.Kind {
			case ToolCall:
				pending = append(pending, waiting{ref: here, id: b.ToolID, pair: len(pairs)})
				pairs = append(pairs, Pair{ID: b.ToolID, Call: here, Result: None})
				open++
			case ToolResult:
				ids := b.ToolIDs
				if len(ids) == 0 {
					ids = []string{b.ToolID}
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

// Block returns the block a Ref points at.
func (t *Transcript) Block(r Ref) *Block {
	return &t.Messages[r.Message].Blocks[r.Block]
}
