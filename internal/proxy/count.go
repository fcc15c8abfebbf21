package proxy

import (
	"reflect"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The log line's and the totals' counts, once the response has gone back: a request that
// extends the one before repeats its messages, so only the messages the last count did not
// see are read and counted, in a document of the request's top-level fields and those
// messages alone; the others' tokens are the ones counted then (convstate.Counts). A
// message's count depends on no other but in one way (measure's dropStaleReasoning): a
// reasoning item is priced at nothing once a user message follows it. So the counts of
// the messages from the last user message on that hold a reasoning item are counted again
// (Counts.Final), and the others never change. TestCountReusesMessages holds the totals to
// a count of the whole request, turn by turn.

// Flags of a message counted.
const (
	countedUser      uint8 = 1 << iota // its role is user
	countedReasoning                   // it holds a reasoning item
)

// count counts doc, a request of format for model whose message array is doc[start:end],
// holding the messages raws (start < 0: not known, read here), and returns its total with
// the counts of its messages for the next request's count (nil when its messages could not
// be told apart); prev, an earlier request's counts, gives the tokens of the messages raws
// begins with. checked says doc was found to be JSON (scanBody read it whole: the client's
// body), which its reading then does not check again.
func (s *Server) count(doc []byte, checked bool, format transcript.Format, model string, start, end int, raws []string, prev *convstate.Counts) (int, *convstate.Counts) {
	if s.Counter == nil {
		return 0, nil
	}
	c, err := s.Counter(format, model)
	if err != nil {
		return 0, nil
	}
	if start < 0 {
		arr := gjson.GetBytes(doc, arrayKey(format))
		if !arr.IsArray() {
			return wholeCount(doc, format, c), nil
		}
		start, end, raws = arr.Index, arr.Index+len(arr.Raw), raws[:0:0]
		for _, m := range arr.Array() {
			raws = append(raws, m.Raw)
		}
	}
	k := 0
	if prev != nil && prev.Format == string(format) && prev.Model == model {
		// One message at least is read again: a document with none would not be primed
		// for the reply (measure's replyPriming).
		k = max(0, min(convstate.CommonPrefix(raws, prev.Raws), prev.Final, len(prev.Tokens), len(raws)-1))
	}
	for {
		if total, n, ok := countFrom(doc, checked, format, model, start, end, raws, prev, k, c); ok {
			return total, n
		}
		if k == 0 {
			return wholeCount(doc, format, c), nil
		}
		k = 0
	}
}

// countFrom counts the messages raws[k:] in the document doc with its message array,
// doc[start:end], holding them alone, the first k from prev; ok is false when the document
// does not read or its messages are not one each of raws[k:]. checked: doc is JSON, and
// so is the document of its own messages raws[k:] (each one JSON value, as doc holds it).
func countFrom(doc []byte, checked bool, format transcript.Format, model string, start, end int, raws []string, prev *convstate.Counts, k int, c tokens.Counter) (int, *convstate.Counts, bool) {
	part := doc
	if k > 0 || end-start != joinedLen(raws) {
		part = splice(doc, start, end, raws[k:])
	}
	t, err := transcript.Parse(part, transcript.Options{Format: format, Checked: checked})
	if err != nil {
		return 0, nil, false
	}
	tl := measure.Of(t, c, false)
	framing := tl.Framing()
	total := tl.Total()
	n := &convstate.Counts{Format: string(format), Model: model, Raws: raws, Tokens: make([]int, len(raws)), Flags: make([]uint8, len(raws))}
	for i := 0; i < k; i++ {
		n.Tokens[i], n.Flags[i] = prev.Tokens[i], prev.Flags[i]
		total += prev.Tokens[i]
	}
	// splice writes the messages one after the other, a comma between: each message of
	// the array starts where the one before it ended, plus one.
	j, at := k, start+1
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Header {
			continue
		}
		if j >= len(raws) || m.Span.Start != at {
			return 0, nil, false
		}
		n.Tokens[j], n.Flags[j] = counted(t, tl, mi, framing)
		at += len(raws[j]) + 1
		j++
	}
	if j != len(raws) {
		return 0, nil, false
	}
	n.Final = final(n.Flags)
	return total, n, true
}

// counted is message mi's tokens in t, counted as tl, and its flags.
func counted(t *transcript.Transcript, tl *measure.Tally, mi int, framing tokens.Framing) (int, uint8) {
	var flags uint8
	if t.Messages[mi].Role == "user" {
		flags |= countedUser
	}
	for _, b := range tl.Messages[mi].Blocks {
		if b.Reasoning {
			flags |= countedReasoning
		}
	}
	return tl.Messages[mi].Tokens(framing), flags
}

// countOf is count for a request the pipeline counted whole (t, counted as tl: the
// pipeline's output, which the stages counted as they went), its messages raws: no
// message is counted again. ok is false when the log's counter is not the one tl was
// counted with, or t's messages are not one each of raws.
func (s *Server) countOf(t *transcript.Transcript, tl *measure.Tally, model string, raws []string) (int, *convstate.Counts, bool) {
	if s.Counter == nil || t == nil || tl == nil || tl.Counter == nil || len(tl.Messages) != len(t.Messages) {
		return 0, nil, false
	}
	// The same kind of counter, of the same name, made for the same format and model:
	// the same counts (a Claude estimate and a plain one are both "estimate").
	c, err := s.Counter(t.Format, model)
	if err != nil || t.Model != model || c.Name() != tl.Counter.Name() || reflect.TypeOf(c) != reflect.TypeOf(tl.Counter) {
		return 0, nil, false
	}
	framing := tl.Framing()
	n := &convstate.Counts{Format: string(t.Format), Model: model, Raws: raws, Tokens: make([]int, len(raws)), Flags: make([]uint8, len(raws))}
	j := 0
	for mi := range t.Messages {
		if t.Messages[mi].Header {
			continue
		}
		if j >= len(raws) {
			return 0, nil, false
		}
		n.Tokens[j], n.Flags[j] = counted(t, tl, mi, framing)
		j++
	}
	if j != len(raws) {
		return 0, nil, false
	}
	n.Final = final(n.Flags)
	return tl.Total(), n, true
}

// joinedLen is the bytes of an array of the messages ms, a comma between each two.
func joinedLen(ms []string) int { return 2 + max(len(ms)-1, 0) + totalLen(ms) }

// totalLen is the bytes of the messages ms.
func totalLen(ms []string) int {
	n := 0
	for _, m := range ms {
		n += len(m)
	}
	return n
}

// final is how many of the first messages flagged so have a count that no message after
// them can change: all those before the last user message, and after it those before the
// first that holds a reasoning item (dropped, and priced at nothing, once a user message
// follows it).
func final(flags []uint8) int {
	from := 0
	for i := len(flags) - 1; i >= 0; i-- {
		if flags[i]&countedUser != 0 {
			from = i
			break
		}
	}
	for i := from; i < len(flags); i++ {
		if flags[i]&countedReasoning != 0 {
			return i
		}
	}
	return len(flags)
}

// wholeCount counts doc whole, 0 when it does not read.
func wholeCount(doc []byte, format transcript.Format, c tokens.Counter) int {
	t, err := transcript.Parse(doc, transcript.Options{Format: format})
	if err != nil {
		return 0
	}
	return measure.Total(t, c)
}
