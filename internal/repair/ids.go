package repair

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// deriveID makes the new id of a call whose own is empty or taken: a hash of the old id
// and the call's place, so repairing the same document twice gives the same id, in the
// spelling the format's ids have. used holds every id of the document; a clash (never seen
// in practice) moves on to the next hash.
func deriveID(f transcript.Format, old string, at transcript.Ref, used map[string]bool) string {
	prefix := "call_"
	if f.Wire() == transcript.MessagesWire {
		prefix = "toolu_"
	}
	for n := 0; ; n++ {
		id := prefix + "ctx" + hash(fmt.Sprintf("%s\x00%d\x00%d\x00%d", old, at.Message, at.Block, n))[:21]
		if !used[id] {
			return id
		}
	}
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
