package persist

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// RestoreStats describe one run of Restore.
type RestoreStats struct {
	// Restored is the number of references put back; Bytes the size of their texts.
	Restored, Bytes int
	// Cleared is the number of ctx-snip placeholders and input stubs put back (RestoreAll).
	Cleared int
}

// maxRounds bounds how deeply RestoreAll follows markers inside what it restored: a
// reference ctx-snip cleared is two; a stored file cannot hold its own reference.
const maxRounds = 16

// RestoreAll puts back every reference of this tier and every placeholder of ctx-snip that
// names a stored file (snip.Restore), then does it again on what came back while it holds
// more: a ctx-persist reference ctx-snip cleared comes back as the reference, then as the
// original. o reads each restored document again (the format and reading flags of t). It
// returns the restored document, or nil when t held nothing to restore.
func RestoreAll(t *transcript.Transcript, o transcript.Options, get func(hash string) ([]byte, error)) ([]byte, RestoreStats, error) {
	var st RestoreStats
	var out []byte
	for round := 0; ; round++ {
		edits, rs, err := Restore(t, get)
		if err != nil {
			return nil, st, err
		}
		cleared, n, err := snip.Restore(t, get)
		if err != nil {
			return nil, st, err
		}
		st.Restored, st.Bytes, st.Cleared = st.Restored+rs.Restored, st.Bytes+rs.Bytes, st.Cleared+n
		edits = append(edits, cleared...)
		if len(edits) == 0 {
			return out, st, nil
		}
		if round == maxRounds {
			return nil, st, fmt.Errorf("%w: stored texts hold markers more than %d deep", ErrReference, maxRounds)
		}
		if out, err = t.Apply(edits); err != nil {
			return nil, st, err
		}
		o.Format = t.Format
		if t, err = transcript.Parse(out, o); err != nil {
			return nil, st, fmt.Errorf("%w: the restored document does not parse: %w", ErrReference, err)
		}
	}
}

// ErrReference is wrapped by every error about a reference that cannot be restored: one
// that does not parse, names a file the store does not have or that fails its check, or
// does not match its stored file; and so by ctx-snip's (snip.ErrRestore).
var ErrReference = snip.ErrRestore

// Restore finds every reference Plan left in the tool results of t and returns the edits
// that put the original bytes back. get fetches a stored file by hash and must check it
// (store.Get does). Restore fails on the first reference it cannot put back exactly, so
// a caller emits either a fully restored document or nothing.
func Restore(t *transcript.Transcript, get func(hash string) ([]byte, error)) ([]transcript.Edit, RestoreStats, error) {
	var st RestoreStats
	if !strings.Contains(t.Doc, MarkerPrefix) {
		return nil, st, nil
	}
	cache := map[string][]byte{}
	fetch := func(h string) ([]byte, error) {
		if data, ok := cache[h]; ok {
			return data, nil
		}
		data, err := get(h)
		if err == nil {
			cache[h] = data
		}
		return data, err
	}
	var edits []transcript.Edit
	for mi := range t.Messages {
		m := &t.Messages[mi]
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Kind != transcript.ToolResult || !mayHoldMarker(t, b) {
				continue
			}
			for _, u := range units(t, b) {
				if !strings.Contains(u.raw, MarkerPrefix) {
					continue
				}
				lit, n, ok, err := restoreUnit(&u, fetch)
				if err != nil {
					return nil, st, fmt.Errorf("%s: %w: %w", where(t, mi, u.body), ErrReference, err)
				}
				if ok {
					edits = append(edits, transcript.Edit{Span: u.body, With: lit})
					st.Restored++
					st.Bytes += n
				}
			}
		}
	}
	return edits, st, nil
}

// where names a place in the document the way ctx-count's report does: the line of a JSONL
// record, else the index of the message.
func where(t *transcript.Transcript, mi int, s transcript.Span) string {
	for _, r := range t.Records {
		if r.Span.Start <= s.Start && s.End <= r.Span.End {
			return fmt.Sprintf("line %d", r.Line)
		}
	}
	return fmt.Sprintf("message %d", mi)
}

// mayHoldMarker is a quick look at a result's raw bytes before decoding them: the marker
// has no character JSON escapes, so it shows in the bytes however deeply it is quoted.
func mayHoldMarker(t *transcript.Transcript, b *transcript.Block) bool {
	return strings.Contains(t.Slice(b.Span), MarkerPrefix)
}

// restoreUnit returns the original literal of a unit that is a reference (ok), and the
// size of its text.
func restoreUnit(u *unit, fetch func(string) ([]byte, error)) (lit string, size int, ok bool, err error) {
	line, isRef := markerLine(u.text)
	if !isRef {
		return "", 0, false, nil
	}
	r, err := ParseMarker(line)
	if err != nil {
		return "", 0, false, err
	}
	data, err := fetch(r.Hash)
	if err != nil {
		return "", 0, false, err
	}
	text := string(data)
	// The whole text must be what Plan wrote for this file: a reference is recognised by
	// what it says, and what it says must be true.
	if len(text) != r.Bytes || offload.LineCount(text) != r.Lines || r.Shown > len(text) || offloaded(shown(text, r.Shown), r) != u.text {
		return "", 0, false, fmt.Errorf("the reference to %s does not match the stored file (edited document, or a different file under that name)", r.Hash)
	}
	if r.Raw != "" {
		raw, err := fetch(r.Raw)
		if err != nil {
			return "", 0, false, err
		}
		if len(raw) < 2 || raw[0] != '"' || !gjson.ValidBytes(raw) {
			return "", 0, false, fmt.Errorf("stored original literal %s is not a JSON string", r.Raw)
		}
		return string(raw), len(text), true, nil
	}
	lit, ok = u.spell(text)
	if !ok {
		return "", 0, false, fmt.Errorf("stored file %s is not valid UTF-8 and the reference keeps no original encoding", r.Hash)
	}
	return lit, len(text), true, nil
}
