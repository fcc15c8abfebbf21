package convstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The state file (format 3) is a log: a header line, then records, each what changed since
// the one before. A request that extends the conversation appends the messages it added,
// so that a turn writes (and syncs) what is new, not the whole history; once the log has
// grown to about twice what one record of the whole state would take, it is written again
// as that one record (compaction), in a new file renamed over the old.
//
//	ctxkit-convstate-v3
//	<MAC in hex> <length of the data in bytes>
//	<data>
//	<MAC in hex> <length>
//	<data>
//
// each data followed by a line feed. The data is a JSON object: "state", the state's small
// fields; of its two lists (Orig, Sent) how many of the previous record's are kept
// ("keep_orig", "keep_sent"); "orig", the hashes that follow them, "" for a message the
// client sent as it was sent (the message of "sent" at the same place in the state this
// record makes); and "sent", the messages sent that follow them, each as its raw JSON
// (format 2 wrote them as JSON strings: escaping and unescaping every message, a fifth of
// a first request's CPU). The MACs are chained: each is the HMAC-SHA256, under the user's
// key, of the MAC before it (for the first, of the header) and its data, so that no record
// can be altered, moved, taken from another file or put between two others. A file whose
// first record does not authenticate is not trusted at all (ErrNotAuthenticated); a later
// record that does not (a write cut short by a crash, or damaged) ends the state there:
// what the records before it say, an older state this proxy wrote. The next write then
// rewrites the file whole. Cutting records off the end likewise gives an older state of
// the proxy's own, never one it did not write.
//
// A format 2 file (the same log, one record a line, the messages as JSON strings) and a
// format 1 file (the magic, the MAC of the JSON of the whole state, the JSON) are read as
// before, and the next write replaces them with format 3.

// magicLog is the header line of a format 3 file; magicLog2 of a format 2 one.
const (
	magicLog  = "ctxkit-convstate-v3\n"
	magicLog2 = "ctxkit-convstate-v2\n"
)

// record is one line of a format 2 log.
type record struct {
	State
	KeepOrig int `json:"keep_orig"`
	KeepSent int `json:"keep_sent"`
}

// tail is where a log ends: the last MAC, to chain the next record on, and the file's size.
type tail struct {
	mac  []byte
	size int64
}

// chain is the MAC of line after prev.
func chain(key, prev, line []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(prev)
	m.Write(line)
	return m.Sum(nil)
}

// seed is what the first record's MAC of a log with the header magic is chained on.
func seed(key []byte, magic string) []byte { return chain(key, nil, []byte(magic)) }

// CommonPrefix is how many first elements a and b share. Strings a request keeps of the
// one before are the same strings, compared by their address first.
func CommonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// origPrefix is how many first messages received s keeps of prev's: the same hash, or,
// where neither is known yet (""), the same message.
func origPrefix(prev, s *State) int {
	n := 0
	for n < len(prev.Orig) && n < len(s.Orig) && prev.Orig[n] == s.Orig[n] {
		if s.Orig[n] == "" && origRaw(prev, n) != origRaw(s, n) {
			break
		}
		n++
	}
	return n
}

// origRaw is the message received i of s as kept in memory, "" when it is not.
func origRaw(s *State, i int) string {
	if i < len(s.OrigRaw) {
		return s.OrigRaw[i]
	}
	return ""
}

