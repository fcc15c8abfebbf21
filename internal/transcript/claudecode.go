package transcript

import (
	"time"

	"github.com/tidwall/gjson"
)

// ccLine is what the Claude Code reader needs of one record.
type ccLine struct {
	uuid, parent string
	msgID        string // message.id of an assistant record
	sidechain    bool
	message      bool     // a user or assistant record
	calls        []string // tool_use ids an assistant record makes
	answers      []string // tool_use ids a user record answers
}

// parseClaudeCode builds the live conversation of a Claude Code session log.
//
// The log is a tree through uuid/parentUuid. The live conversation is the chain from the
// newest message up to the root (rewinds and forks leave dead branches), widened by the
// lines that belong to the turns on it: Claude Code hangs each line of a streamed
// assistant turn, and each result of a parallel tool call, off its own parent, so the
// other lines of a turn (same message.id) and the results of its calls are side branches
// that the model still sees. Lines are taken in file order; assistant lines that share a
// message.id become one message. Subagent (isSidechain) lines are left out unless
// sidechains is set, or unless the file holds nothing else (a subagent's own log).
func parseClaudeCode(t *Transcript, sidechains bool) {
	lines := make([]ccLine, len(t.Records))
	byUUID := make(map[string]int, len(t.Records))
	onlySidechains := true
	for i, r := range t.Records {
		raw := t.Slice(r.Span)
		f := gjson.GetMany(raw, "uuid", "parentUuid", "isSidechain", "message")
		l := ccLine{uuid: f[0].String(), parent: f[1].String(), sidechain: f[2].Bool()}
		msg := f[3]
		l.message = (r.Type == "user" || r.Type == "assistant") && msg.IsObject()
		if l.message {
			if !l.sidechain {
				onlySidechains = false
			}
			if r.Type == "assistant" {
				l.msgID = msg.Get("id").String()
			}
			msg.Get("content").ForEach(func(_, b gjson.Result) bool {
				switch b.Get("type").String() {
				case "tool_use", "server_tool_use", "mcp_tool_use":
					l.calls = append(l.calls, b.Get("id").String())
				case "tool_result":
					l.answers = append(l.answers, b.Get("tool_use_id").String())
				}
				return true
			})
		}
		if l.uuid != "" {
			byUUID[l.uuid] = i
		}
		lines[i] = l
	}
	keepSide := sidechains || onlySidechains
	wanted := func(l *ccLine) bool { return l.message && (keepSide || !l.sidechain) }

	live := make([]bool, len(lines))
	leaf := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if l := &lines[i]; l.message && (onlySidechains || !l.sidechain) {
			leaf = i
			break
		}
	}
	switch {
	case leaf < 0:
	case lines[leaf].uuid == "":
		// Records without ids (an old or hand-made log): every message line.
		for i := range lines {
			live[i] = wanted(&lines[i])
		}
	default:
		for i := leaf; !live[i]; {
			live[i] = true
			p, ok := byUUID[lines[i].parent]
			if lines[i].parent == "" || !ok {
				break
			}
			i = p
		}
		// Widen the chain to whole turns and the results of their calls.
		turns := make(map[string]bool)
		calls := make(map[string]bool)
		for i := range lines {
			if live[i] && lines[i].msgID != "" {
				turns[lines[i].msgID] = true
			}
		}
		for i := range lines {
			l := &lines[i]
			if wanted(l) && l.msgID != "" && turns[l.msgID] {
				live[i] = true
			}
			if live[i] {
				for _, id := range l.calls {
					calls[id] = true
				}
			}
		}
		for i := range lines {
			l := &lines[i]
			if !live[i] && wanted(l) && len(l.answers) > 0 && calls[l.answers[0]] {
				live[i] = true
			}
		}
		if sidechains {
			// Subagent lines are chains of their own; keep them all.
			for i := range lines {
				if lines[i].sidechain && lines[i].message {
					live[i] = true
				}
			}
		}
	}

	turnAt := make(map[string]int)
	for i := range lines {
		l := &lines[i]
		if !live[i] || !wanted(l) {
			continue // attachments, system records and the like sit in the chain too
		}
		r := &t.Records[i]
		raw := t.Slice(r.Span)
		f := gjson.GetMany(raw, "message", "timestamp", "isCompactSummary")
		msg := f[0]
		msg.Index += r.Span.Start
		if at, ok := turnAt[l.msgID]; ok && l.msgID != "" {
			prev := &t.Messages[at]
			prev.Lines = append(prev.Lines, r.Span)
			prev.Blocks = anthropicContent(msg.Get("content"), prev.Blocks)
			prev.Time = parseTime(f[1].String(), prev.Time)
			r.Message = at
			ccUsage(t, msg, at)
			continue
		}
		m := anthropicMessage(msg)
		m.Span = r.Span
		m.Lines = []Span{r.Span}
		m.ID = l.msgID
		if m.ID == "" {
			m.ID = l.uuid
		} else {
			turnAt[l.msgID] = len(t.Messages)
		}
		m.Time = parseTime(f[1].String(), time.Time{})
		m.Summary = f[2].Bool()
		r.Message = len(t.Messages)
		t.Messages = append(t.Messages, m)
		if model := msg.Get("model").String(); model != "" && model != "<synthetic>" {
			t.Model = model
		}
		ccUsage(t, msg, len(t.Messages)-1)
	}
}

// ccUsage records an assistant message's usage: the prompt it answered (fresh, cache-read
// and cache-written tokens) plus its reply.
func ccUsage(t *Transcript, msg gjson.Result, at int) {
	u := msg.Get("usage")
	if !u.IsObject() {
		return
	}
	f := gjson.GetMany(u.Raw, "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
	us := Usage{After: at, CacheRead: int(f[1].Int()), CacheCreation: int(f[2].Int()), Output: int(f[3].Int())}
	us.Input = int(f[0].Int()) + us.CacheRead + us.CacheCreation
	if us.Input == 0 && us.Output == 0 {
		return // synthetic messages carry zeroes
	}
	// A later line of the same turn carries the final figure; keep the list in message order.
	k := len(t.Usage)
	for k > 0 && t.Usage[k-1].After > at {
		k--
	}
	if k > 0 && t.Usage[k-1].After == at {
		t.Usage[k-1] = us
		return
	}
	t.Usage = append(t.Usage, Usage{})
	copy(t.Usage[k+1:], t.Usage[k:])
	t.Usage[k] = us
}

func parseTime(s string, fallback time.Time) time.Time {
	if s == "" {
		return fallback
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fallback
	}
	return ts
}
