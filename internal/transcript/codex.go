package transcript

import (
	"cmp"
	"fmt"
	"slices"
	"time"
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
	// window is the model_context_window of the last task_started event: newer Codex
	// versions record it there as well as in token_count.
	window int
	// totals are the session's running totals (total_token_usage) the last token_count
	// event carried, when it carried them.
	totals    codexTotals
	hasTotals bool
	// prior is the conversation the newest compaction replaced, up to its newest figure
	// (Outline.Prior).
	prior *Prior
	// keep asks record to keep what it read of each record (recs), for Reparse.
	keep bool
	recs []codexRec
}

// codexTotals is a token_count event's total_token_usage: input, cached input, output,
// reasoning output and total tokens of the session so far.
type codexTotals [5]int64

// codexRec is what a record of a rollout says on its own, read from its line alone: the
// messages it carries (returned beside it), and the state it sets (model, window, figure).
// codexParser.apply plays it into the conversation in order; Reparse keeps it for a line
// it meets again.
type codexRec struct {
	compacted bool   // a compacted record
	model     string // turn_context
	window    int    // task_started, turn_started
	// A token_count event's figure (ok), with the session's totals (hasTotals).
	usage             Usage
	totals            codexTotals
	hasTotals, counts bool
}

func (p *codexParser) record(seq int, r *Record, raw string) []Message {
	rec, out := codexRead(r, raw)
	p.apply(seq, &rec, out)
	if p.keep {
		p.recs = append(p.recs, rec)
	}
	return out
}

// codexRead reads one record of a rollout (raw is its line, r its record).
func codexRead(r *Record, raw string) (codexRec, []Message) {
	var f [2]jval
	recordValue(raw, r.Span.Start).fields(f[:], "timestamp", "payload")
	stamp, payload := f[0].str(), f[1]
	rec := codexRec{compacted: r.Type == "compacted"}
	var out []Message
	add := func(m Message) {
		m.Time = parseTime(stamp, time.Time{})
		markCodexItem(&m, raw, r.Span.Start)
		m.Summary = m.Summary || opensWith(raw, r.Span.Start, &m, TrimNote)
		if m.Span.IsZero() {
			m.Span = r.Span
		}
		out = append(out, m)
	}
	switch r.Type {
	case "session_meta":
		// The base instructions are sent with every request.
		var pf [2]jval
		payload.fields(pf[:], "base_instructions", "instructions")
		if ins := pf[0].get("text"); ins.isString() {
			add(headerMessage(ins))
		} else if ins := pf[1]; ins.isString() {
			add(headerMessage(ins))
		}
	case "turn_context":
		if m := payload.get("model").str(); m != "" {
			rec.model = intern(m)
		}
	case "response_item":
		m := responsesItem(payload)
		m.Lines = []Span{r.Span}
		add(m)
	case "compacted":
		var pf [2]jval
		payload.fields(pf[:], "replacement_history", "message")
		if hist := pf[0]; hist.isArray() {
			hist.elements(func(it jval) bool {
				m := responsesItem(it)
				m.Lines = []Span{r.Span}
				m.Summary = true
				add(m)
				return true
			})
		} else if msg := pf[1]; msg.isString() {
			add(Message{Role: "user", Span: msg.span(), Lines: []Span{r.Span}, Summary: true,
				Blocks: []Block{textBlock(msg, "input_text")}})
		}
	case "event_msg":
		var pf [3]jval
		payload.fields(pf[:], "type", "info", "model_context_window")
		typ := pf[0].str()
		if typ == "task_started" || typ == "turn_started" {
			rec.window = max(0, int(pf[2].integer()))
		}
		if typ == "token_count" {
			rec.usage, rec.totals, rec.hasTotals, rec.counts = codexTokenCount(pf[1])
		}
	}
	return rec, out
}

