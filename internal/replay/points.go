package replay

import (
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Point is one request the agent made: the conversation up to it is what it sent.
type Point struct {
	// Message is the index of the first message of the reply: the request holds the
	// messages before it.
	Message int
	// Cut is the document offset where the request's history ends (cutBefore).
	Cut int
	// Recorded is the prompt size the agent recorded for the request (input, cache reads
	// and cache writes), 0 where the document records none; CacheRead and CacheWrite are
	// the parts of it the provider billed as read from the prompt cache and written to it.
	Recorded, CacheRead, CacheWrite int
	// Time is when the request was sent, as far as the document says (the newest time
	// stamp of the history); zero without time stamps.
	Time time.Time
	// ClientCompaction: the client compacted its history since the request before (a
	// Claude Code compact_boundary, a Codex compacted record), so this request is the
	// compacted history the client sent, not the one before plus what came since; Message
	// then indexes the conversation as it was from that compaction on.
	ClientCompaction bool
}

// Points lists the requests of a conversation, in order. A transcript that records usage
// (Claude Code, Codex) made one request per usage figure; any other document, one per
// reply: each assistant message that does not follow another.
func Points(t *transcript.Transcript) []Point {
	var starts []int
	var recorded []transcript.Usage
	if len(t.Usage) > 0 {
		prev := -1
		for _, u := range t.Usage {
			if u.After < 0 || u.After >= len(t.Messages) || u.After <= prev {
				continue
			}
			// A reply may be several messages (Codex: reasoning, then calls; a Claude Code
			// turn split over lines); the request ends before the first of them.
			k := u.After
			for k-1 > prev && t.Messages[k-1].Role == "assistant" && !t.Messages[k-1].Header {
				k--
			}
			prev = u.After
			if k == 0 {
				continue // a reply to nothing: no request the document holds
			}
			starts, recorded = append(starts, k), append(recorded, u)
		}
	} else {
		for k := 1; k < len(t.Messages); k++ {
			if t.Messages[k].Role == "assistant" && t.Messages[k-1].Role != "assistant" {
				starts, recorded = append(starts, k), append(recorded, transcript.Usage{})
			}
		}
	}
	points := make([]Point, 0, len(starts))
	var newest time.Time
	next := 0
	for i, k := range starts {
		for ; next < k; next++ {
			if tm := t.Messages[next].Time; tm.After(newest) {
				newest = tm
			}
		}
		u := recorded[i]
		points = append(points, Point{Message: k, Cut: cutBefore(t, k), Recorded: u.Input, CacheRead: u.CacheRead, CacheWrite: u.CacheCreation, Time: newest})
	}
	return points
}

// cutBefore is the offset where the history before message k ends: the start of the
// reply's first line (JSONL), or the end of the last array element before the reply, or
// just inside the array when there is none (JSON).
func cutBefore(t *transcript.Transcript, k int) int {
	if m := &t.Messages[k]; len(m.Lines) > 0 {
		start := m.Lines[0].Start
		for _, l := range m.Lines {
			start = min(start, l.Start)
		}
		return start
	}
	for j := k - 1; j >= 0; j-- {
		if !t.Messages[j].Header {
			return t.Messages[j].Span.End
		}
	}
	return t.Array.Start + 1
}

// Request is the request the agent sent at p, as the session holds it before any
// pipeline: what a proxy in front of the agent is given at that point.
func (p Point) Request(t *transcript.Transcript) []byte {
	return historyOf(t, p.Cut)
}

// SessionPoints lists the requests of a whole session, those before each compaction the
// client made too. A transcript holds the conversation from its last compaction on; the
// requests before a compaction are those of the session cut where it was made, which
// parse reads as the session was read (for a JSONL log the cut is a prefix of its bytes,
// so each request is still the session cut where it ends). The first request after a
// compaction is marked (Point.ClientCompaction). Without compactions, Points(t).
func SessionPoints(t *transcript.Transcript, parse func([]byte) (*transcript.Transcript, error)) ([]Point, error) {
	bounds := clientCompactions(t)
	if len(bounds) == 0 || parse == nil {
		return Points(t), nil
	}
	var out []Point
	from, compacted := 0, false
	add := func(seg *transcript.Transcript) {
		for _, p := range Points(seg) {
			// A request before the compaction that starts the segment was replayed with the
			// segment before: messages a compaction kept as they were carry their figures.
			if p.Cut <= from || len(out) > 0 && p.Cut <= out[len(out)-1].Cut {
				continue
			}
			p.ClientCompaction, compacted = compacted, false
			out = append(out, p)
		}
	}
	for _, b := range bounds {
		seg, err := parse(unsafe.Slice(unsafe.StringData(t.Doc), b))
		if err != nil {
			return nil, err
		}
		add(seg)
		from, compacted = b, true
	}
	add(t)
	return out, nil
}

// clientCompactions lists the offsets of the records where the client compacted the
// conversation, in document order: a Codex compacted record, a Claude Code
// compact_boundary of the thread the transcript holds (the main one, or a subagent's in
// its own log).
func clientCompactions(t *transcript.Transcript) []int {
	if !t.Format.JSONL() || t.Base != 0 {
		return nil
	}
	var out []int
	sidechain := false
	if t.Format == transcript.ClaudeCode {
		for _, r := range t.Records {
			if r.Message >= 0 {
				sidechain = gjson.Get(t.Slice(r.Span), "isSidechain").Bool()
				break
			}
		}
	}
	for _, r := range t.Records {
		switch {
		case t.Format == transcript.Codex && r.Type == "compacted":
		case t.Format == transcript.ClaudeCode && r.Type == "system":
			g := gjson.GetMany(t.Slice(r.Span), "subtype", "isSidechain")
			if g[0].String() != "compact_boundary" || g[1].Bool() != sidechain {
				continue
			}
		default:
			continue
		}
		if r.Span.Start > 0 {
			out = append(out, r.Span.Start)
		}
	}
	return out
}

// recordedRequests is how many requests the session records a usage figure for, before
// its compactions too and on branches it left: Claude Code's turns of the thread read (the
// session's, or a subagent's: t.Subagent) and Codex's token_count events as
// transcript.ThreadUsage reads them (ctx-count's trend counts the same), and at least
// those of the requests points found.
func recordedRequests(t *transcript.Transcript, points []Point) int {
	n := 0
	turns := map[string]bool{}
	for _, r := range t.Records {
		if r.Type != "assistant" && r.Type != "event_msg" {
			continue
		}
		_, turn, ok := transcript.ThreadUsage(t.Format, t.Slice(r.Span), t.Subagent)
		if !ok || turn != "" && turns[turn] {
			continue
		}
		turns[turn] = turn != ""
		n++
	}
	recorded := 0
	for _, p := range points {
		if p.Recorded > 0 {
			recorded++
		}
	}
	return max(n, recorded)
}
