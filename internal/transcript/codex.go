package transcript

import (
	"time"

	"github.com/tidwall/gjson"
)

// parseCodex builds the live conversation of a Codex CLI rollout: response_item payloads
// are the items; a compacted record replaces everything before it with its
// replacement_history (or, in older rollouts, with its summary message); token_count
// events carry the real usage.
func parseCodex(t *Transcript) {
	for i := range t.Records {
		r := &t.Records[i]
		raw := t.Slice(r.Span)
		f := gjson.GetMany(raw, "timestamp", "payload")
		stamp, payload := f[0].String(), f[1]
		payload.Index += r.Span.Start
		switch r.Type {
		case "session_meta":
			// The base instructions are sent with every request.
			if ins := payload.Get("base_instructions.text"); ins.Type == gjson.String {
				codexAppend(t, i, headerMessage(ins), stamp)
			} else if ins := payload.Get("instructions"); ins.Type == gjson.String {
				codexAppend(t, i, headerMessage(ins), stamp)
			}
		case "turn_context":
			if m := payload.Get("model").String(); m != "" {
				t.Model = m
			}
		case "response_item":
			m := responsesItem(payload)
			m.Lines = []Span{r.Span}
			codexAppend(t, i, m, stamp)
		case "compacted":
			codexCompact(t, i, payload, stamp)
		case "event_msg":
			if payload.Get("type").String() != "token_count" {
				continue
			}
			info := payload.Get("info")
			last := info.Get("last_token_usage")
			if !last.IsObject() {
				continue
			}
			g := gjson.GetMany(last.Raw, "input_tokens", "cached_input_tokens", "output_tokens")
			t.Usage = append(t.Usage, Usage{
				After:     len(t.Messages) - 1,
				Input:     int(g[0].Int()),
				CacheRead: int(g[1].Int()),
				Output:    int(g[2].Int()),
				Window:    int(info.Get("model_context_window").Int()),
			})
		}
	}
}

func codexAppend(t *Transcript, rec int, m Message, stamp string) {
	m.Time = parseTime(stamp, time.Time{})
	if m.Span.IsZero() {
		m.Span = t.Records[rec].Span
	}
	t.Records[rec].Message = len(t.Messages)
	t.Messages = append(t.Messages, m)
}

// codexCompact drops the history before a compacted record. Header messages (the session's
// instructions) stay: Codex sends them with every request.
func codexCompact(t *Transcript, rec int, payload gjson.Result, stamp string) {
	remap := make(map[int]int)
	var kept []Message
	for i, m := range t.Messages {
		if m.Header {
			remap[i] = len(kept)
			kept = append(kept, m)
		}
	}
	t.Messages = kept
	t.Usage = nil // figures from before the compaction measure a context that is gone
	for i := range t.Records[:rec] {
		if r := &t.Records[i]; r.Message >= 0 {
			if n, ok := remap[r.Message]; ok {
				r.Message = n
			} else {
				r.Message = -1
			}
		}
	}
	if hist := payload.Get("replacement_history"); hist.IsArray() {
		hist.ForEach(func(_, it gjson.Result) bool {
			m := responsesItem(it)
			m.Lines = []Span{t.Records[rec].Span}
			m.Summary = true
			codexAppend(t, rec, m, stamp)
			return true
		})
		return
	}
	if msg := payload.Get("message"); msg.Type == gjson.String {
		m := Message{Role: "user", Span: spanOf(msg), Lines: []Span{t.Records[rec].Span}, Summary: true,
			Blocks: []Block{textBlock(msg, "input_text")}}
		codexAppend(t, rec, m, stamp)
	}
}
