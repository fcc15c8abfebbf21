package transcript

import "unsafe"

// Reused reports whether Reparse reads raw by reusing prev, rather than by a whole Parse.
func Reused(prev *Transcript, raw []byte, o Options) bool { return reparse(prev, raw, o) != nil }

// Shared names a string of t (its messages, records and what Reparse keeps) that lies
// in old's bytes, "" when none does: a transcript must not keep the document of the one
// it was reparsed from in memory.
func Shared(t *Transcript, old string) string {
	base := uintptr(unsafe.Pointer(unsafe.StringData(old)))
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && p >= base && p-base < uintptr(len(old))
	}
	var blocks func([]Block) string
	blocks = func(bs []Block) string {
		for i := range bs {
			b := &bs[i]
			for _, s := range append([]string{b.Type, b.ToolID, b.ToolName}, b.ToolIDs...) {
				if in(s) {
					return s
				}
			}
			if b.Image != nil && (in(b.Image.MediaType) || in(b.Image.URL) || in(b.Image.Detail)) {
				return "image " + b.Image.URL
			}
			if s := blocks(b.Parts); s != "" {
				return s
			}
		}
		return ""
	}
	messages := func(ms []Message) string {
		for i := range ms {
			m := &ms[i]
			for _, s := range []string{m.Role, m.ID, m.Name} {
				if in(s) {
					return s
				}
			}
			if s := blocks(m.Blocks); s != "" {
				return s
			}
		}
		return ""
	}
	if s := messages(t.Messages); s != "" {
		return s
	}
	if in(t.Model) || in(t.ArrayPath) {
		return t.Model
	}
	for _, r := range t.Records {
		if in(r.Type) || in(r.UUID) || in(r.Parent) {
			return r.Type
		}
	}
	if t.memo != nil {
		for _, ms := range t.memo.carried {
			if s := messages(ms); s != "" {
				return s
			}
		}
		for _, r := range t.memo.codex {
			if in(r.model) {
				return r.model
			}
		}
	}
	return ""
}
