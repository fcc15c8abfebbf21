package transcript

import "strings"

// SummaryTag opens the text of a summary message that ctx-summarize writes into an API
// document (Anthropic, OpenAI, Responses): `<ctxkit-summary ...>` up to
// `</ctxkit-summary>`. Parse marks a message whose first text starts with it as a Summary,
// so later runs of ctx-summarize fold it into their own summary and ctx-trim keeps it.
// (Claude Code and Codex transcripts have their own markers: isCompactSummary, compacted.)
const SummaryTag = "<ctxkit-summary"

// TrimNote opens the note ctx-trim leaves where it dropped the start of a session log
// (Claude Code, Codex): it stands for history that is gone, as a summary does, so it is a
// Summary too, and a later ctx-trim keeps it.
const TrimNote = "[ctx-trim: "

// markSummaries sets Summary on messages whose first text block opens with SummaryTag or
// TrimNote (pinned blocks, which a summary carries over before its text, aside).
func markSummaries(t *Transcript) {
	for i := range t.Messages {
		if m := &t.Messages[i]; !m.Header && !m.Summary {
			m.Summary = opensWith(t.Doc, t.Base, m, SummaryTag) || opensWith(t.Doc, t.Base, m, TrimNote)
		}
	}
}

// opensWith says whether the first text block of m that is not pinned context, in doc (whose first byte is at
// document offset base), opens with prefix. Neither SummaryTag nor TrimNote has anything a
// JSON string would escape, so the raw literal is checked as it is.
func opensWith(doc string, base int, m *Message, prefix string) bool {
	for j := range m.Blocks {
		b := &m.Blocks[j]
		if b.Kind != Text || b.Pinned {
			continue
		}
		if b.BodyJSON || b.Body.IsZero() {
			return false
		}
		raw := doc[b.Body.Start-base : b.Body.End-base]
		return len(raw) > 1 && strings.HasPrefix(raw[1:], prefix)
	}
	return false
}