// appendRecord appends to out the record of s after prev (nil: a record of the whole
// state), chained on the MAC mac, and returns it with the record's MAC. canon is the form
// a message received is hashed in (Options.Canonical).
func appendRecord(out []byte, key, mac []byte, prev, s *State, canon func(string) string) ([]byte, []byte, error) {
	keepOrig, keepSent := 0, 0
	if prev != nil {
		keepOrig, keepSent = origPrefix(prev, s), CommonPrefix(prev.Sent, s.Sent)
	}
	small := *s
	small.Orig, small.Sent = nil, nil
	head, err := json.Marshal(&small)
	if err != nil {
		return out, nil, err
	}
	size := len(head) + 128 + 36*(len(s.Orig)-keepOrig) + 2*(len(s.SentHead)+len(s.SentTail)+len(s.SentWhole)) // (escaped)
	for _, m := range s.Sent[keepSent:] {
		size += len(m) + 1
	}
	// The record is made in place after its first line, which is filled in once the
	// data's MAC is known: the messages are copied once.
	start := len(out)
	out = slices.Grow(out, recordLine+size+1)
	out = append(out, make([]byte, recordLine)...)
	data := out[len(out):]
	data = append(data, `{"state":`...)
	data = append(data, head...)
	data = append(data, `,"keep_orig":`...)
	data = strconv.AppendInt(data, int64(keepOrig), 10)
	data = append(data, `,"keep_sent":`...)
	data = strconv.AppendInt(data, int64(keepSent), 10)
	data = append(data, `,"orig":[`...)
	for i := keepOrig; i < len(s.Orig); i++ {
		if i > keepOrig {
			data = append(data, ',')
		}
		h := s.Orig[i]
		if h == "" {
			// Not hashed yet: the message received is kept in memory. Sent as received, it
			// is written as "the message sent at its place"; else hashed now.
			raw := origRaw(s, i)
			if raw == "" {
				return out, nil, fmt.Errorf("message received %d has no hash", i)
			}
			if i >= len(s.Sent) || raw != s.Sent[i] {
				h = HashOf(raw, canon)
			}
		}
		if isHex(h) {
			data = append(data, '"')
			data = append(data, h...)
			data = append(data, '"')
		} else {
			q, _ := json.Marshal(h) // (another's hash: never ours)
			data = append(data, q...)
		}
	}
	data = append(data, `],"sent":[`...)
	for i := keepSent; i < len(s.Sent); i++ {
		m := s.Sent[i]
		if i >= s.Valid && !gjson.Valid(m) {
			return out, nil, fmt.Errorf("message sent %d is not one JSON value", i)
		}
		if i > keepSent {
			data = append(data, ',')
		}
		data = append(data, m...)
	}
	data = append(data, ']')
	if prev == nil || prev.SentHead != s.SentHead || prev.SentTail != s.SentTail || prev.SentWhole != s.SentWhole {
		// What surrounds the messages in the request as sent, when it changed: the three
		// together, so that one gone is said.
		for _, f := range [...]struct{ key, v string }{{"sent_head", s.SentHead}, {"sent_tail", s.SentTail}, {"sent_whole", s.SentWhole}} {
			q, err := json.Marshal(f.v)
			if err != nil {
				return out, nil, err
			}
			data = append(append(append(append(data, `,"`...), f.key...), `":`...), q...)
		}
	}
	data = append(data, '}')
	next := chain(key, mac, data)
	line := out[start : start+recordLine]
	hex.Encode(line, next)
	line[macHex] = ' '
	copy(line[macHex+1:], fmt.Sprintf("%0*d", lengthDigits, len(data)))
	line[recordLine-1] = '\n'
	at := start + recordLine
	if cap(out)-at >= len(data) && &out[at : at+1][0] == &data[0] {
		out = out[:at+len(data)] // made in place
	} else {
		out = append(out, data...) // it outgrew the room Grow made
	}
	return append(out, '\n'), next, nil
}

// A record's first line: the MAC in hex, a space, the data's length in lengthDigits
// decimal digits, a line feed.
const (
	lengthDigits = 12
	recordLine   = macHex + 1 + lengthDigits + 1
)

