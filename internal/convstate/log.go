package convstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

// The state file (format 2) is a log: a header line, then one record a line, each record
// what changed since the one before. A request that extends the conversation appends the
// messages it added, so that a turn writes (and syncs) what is new, not the whole history;
// once the log has grown to about twice what one record of the whole state would take, it
// is written again as that one record (compaction), in a new file renamed over the old.
//
//	ctxkit-convstate-v2
//	<MAC in hex> <record JSON>
//	<MAC in hex> <record JSON>
//
// A record is the state's small fields whole, and of its two lists (Orig, Sent) how many
// of the previous record's are kept (keep_orig, keep_sent) and what follows them. The MACs
// are chained: each is the HMAC-SHA256, under the user's key, of the MAC before it (for the
// first, of the header) and its record, so that no record can be altered, moved, taken from
// another file or put between two others. A file whose first record does not authenticate
// is not trusted at all (ErrNotAuthenticated); a later record that does not (a write cut
// short by a crash: a last line without its line feed, or damaged) ends the state there:
// what the records before it say, an older state this proxy wrote. The next write then
// rewrites the file whole. Cutting records off the end likewise gives an older state of
// the proxy's own, never one it did not write.
//
// A format 1 file (the magic, the MAC of the JSON of the whole state, the JSON) is read as
// before, and the next write replaces it with format 2.

// magicLog is the header line of a format 2 file.
const magicLog = "ctxkit-convstate-v2\n"

// record is one line of the log.
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

// seed is what the first record's MAC is chained on.
func seed(key []byte) []byte { return chain(key, nil, []byte(magicLog)) }

// CommonPrefix is how many first elements a and b share. Strings a request keeps of the
// one before are the same strings, compared by their address first.
func CommonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// appendRecord appends to out the line of s after prev (nil: a record of the whole state),
// chained on the MAC mac, and returns it with the line's MAC.
func appendRecord(out []byte, key, mac []byte, prev, s *State) ([]byte, []byte, error) {
	r := record{State: *s}
	if prev != nil {
		r.KeepOrig = CommonPrefix(prev.Orig, s.Orig)
		r.KeepSent = CommonPrefix(prev.Sent, s.Sent)
		r.Orig, r.Sent = s.Orig[r.KeepOrig:], s.Sent[r.KeepSent:]
	}
	data, err := json.Marshal(&r)
	if err != nil {
		return out, nil, err
	}
	next := chain(key, mac, data)
	out = hex.AppendEncode(out, next)
	out = append(out, ' ')
	out = append(out, data...)
	return append(out, '\n'), next, nil
}

// snapshot is a whole format 2 file of s, with the MAC of its record.
func snapshot(key []byte, s *State) ([]byte, []byte, error) {
	out := make([]byte, 0, len(magicLog)+sizeOf(s))
	out = append(out, magicLog...)
	return appendRecord(out, key, seed(key), nil, s)
}

// sizeOf estimates the bytes of a record of the whole state s.
func sizeOf(s *State) int {
	n := 512 + 36*len(s.Orig)
	for _, m := range s.Sent {
		n += len(m) + len(m)/16 + 3
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

// decode reads a state file of either format. The tail is where the next record is
// chained, nil when the file must be written whole next time (format 1, a log whose end
// did not authenticate).
func decode(key, file []byte) (*State, *tail, error) {
	if bytes.HasPrefix(file, []byte(magic)) {
		data, err := unseal(key, file)
		if err != nil {
			return nil, nil, err
		}
		var s State
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", errDamaged, err)
		}
		return &s, nil, nil
	}
	if !bytes.HasPrefix(file, []byte(magicLog)) {
		return nil, nil, ErrNotAuthenticated
	}
	rest := file[len(magicLog):]
	mac := seed(key)
	var s *State
	whole := true
	for len(rest) > 0 {
		line, more, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			whole = false // a write cut short
			break
		}
		r, next, err := readRecord(key, mac, line, s)
		if err != nil {
			if s == nil {
				return nil, nil, err
			}
			whole = false
			break
		}
		s, mac, rest = r, next, more
	}
	if s == nil {
		return nil, nil, ErrNotAuthenticated
	}
	if !whole {
		return s, nil, nil
	}
	return s, &tail{mac: mac, size: int64(len(file))}, nil
}

// readRecord authenticates line after the MAC mac and applies it to the state before it
// (nil for the first).
func readRecord(key, mac, line []byte, before *State) (*State, []byte, error) {
	const macHex = 2 * sha256.Size
	if len(line) < macHex+1 || line[macHex] != ' ' {
		return nil, nil, ErrNotAuthenticated
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, line[:macHex]); err != nil {
		return nil, nil, ErrNotAuthenticated
	}
	data := line[macHex+1:]
	want := chain(key, mac, data)
	if !hmac.Equal(got, want) {
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
	if r.KeepOrig < 0 || r.KeepOrig > len(before.Orig) || r.KeepSent < 0 || r.KeepSent > len(before.Sent) {
		return nil, nil, fmt.Errorf("%w: a record keeps more than there was", errDamaged)
	}
	// before is the reading's own, never seen again: its lists are reused.
	s.Orig = append(before.Orig[:r.KeepOrig], r.Orig...)
	s.Sent = append(before.Sent[:r.KeepSent], r.Sent...)
	return &s, want, nil
}
