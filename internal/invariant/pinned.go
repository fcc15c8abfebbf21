package invariant

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Pin is one piece of what no lossy tier may change (DESIGN §4.6), as written.
type Pin struct {
	At   int    // its document offset
	Text string // its bytes
}

// Pinned lists what a lossy tier must leave as it is: the system prompt and the
// instructions a client sends as messages (headers, system and developer messages, as
// written), the pinned texts (Block.Pinned: their JSON string literals, since a summary
// may carry one over in a block of its own, or ctx-repair merge it into its neighbour),
// and the tool schemas.
func Pinned(tr *transcript.Transcript) []Pin {
	var out []Pin
	for mi := range tr.Messages {
		m := &tr.Messages[mi]
		if m.Header || m.Role == "system" || m.Role == "developer" {
			out = append(out, Pin{m.Span.Start, tr.Slice(m.Span)})
			continue
		}
		for bi := range m.Blocks {
			if b := &m.Blocks[bi]; b.Pinned {
				out = append(out, Pin{b.Body.Start, tr.Slice(b.Body)})
			}
		}
	}
	if !tr.Tools.IsZero() {
		out = append(out, Pin{tr.Tools.Start, tr.Slice(tr.Tools)})
	}
	return out
}

// MissingPinned lists the pieces of want that got has not, byte for byte (each as many
// times as want has it).
func MissingPinned(want, got []Pin) []Pin {
	have := map[string]int{}
	for _, p := range got {
		have[p.Text]++
	}
	var missing []Pin
	for _, p := range want {
		if have[p.Text] > 0 {
			have[p.Text]--
			continue
		}
		missing = append(missing, p)
	}
	return missing
}

// checkPinned reports the pinned context of before that after lost or changed.
func checkPinned(t testing.TB, name string, before, after *transcript.Transcript) {
	t.Helper()
	for _, p := range MissingPinned(Pinned(before), Pinned(after)) {
		t.Errorf("%s: pinned context at byte %d (%s) is not in the output as it was", name, p.At, clip(p.Text))
	}
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
