package snip

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// ErrRestore is wrapped by every error about a placeholder that cannot be restored: one
// that names a file the store does not have or that fails its check, or a file that
// cannot be what the placeholder replaced.
var ErrRestore = errors.New("cannot restore")

// Restore finds every placeholder and input stub of this tier that names a stored file and
// returns the edits that put back, byte for byte, what it replaced. get fetches a stored
// file by hash and must check it (store.Get does). Placeholders that name no file (--no-store,
// or older versions) stay: re-running the call is the only way back. Restore fails on the
// first placeholder it cannot put back exactly, so a caller emits either a fully restored
// document or nothing. What comes back may itself be another tier's marker (a ctx-persist
// reference that was cleared later): the caller restores again until nothing is left.
func Restore(t *transcript.Transcript, get func(hash string) ([]byte, error)) ([]transcript.Edit, int, error) {
	if !strings.Contains(t.Doc, Marker) && !strings.Contains(t.Doc, "ctx_snip") {
		return nil, 0, nil
	}
	var edits []transcript.Edit
	for mi := range t.Messages {
		m := &t.Messages[mi]
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			var lit string
			var ok bool
			var err error
			switch b.Kind {
			case transcript.ToolResult:
				lit, ok, err = restoreResult(t, b, get)
			case transcript.ToolCall:
				lit, ok, err = restoreInput(t, b, get)
			default:
				continue
			}
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w: %w", where(t, mi, b.Span), ErrRestore, err)
			}
			if ok {
				edits = append(edits, transcript.Edit{Span: b.Body, With: lit})
			}
		}
	}
	return edits, len(edits), nil
}

// where names a place in the document as ctx-persist's restore does: the line of a JSONL
// record, else the index of the message.
func where(t *transcript.Transcript, mi int, s transcript.Span) string {
	if line := lineOf(t, s.Start); line > 0 {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("message %d", mi)
}

// restoreResult returns what a result's placeholder replaced (ok), as its JSON: a string
// literal, or the list of parts it was.
func restoreResult(t *transcript.Transcript, b *transcript.Block, get func(string) ([]byte, error)) (string, bool, error) {
	if !strings.Contains(t.Slice(b.Body), Marker) {
		return "", false, nil
	}
	label := t.LabelOf(b)
	if !isPlaceholder(t, b, label) {
		return "", false, nil
	}
	text := t.BodyText(b)
	k, ok, err := keptIn(keptResult, text[len(label):])
	if !ok || err != nil {
		return "", false, err
	}
	return restoreText(k, label, false, get)
}

// restoreInput returns what an input stub replaced (ok): the input object, or the string
// literal of its arguments.
func restoreInput(t *transcript.Transcript, b *transcript.Block, get func(string) ([]byte, error)) (string, bool, error) {
	if b.Body.IsZero() {
		return "", false, nil
	}
	raw := t.Slice(b.Body)
	if !strings.Contains(raw, "ctx_snip") && !strings.Contains(raw, Marker) {
		return "", false, nil
	}
	text := t.BodyText(b)
	var k kept
	var ok bool
	var err error
	switch {
	case strings.HasPrefix(text, stubJSONStart):
		note := gjson.Get(text, "ctx_snip")
		if note.Type != gjson.String || text != stubObject(note.String()) {
			return "", false, nil // not a stub as this tier writes them: leave it
		}
		k, ok, err = keptIn(keptNote, note.String())
	case !b.BodyJSON && strings.HasPrefix(text, stubTextStart+"cleared ") && strings.HasSuffix(text, "]"):
		k, ok, err = keptIn(keptNote, text[len(stubTextStart):len(text)-1])
	}
	if !ok || err != nil {
		return "", false, err
	}
	return restoreText(k, "", b.BodyJSON, get)
}

// restoreText fetches a kept text and spells it as the document had it: the original JSON
// when it was kept, the value itself for an input object (value), else the label and the
// text as one string literal.
func restoreText(k kept, label string, value bool, get func(string) ([]byte, error)) (string, bool, error) {
	data, err := get(k.hash)
	if err != nil {
		return "", false, err
	}
	switch {
	case k.raw != "":
		raw, err := get(k.raw)
		if err != nil {
			return "", false, err
		}
		if !gjson.ValidBytes(raw) || len(raw) == 0 || raw[0] != '"' && raw[0] != '[' && raw[0] != '{' {
			return "", false, fmt.Errorf("stored original JSON %s is not a string, list or object", k.raw)
		}
		return string(raw), true, nil
	case value:
		if !gjson.ValidBytes(data) || len(data) == 0 || data[0] != '{' {
			return "", false, fmt.Errorf("stored input %s is not a JSON object", k.hash)
		}
		return string(data), true, nil
	}
	lit, ok := offload.Encode(label + string(data))
	if !ok {
		return "", false, fmt.Errorf("stored file %s is not valid UTF-8 and the placeholder names no original JSON", k.hash)
	}
	return lit, true, nil
}
