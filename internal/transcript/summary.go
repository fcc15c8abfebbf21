package transcript

import "strings"

// SummaryTag opens the text of a summary message that ctx-summarize writes into an API
// document (Anthropic, OpenAI, Responses): `<ctxkit-summary ...>` up to
// `</ctxkit-summary>`. Parse marks a message whose first text starts with it as a Summary,
// so later runs of ctx-summarize fold it into their own summary and ctx-trim keeps it.
// (Claude Code and Codex transcripts have their own markers: isCompactSummary, compacted.)
const SummaryTag = "<ctxkit-summary"

// markSummaries sets Summary on messages whose first text block opens with SummaryTag.
// The tag has nothing a JSON string would escape, so the raw literal is checked as it is.
func markSummaries(t *Transcript) {
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Header || m.Summary {
			continue
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Kind != Text {
				continue
			}
			if !b.BodyJSON && !b.Body.IsZero() {
				raw := t.Slice(b.Body)
				m.Summary = len(raw) > 1 && strings.HasPrefix(raw[1:], SummaryTag)
			}
			break
		}
	}
}
