package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Edit replaces the bytes of one span of the document.
type Edit struct {
	Span Span
	// With is the new text, already in the document's syntax (a JSON string literal
	// made by Quote, a whole JSON value, or nothing to delete).
	With string
}

// Apply splices edits into the document: the output is the input with only the edited
// spans replaced, so unknown fields survive and everything outside the edits is
// byte-identical. Edits may come in any order but must not overlap.
func (t *Transcript) Apply(edits []Edit) ([]byte, error) {
	if len(edits) == 0 {
		return []byte(t.Doc), nil
	}
	sorted := append([]Edit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Span.Start < sorted[j].Span.Start })
	size := len(t.Doc)
	for i, e := range sorted {
		if e.Span.Start < t.Base || e.Span.End > t.Base+len(t.Doc) || e.Span.Start > e.Span.End {
			return nil, fmt.Errorf("edit %d: span %d-%d outside the document (%d bytes)", i, e.Span.Start, e.Span.End, len(t.Doc))
		}
		if i > 0 && e.Span.Start < sorted[i-1].Span.End {
			return nil, fmt.Errorf("edits overlap at byte %d", e.Span.Start)
		}
		size += len(e.With) - e.Span.Len()
	}
	out := make([]byte, 0, size)
	at := 0
	for _, e := range sorted {
		out = append(out, t.Doc[at:e.Span.Start-t.Base]...)
		out = append(out, e.With...)
		at = e.Span.End - t.Base
	}
	return append(out, t.Doc[at:]...), nil
}

// Quote makes a JSON string literal of s the way the tools write them: no HTML escaping,
// so "<" and "&" in code stay readable.
func Quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
