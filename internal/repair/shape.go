package repair

import (
	"slices"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// SameProblems reports whether Check finds the same problems, rule by rule, in a and b
// because their messages read alike to every rule: the same format, and message for
// message the same role and place in the array, and block for block the same kind, type,
// tool ids and emptiness (what Check reads; a result's or a text's words, a call's input
// or an image it does not). It is what ctx-proxy needs to hold a request to the client's
// without checking either whole: a tier that clears, cuts or offloads a result changes
// none of that. false says nothing (the documents may still have the same problems);
// JSONL and Cline documents, whose rules read more than that, always give false.
func SameProblems(a, b *transcript.Transcript) bool {
	if a.Format != b.Format || len(a.Messages) != len(b.Messages) {
		return false
	}
	switch a.Format {
	case transcript.Anthropic, transcript.OpenAI, transcript.Responses:
	default:
		return false
	}
	for i := range a.Messages {
		if !SameMessage(a, i, b, i) {
			return false
		}
	}
	return true
}

// SameMessage reports whether message i of a and message j of b read alike to Check's
// rules (SameProblems, message by message): documents of one of the formats SameProblems
// takes whose messages are alike in order, and of which nothing else differs, have the
// same problems.
func SameMessage(a *transcript.Transcript, i int, b *transcript.Transcript, j int) bool {
	if a.Format != b.Format {
		return false
	}
	fa, fb := &fixer{t: a}, &fixer{t: b}
	ma, mb := &a.Messages[i], &b.Messages[j]
	if ma.Header != mb.Header || ma.Role != mb.Role || len(ma.Blocks) != len(mb.Blocks) {
		return false
	}
	// A Responses item read without a role is judged by its first byte (itemShape).
	if ma.Role == "other" && firstByte(a, ma.Span) != firstByte(b, mb.Span) {
		return false
	}
	for k := range ma.Blocks {
		ba, bb := &ma.Blocks[k], &mb.Blocks[k]
		if ba.Kind != bb.Kind || ba.Type != bb.Type || ba.ToolID != bb.ToolID || !slices.Equal(ba.ToolIDs, bb.ToolIDs) ||
			fa.nonEmpty(ba) != fb.nonEmpty(bb) {
			return false
		}
	}
	return true
}

func firstByte(t *transcript.Transcript, s transcript.Span) byte {
	if raw := t.Slice(s); raw != "" {
		return raw[0]
	}
	return 0
}
