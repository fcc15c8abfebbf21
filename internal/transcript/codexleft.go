package transcript

// codexLeft names why a record of a Codex rollout is not part of the conversation: the
// items (and the compacted history) a later compacted record replaced, or a record that
// carries no message at all (session_meta without instructions, turn_context, events).
// It sits apart from codexParser, which builds the conversation, because it is the only
// place that says why a record is not in it.
func codexLeft(r *Record) Left {
	switch r.Type {
	case "response_item", "compacted":
		return Compacted
	}
	return NotMessage
}
