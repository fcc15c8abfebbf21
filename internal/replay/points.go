package replay

import (
	"time"

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