// apply plays record seq, read as rec carrying the messages out, into the conversation.
func (p *codexParser) apply(seq int, rec *codexRec, out []Message) {
	if rec.compacted {
		p.compact()
	}
	for k, m := range out {
		p.parts = append(p.parts, []Part{{Record: seq, Message: k}})
		m.Blocks = nil
		m.Role, m.ID, m.Name = intern(m.Role), keep(m.ID), keep(m.Name)
		p.messages = append(p.messages, m)
	}
	if rec.model != "" {
		p.model = rec.model
	}
	if rec.window > 0 {
		p.window = rec.window
	}
	if !rec.counts {
		return
	}
	if rec.hasTotals && p.hasTotals && rec.totals == p.totals {
		return // the same request's figure again (see codexTokenCount)
	}
	p.totals, p.hasTotals = rec.totals, rec.hasTotals
	u := rec.usage
	u.After, u.Window = len(p.messages)-1, cmp.Or(u.Window, p.window)
	p.usage = append(p.usage, u)
}

// Compacts reports whether t, one record as Stream passes it, replaces the conversation
// before it: a Codex compacted record. Of the records before it, only those carrying a
// header message (Message.Header, the session's instructions) are still part of the
// conversation, whatever follows, so a reader that streams may forget the others; the
// rule is codexParser.compact's.
func (t *Transcript) Compacts() bool {
	return t.Format == Codex && len(t.Records) == 1 && t.Records[0].Type == "compacted"
}

// codexTokenCount reads the info of a token_count event: the figure of the request just
// made, and the session's running totals (hasTotals when the event carries them). ok is
// false when the event carries no figure.
//
// Codex 0.101 and 0.114 write each token_count event twice, the second after the tool
// outputs the reply asked for: both carry the same figures. The totals tell them apart
// from a new request, which always adds to them: an event whose totals are those of the
// event before it is the same request, and is read once (at the first, which is where the
// reply ends; the second would say the request covered the tool outputs too).
func codexTokenCount(info jval) (u Usage, totals codexTotals, hasTotals, ok bool) {
	var inf [3]jval
	info.fields(inf[:], "last_token_usage", "model_context_window", "total_token_usage")
	last := inf[0]
	if !last.isObject() {
		return Usage{}, totals, false, false
	}
	var g [3]jval
	last.fields(g[:], "input_tokens", "cached_input_tokens", "output_tokens")
	if tot := inf[2]; tot.isObject() {
		var tf [5]jval
		tot.fields(tf[:], "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
		for i := range tf {
			totals[i] = tf[i].integer()
		}
		hasTotals = true
	}
	return Usage{Input: int(g[0].integer()), CacheRead: int(g[1].integer()), Output: int(g[2].integer()),
		Window: int(inf[1].integer())}, totals, hasTotals, true
}

// key names the totals, for a reader that sees one record at a time (RecordUsage).
func (t codexTotals) key() string { return fmt.Sprint([5]int64(t)) }

// compact drops the history before a compacted record. Header messages (the session's
// instructions) stay: Codex sends them with every request.
func (p *codexParser) compact() {
	// What the hidden part is learned from until a figure comes after the compaction
	// (none when no figure came since the compaction before: LiveRecords.KeepPrior keeps
	// the records of one conversation only).
	p.prior = nil
	if n := len(p.usage); n > 0 {
		u := p.usage[n-1]
		p.prior = &Prior{Messages: slices.Clone(p.messages[:u.After+1]), Parts: slices.Clone(p.parts[:u.After+1]), Usage: u}
	}
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
	if p.prior != nil && len(p.prior.Messages) > 0 {
		o.Prior = p.prior
	}
}

// codexLeft names why a record of a Codex rollout is not part of the conversation: the
// items (and the compacted history) a later compacted record replaced, or a record that
// carries no message at all (session_meta without instructions, turn_context, events).
func codexLeft(r *Record) Left {
	switch r.Type {
	case "response_item", "compacted":
		return Compacted
	}
	return NotMessage
}