// isHex reports whether h is lowercase hex digits, as Hash writes them.
func isHex(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// snapshot is a whole format 3 file of s, with the MAC of its record.
func snapshot(key []byte, s *State, canon func(string) string) ([]byte, []byte, error) {
	return appendRecord([]byte(magicLog), key, seed(key, magicLog), nil, s, canon) // (which makes the room)
}

// HashOf is the hash of the message received raw in the form canon gives (nil: as it is).
func HashOf(raw string, canon func(string) string) string {
	if canon != nil {
		raw = canon(raw)
	}
	return Hash(raw)
}

// sizeOf estimates the bytes of a record of the whole state s.
func sizeOf(s *State) int {
	n := 512 + 36*len(s.Orig) + len(s.SentHead) + len(s.SentTail) + len(s.SentWhole)
	for _, m := range s.Sent {
		n += len(m) + 1
	}
	return n
}

// memOf is the bytes s holds in memory: what a record of it takes (sizeOf, its messages
// sent and its hashes), the messages as the client sent them (OrigRaw) where they are not
// the very strings sent, and its counts and marks.
func memOf(s *State) int64 {
	n := int64(sizeOf(s)) + 16*int64(len(s.OrigRaw)) + 8*int64(len(s.Marks))
	for i, m := range s.OrigRaw {
		if i >= len(s.Sent) || unsafe.StringData(m) != unsafe.StringData(s.Sent[i]) || len(m) != len(s.Sent[i]) {
			n += int64(len(m))
		}
	}
	for _, c := range []*Counts{s.In, s.Out} {
		if c != nil {
			n += 25 * int64(len(c.Raws)) // the raws are the state's strings: their headers, tokens and flags
		}
	}
	return n
}

// errDamaged is a record that authenticates but does not read: a bug, not an attack.
var errDamaged = errors.New("damaged")

// decode reads a state file of any format. The tail is where the next record is chained,
// nil when the file must be written whole next time (format 1 or 2, a log whose end did
// not authenticate).
func decode(key, file []byte) (*State, *tail, error) {
	switch {
	case bytes.HasPrefix(file, []byte(magic)):
		data, err := unseal(key, file)
		if err != nil {
			return nil, nil, err
		}
		var s State
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", errDamaged, err)
		}
		return &s, nil, nil
	case bytes.HasPrefix(file, []byte(magicLog2)):
		s, _, err := decodeLog(key, file, magicLog2, nextLine, readRecord2)
		return s, nil, err
	case bytes.HasPrefix(file, []byte(magicLog)):
		return decodeLog(key, file, magicLog, nextRecord, readRecord3)
	}
	return nil, nil, ErrNotAuthenticated
}

// decodeLog reads the records of a log whose header is magic, cut by next (the MAC in hex,
// the data, the rest; ok false: cut short) and applied by apply.
func decodeLog(key, file []byte, magic string, next func([]byte) ([]byte, []byte, []byte, bool),
	apply func(key, mac, got, data []byte, before *State) (*State, []byte, error)) (*State, *tail, error) {
	rest := file[len(magic):]
	mac := seed(key, magic)
	var s *State
	whole := true
	for len(rest) > 0 {
		got, data, more, ok := next(rest)
		if !ok {
			whole = false // a write cut short
			break
		}
		r, nmac, err := apply(key, mac, got, data, s)
		if err != nil {
			if s == nil {
				return nil, nil, err
			}
			whole = false
			break
		}
		s, mac, rest = r, nmac, more
	}
	if s == nil {
		return nil, nil, ErrNotAuthenticated
	}
	if !whole {
		return s, nil, nil
	}
	return s, &tail{mac: mac, size: int64(len(file))}, nil
}

const macHex = 2 * sha256.Size

// nextLine cuts a format 2 record: "<MAC> <data>\n".
func nextLine(rest []byte) (mac, data, more []byte, ok bool) {
	line, more, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return nil, nil, nil, false
	}
	if len(line) < macHex+1 || line[macHex] != ' ' {
		return line, nil, more, true // read, and refused by its MAC
	}
	return line[:macHex], line[macHex+1:], more, true
}

// nextRecord cuts a format 3 record: "<MAC> <length>\n<data>\n".
func nextRecord(rest []byte) (mac, data, more []byte, ok bool) {
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok || len(line) < macHex+2 || len(line) > macHex+21 || line[macHex] != ' ' {
		return nil, nil, nil, false
	}
	n, err := strconv.ParseUint(string(line[macHex+1:]), 10, 63)
	if err != nil || n >= uint64(len(body)) || body[n] != '\n' {
		return nil, nil, nil, false
	}
	return line[:macHex], body[:n], body[n+1:], true
}

// authentic checks the MAC in hex got of data after mac, and returns data's MAC.
func authentic(key, mac, got, data []byte) ([]byte, bool) {
	if len(got) != macHex {
		return nil, false
	}
	sum := make([]byte, sha256.Size)
	if _, err := hex.Decode(sum, got); err != nil {
		return nil, false
	}
	want := chain(key, mac, data)
	return want, hmac.Equal(sum, want)
}

