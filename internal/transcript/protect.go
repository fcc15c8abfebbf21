package transcript

// Protected returns the messages no lossy tier may alter (DESIGN §4.6): system prompts
// and instructions, the newest user message and the newest assistant message. A summary
// (or ctx-trim's note) stands for history, not for what the user asks now: it is the newest
// user message only when there is no other.
func (t *Transcript) Protected() map[int]bool {
	p := map[int]bool{}
	user, summary, assistant := -1, -1, -1
	for i, m := range t.Messages {
		switch {
		case m.Header || m.Role == "system" || m.Role == "developer":
			p[i] = true
		case m.Role == "user" && m.Summary:
			summary = i
		case m.Role == "user":
			user = i
		case m.Role == "assistant":
			assistant = i
		}
	}
	if user < 0 {
		user = summary
	}
	p[user], p[assistant] = true, true
	delete(p, -1)
	return p
}
