package transcript

import (
	"time"

	"github.com/tidwall/gjson"
)

// codexParser reads a Codex CLI rollout: response_item payloads are the items; a compacted
// record replaces everything before it with its replacement_history (or, in older
// rollouts, with its summary message); token_count events carry the real usage. Nothing
// depends on later records, so the conversation is built as the records come.
type codexParser struct {
	messages []Message // without blocks
	parts    [][]Part
	usage    []Usage
	model    string
}

func (p *codexParser) record(seq int, r *Record, raw string) []Message {
	f := gjson.GetMany(raw, "timestamp", "payload")
	stamp, payload := f[0].String(), f[1]
	payload.Index += r.Span.Start
	var out []Message
	add := func(m Message) {
		m.Time = parseTime(stamp, time.Time{})
		if m.Span.IsZero() {
			m.Span = r.Span
		}
		p.parts = append(p.parts, []Part{{Record: seq, Message: len(out)}})
		out = append(out, m)
		m.Blocks = nil
		m.Role, m.ID, m.Name = intern(m.Role), keep(m.ID), keep(m.Name)
		p.messages = append(p.messages, m)
	}
	switch r.Type {
	case "session_meta":
		// The base instructions are sent with every request.
		if ins := payload.Get("base_instructions.text"); ins.Type == gjson.String {
			add(headerMessage(ins))
		} else if ins := payload.Get("instructions"); ins.Type == gjson.String {
			add(headerMessage(ins))
		}
	case "turn_context":
		if m := payload.Get("model").String(); m != "" {
			p.model = intern(m)
		}
	case "response_item":
		m := responsesItem(payload)
		m.Lines = []Span{r.Span}
		add(m)
	case "compacted":
		p.compact()
		if hist := payload.Get("replacement_history"); hist.IsArray() {
			hist.ForEach(func(_, it gjson.Result) bool {
				m := responsesItem(it)
				m.Lines = []Span{r.Span}
				m.Summary = true
				add(m)
				return true
			})
		} else if msg := payload.Get("message"); msg.Type == gjson.String {
			add(Message{Role: "user", Span: spanOf(msg), Lines: []Span{r.Span}, Summary: true,
				Blocks: []Block{textBlock(msg, "input_text")}})
		}
	case "event_msg":
		if payload.Get("type").String() != "token_count" {
			break
		}
		info := payload.Get("info")
		last := info.Get("last_token_usage")
		if !last.IsObject() {
			break
		}
		g := gjson.GetMany(last.Raw, "input_tokens", "cached_input_tokens", "output_tokens")
		p.usage = append(p.usage, Usage{
			After:     len(p.messages) - 1,
			Input:     int(g[0].Int()),
			CacheRead: int(g[1].Int()),
			Output:    int(g[2].Int()),
			Window:    int(info.Get("model_context_window").Int()),
		})
	}
	return out
}

// compact drops the history before a compacted record. Header messages (the session's
// instructions) stay: Codex sends them with every request.
func (p *codexParser) compact() {
	var messages []Message
	var parts [][]Part
	for i, m := range p.messages {
		if m.Header {
			messages = append(messages, m)
			parts = append(parts, p.parts[i])
		}
	}
	p.messages, p.parts = messages, parts
	p.usage = nil // figures from before the compaction measure a context that is gone
}

func (p *codexParser) finish(o *Outline) {
	o.Messages, o.Parts, o.Usage, o.Model = p.messages, p.parts, p.usage, p.model
}
