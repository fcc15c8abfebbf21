package measure

import (
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestCountsApart: Counts' per-block figures of one message are its own, though they
// share two arrays: a tier that appends to one message's blocks leaves the next
// message's figures as they were.
func TestCountsApart(t *testing.T) {
	doc := []byte(`{"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two words"}]},` +
		`{"role":"assistant","content":"three little words"},` +
		`{"role":"user","content":[{"type":"text","text":"four"}]}]}`)
	tr, err := transcript.Parse(doc, transcript.Options{Format: transcript.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	n := Of(tr, tokens.Claude(""), false).Counts()
	blocks, was := slices.Clone(n.Blocks[1]), slices.Clone(n.Was[1])
	if len(n.Blocks[0]) != 2 || len(blocks) == 0 {
		t.Fatalf("blocks %v", n.Blocks)
	}
	n.Blocks[0] = append(n.Blocks[0], -1)
	n.Was[0] = append(n.Was[0], -1)
	if !slices.Equal(n.Blocks[1], blocks) || !slices.Equal(n.Was[1], was) {
		t.Errorf("an append to message 0's blocks changed message 1's: %v %v, were %v %v", n.Blocks[1], n.Was[1], blocks, was)
	}
}