// keeps checks that a record keeps no more of the lists than there were.
func keeps(keepOrig, keepSent int, before *State) error {
	if keepOrig < 0 || keepOrig > len(before.Orig) || keepSent < 0 || keepSent > len(before.Sent) {
		return fmt.Errorf("%w: a record keeps more than there was", errDamaged)
	}
	return nil
}

// readRecord2 authenticates a format 2 record after the MAC mac and applies it to the
// state before it (nil for the first).
func readRecord2(key, mac, got, data []byte, before *State) (*State, []byte, error) {
	want, ok := authentic(key, mac, got, data)
	if !ok {
		return nil, nil, ErrNotAuthenticated
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errDamaged, err)
	}
	s := r.State
	if before == nil {
		before = &State{}
	}
	if err := keeps(r.KeepOrig, r.KeepSent, before); err != nil {
		return nil, nil, err
	}
	// before is the reading's own, never seen again: its lists are reused.
	s.Orig = append(before.Orig[:r.KeepOrig], r.Orig...)
	s.Sent = append(before.Sent[:r.KeepSent], r.Sent...)
	for _, h := range s.Orig {
		if h == "" {
			return nil, nil, fmt.Errorf("%w: a message received without its hash", errDamaged)
		}
	}
	return &s, want, nil
}

// readRecord3 authenticates a format 3 record after the MAC mac and applies it to the
// state before it (nil for the first). The messages sent are views of one copy of the
// record's data. A nil key reads it without authenticating it: the request as sent, to be
// shown (SentDocument), never the proxy's memory.
func readRecord3(key, mac, got, data []byte, before *State) (*State, []byte, error) {
	var want []byte
	if key != nil {
		var ok bool
		if want, ok = authentic(key, mac, got, data); !ok {
			return nil, nil, ErrNotAuthenticated
		}
	}
	if before == nil {
		before = &State{}
	}
	text := string(data)
	if !gjson.Valid(text) {
		return nil, nil, fmt.Errorf("%w: a record is not JSON", errDamaged)
	}
	var s State
	keepOrig, keepSent := -1, -1
	var orig, sent []string
	around := false // the record says what surrounds the messages sent
	var bad error
	gjson.Parse(text).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "state":
			if err := json.Unmarshal([]byte(v.Raw), &s); err != nil {
				bad = err
			}
		case "keep_orig":
			keepOrig = int(v.Int())
		case "keep_sent":
			keepSent = int(v.Int())
		case "orig":
			v.ForEach(func(_, h gjson.Result) bool {
				if h.Type != gjson.String {
					bad = errors.New("a hash is not a string")
				}
				orig = append(orig, h.Str)
				return bad == nil
			})
		case "sent":
			v.ForEach(func(_, m gjson.Result) bool {
				sent = append(sent, m.Raw)
				return true
			})
		case "sent_head", "sent_tail", "sent_whole":
			if v.Type != gjson.String {
				bad = fmt.Errorf("%s is not a string", k.Str)
			}
			around = true
			switch k.Str {
			case "sent_head":
				s.SentHead = v.Str
			case "sent_tail":
				s.SentTail = v.Str
			default:
				s.SentWhole = v.Str
			}
		}
		return bad == nil
	})
	if bad != nil {
		return nil, nil, fmt.Errorf("%w: %v", errDamaged, bad)
	}
	if err := keeps(keepOrig, keepSent, before); err != nil {
		return nil, nil, err
	}
	s.Sent = append(before.Sent[:keepSent], sent...)
	s.Orig = append(before.Orig[:keepOrig], orig...)
	if !around {
		s.SentHead, s.SentTail, s.SentWhole = before.SentHead, before.SentTail, before.SentWhole
	}
	// The messages received are known where the record says they were sent as received;
	// the state before may know fewer (read from format 2).
	raws := before.OrigRaw[:min(keepOrig, len(before.OrigRaw))]
	for len(raws) < keepOrig {
		raws = append(raws, "")
	}
	for i := keepOrig; i < len(s.Orig); i++ {
		raw := ""
		if s.Orig[i] == "" {
			if i >= len(s.Sent) {
				return nil, nil, fmt.Errorf("%w: message received %d is sent as received, but none was sent there", errDamaged, i)
			}
			raw = s.Sent[i]
		}
		raws = append(raws, raw)
	}
	s.OrigRaw = raws
	return &s, want, nil
}
