package repair

import (
	"fmt"

	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// elem is one element of a rebuilt message array: an original message kept byte for byte
// (text empty) or new JSON text. src is the message the element comes from, -1 for one
// that repair makes.
type elem struct {
	src  int
	text string
}

// arrayMessages lists the messages that are elements of the document's message array, in
// order (a top-level system prompt or instructions are not).
func (f *fixer) arrayMessages() []int {
	var out []int
	for i := range f.t.Messages {
		if !f.t.Messages[i].Header {
			out = append(out, i)
		}
	}
	return out
}

// rebuildArray replaces the elements of the message array with elems. Elements that are
// originals in their original order keep the separator that was between them, so a
// pretty-printed document stays pretty where it was not changed; others are joined with
// the document's first separator.
func (f *fixer) rebuildArray(elems []elem) ([]transcript.Edit, error) {
	t := f.t
	if t.Array.IsZero() || t.Slice(t.Array)[0] != '[' {
		return nil, fmt.Errorf("the messages are not an array; nothing to rebuild")
	}
	msgs := f.arrayMessages()
	region := transcript.Span{Start: t.Array.Start + 1, End: t.Array.End - 1}
	pos := map[int]int{}
	sep := ","
	if len(msgs) > 0 {
		region = transcript.Span{Start: t.Messages[msgs[0]].Span.Start, End: t.Messages[msgs[len(msgs)-1]].Span.End}
		for k, mi := range msgs {
			pos[mi] = k
		}
		if len(msgs) > 1 {
			sep = t.Slice(transcript.Span{Start: t.Messages[msgs[0]].Span.End, End: t.Messages[msgs[1]].Span.Start})
		}
	}
	var b []byte
	for i, e := range elems {
		if i > 0 {
			prev := elems[i-1]
			if pp, ok := pos[prev.src]; ok && prev.src >= 0 && e.src >= 0 && pos[e.src] == pp+1 {
				b = append(b, t.Slice(transcript.Span{Start: t.Messages[prev.src].Span.End, End: t.Messages[e.src].Span.Start})...)
			} else {
				b = append(b, sep...)
			}
		}
		if e.text != "" {
			b = append(b, e.text...)
		} else {
			b = append(b, t.Slice(t.Messages[e.src].Span)...)
		}
	}
	if string(b) == t.Slice(region) {
		return nil, nil
	}
	return []transcript.Edit{{Span: region, With: string(b)}}, nil
}

// setField returns the JSON object raw with the value at path replaced by the JSON value
// val: spliced where the field is, so everything else keeps its bytes; added when absent.
func setField(raw, path, val string) (string, error) {
	if v := gjson.Get(raw, path); v.Exists() && v.Index > 0 && raw[v.Index:v.Index+len(v.Raw)] == v.Raw {
		return raw[:v.Index] + val + raw[v.Index+len(v.Raw):], nil
	}
	return sjson.SetRaw(raw, path, val)
}
