package proxy

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A request that extends a conversation repeats every message of the one before, byte for
// byte as a rule: reading the body is then comparing those bytes with the messages kept
// (one memory comparison each), and only what follows them, and the small top-level
// fields, is read and checked as JSON. scanBody does that, and falls back to reading the
// body whole (gjson: one validation, one pass over the top level, one over the messages)
// for a first request, and for any body the quick reading does not take as it is.

// scanned is a request body's top level as rewrite needs it.
type scanned struct {
	top topFields
	// start and end are the offsets in the body of the message array's '[' and of the
	// byte past its ']'.
	start, end int
	// msgs are its messages: those the body repeats of the messages it was read against
	// (known of them, first) have their Raw strings, not copies; the others are copies of
	// their bytes (quickScan's each its own), never views of the body, so that keeping
	// them keeps nothing else: not the body, and not the rest of a request of which a later
	// one (a client that went back in the conversation) repeats only some messages.
	msgs  []gjson.Result
	known int
}

// scanBody reads body's top level and its message array (the value of arrayKey(format));
// recent, given the raw first message, returns the messages of requests kept that may
// begin this one (none: none); the one whose second message the body has is read against. ok is false when body is not JSON, or its message array is
// not an array: the body is not a conversation to touch.
func scanBody(body []byte, format transcript.Format, recent func(first string) [][]string) (sc scanned, ok bool) {
	if sc, ok := quickScan(body, arrayKey(format), recent); ok {
		return sc, true
	}
	return slowScan(body, format)
}

// slowScan reads body with gjson alone.
func slowScan(body []byte, format transcript.Format) (sc scanned, ok bool) {
	if !gjson.ValidBytes(body) {
		return sc, false
	}
	arr := gjson.GetBytes(body, arrayKey(format))
	if !arr.IsArray() {
		return sc, false // a Responses "input" string, a body of another kind: not ours to touch
	}
	sc.start, sc.end = arr.Index, arr.Index+len(arr.Raw)
	sc.msgs = arr.Array()
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		sc.top.see(k.Str, v)
		return true
	})
	return sc, true
}

// quickScan reads body against the messages recent gives for its first one. It takes only
// a body it reads the way slowScan does (what it is not sure of, such as a key given twice,
// is left to slowScan): one JSON object whose values are each checked (transcript.Valid),
// the message array's elements that are not a kept message's bytes included.
func quickScan(body []byte, key string, recent func(string) [][]string) (sc scanned, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return sc, false
	}
	seen := map[string]bool{}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return sc, false // no message array
	}
	found := false
	for {
		if i >= len(body) || body[i] != '"' {
			return sc, false
		}
		ke := stringEnd(body, i+1)
		if ke < 0 || bytes.IndexByte(body[i:ke], '\\') >= 0 || !transcript.Valid(view(body[i:ke])) {
			return sc, false // an escaped key: gjson's reading of it is left to gjson
		}
		k := string(body[i+1 : ke-1])
		if seen[k] {
			return sc, false
		}
		seen[k] = true
		i = skipWS(body, ke)
		if i >= len(body) || body[i] != ':' {
			return sc, false
		}
		i = skipWS(body, i+1)
		if i >= len(body) {
			return sc, false
		}
		if k == key {
			if body[i] != '[' {
				return sc, false
			}
			end, ok := sc.messages(body, i, recent)
			if !ok {
				return sc, false
			}
			found, i = true, end
		} else {
			n, ok := transcript.ValidValue(view(body[i:]))
			if !ok {
				return sc, false
			}
			sc.top.see(k, gjson.Parse(string(body[i:i+n])))
			i += n
		}
		i = skipWS(body, i)
		if i >= len(body) {
			return sc, false
		}
		if body[i] == '}' {
			break
		}
		if body[i] != ',' {
			return sc, false
		}
		i = skipWS(body, i+1)
	}
	if !found || skipWS(body, i+1) != len(body) {
		return sc, false
	}
	return sc, true
}

// messages reads the array at body[i] ('['), and returns the offset past its ']'.
func (sc *scanned) messages(body []byte, i int, recent func(string) [][]string) (int, bool) {
	sc.start = i
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == ']' {
		sc.end = i + 1
		return i + 1, true
	}
	var kept []string
	var cands [][]string // the requests kept that begin with this one's first message
	for n := 0; ; n++ {
		if i >= len(body) {
			return 0, false
		}
		if n == 1 && len(cands) > 0 {
			kept = cands[0]
			for _, c := range cands {
				if len(c) > 1 && repeats(body, i, c[1]) {
					kept = c
					break
				}
			}
			// A request extending a kept one holds its messages and a few more: room
			// for them at once, not grown by doubling (a request's largest slice).
			sc.msgs = slices.Grow(sc.msgs, len(kept)+8)
		}
		var raw string
		if n == sc.known && n < len(kept) && repeats(body, i, kept[n]) {
			// A kept message is one JSON value: followed by a delimiter, the bytes that
			// repeat it are that value, whole.
			raw = kept[n]
			sc.known++
		} else {
			n, ok := transcript.ValidValue(view(body[i:]))
			if !ok {
				return 0, false
			}
			raw = string(body[i : i+n])
		}
		if n == 0 && recent != nil {
			for _, c := range recent(raw) {
				if len(c) > 0 && c[0] == raw {
					cands = append(cands, c)
				}
			}
			if len(cands) > 0 {
				raw, sc.known = cands[0][0], 1
			}
		}
		sc.msgs = append(sc.msgs, gjson.Parse(raw))
		i = skipWS(body, i+len(raw))
		if i >= len(body) {
			return 0, false
		}
		if body[i] == ']' {
			sc.end = i + 1
			return i + 1, true
		}
		if body[i] != ',' {
			return 0, false
		}
		i = skipWS(body, i+1)
	}
}

// repeats reports whether body at i holds the message m, whole: its bytes, then what may
// follow an element of an array.
func repeats(body []byte, i int, m string) bool {
	return len(body)-i > len(m) && view(body[i:i+len(m)]) == m && transcript.Delimits(body, i+len(m))
}

// view is b as a string, without a copy: for reading only, while b lives unchanged.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd is the offset past the '"' that closes the string whose contents begin at
// b[i], or -1.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
		i++
	}
}
