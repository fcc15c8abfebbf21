package transcript

// Protected returns the messages no lossy tier may alter (DESIGN §4.6): system prompts
// and instructions, the newest user message and the newest assistant message.
func (t *Transcript) Protected() map[int]bool {
	p := map[int]bool{}
	user, assistant := -1, -1
	for i, m := range t.Messages {
		switch {
		case m.Header || m.Role == "system" || m.Role == "developer":
			p[i] = true
		case m.Role == "user":
			user = i
		case m.Role == "assistant":
			assistant = i
		}
	}
	p[user], p[assistant] = true, true
	delete(p, -1)
	return p
}
