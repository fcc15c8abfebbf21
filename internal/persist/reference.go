package persist

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// MarkerPrefix starts the last line of every text ctx-persist leaves in place of a stored
// result. A text whose last line starts with it is a reference: ctx-persist never stores it
// again, and --restore must be able to read it or it fails.
const MarkerPrefix = "[ctx-persist: "

// Reference is what the marker line of an offloaded result says.
type Reference struct {
	Bytes, Lines, Tokens int
	// Shown is how many bytes of the start of the stored text precede the marker as a
	// preview (made valid UTF-8: invalid bytes are shown as U+FFFD).
	Shown int
	// Hash names the stored text; Path is where the reference told the model to find it
	// (information only: --restore reads the store it is given, by hash).
	Hash, Path string
	// Raw, when set, names a second stored file with the original JSON string literal of
	// the result, kept because re-encoding the text would not give its bytes back.
	Raw string
}

// Marker renders the reference's marker line. It holds no line break.
func (r Reference) Marker() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%stool result stored in full (%d bytes, %d %s, ~%d %s); ", MarkerPrefix,
		r.Bytes, r.Lines, plural(r.Lines, "line"), r.Tokens, plural(r.Tokens, "token"))
	if r.Shown > 0 {
		fmt.Fprintf(&b, "above are its first %d bytes", r.Shown)
	} else {
		b.WriteString("no preview")
	}
	fmt.Fprintf(&b, ". Read it all with a file tool or: cat %s%s", offload.ShellQuote(r.Path), offload.RecallNote)
	if r.Raw != "" {
		fmt.Fprintf(&b, "; original encoding: sha256:%s", r.Raw)
	}
	b.WriteByte(']')
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Compiled once and only read; not state.
var markerSyntax = regexp.MustCompile(`^\[ctx-persist: tool result stored in full \(([0-9]+) bytes, ([0-9]+) lines?, ~([0-9]+) tokens?\); (?:above are its first ([0-9]+) bytes|no preview)\. Read it all with a file tool or: cat (.+?)(?:` + regexp.QuoteMeta(offload.RecallNote) + `)?(?:; original encoding: sha256:([0-9a-f]{64}))?\]$`)

// ParseMarker reads a marker line. The stored file's hash is taken from the end of the path
// (…/ab/abcdef…, 64 hex digits); nothing else of the path is used.
func ParseMarker(line string) (Reference, error) {
	m := markerSyntax.FindStringSubmatch(line)
	if m == nil {
		return Reference{}, fmt.Errorf("malformed ctx-persist reference %q", human.Clip(line, 160))
	}
	var r Reference
	var err error
	for i, p := range []*int{&r.Bytes, &r.Lines, &r.Tokens, &r.Shown} {
		if m[i+1] == "" {
			continue
		}
		if *p, err = strconv.Atoi(m[i+1]); err != nil {
			return Reference{}, fmt.Errorf("malformed ctx-persist reference %q: %v", human.Clip(line, 160), err)
		}
	}
	r.Path, r.Raw = offload.ShellUnquote(m[5]), m[6]
	h, err := offload.HashOfPath(r.Path)
	if err != nil {
		return Reference{}, fmt.Errorf("malformed ctx-persist reference: %w", err)
	}
	if r.Shown > r.Bytes {
		return Reference{}, fmt.Errorf("malformed ctx-persist reference: a preview of %d bytes of %d", r.Shown, r.Bytes)
	}
	r.Hash = h
	return r, nil
}

// markerLine returns the last line of a text when it is a marker (starts with
// MarkerPrefix): the text is then a reference.
func markerLine(text string) (string, bool) {
	line := text[strings.LastIndexByte(text, '\n')+1:]
	return line, strings.HasPrefix(line, MarkerPrefix)
}

// offloaded renders what replaces a stored text: its preview, then the marker on a line
// of its own.
func offloaded(preview string, r Reference) string {
	if preview != "" && !strings.HasSuffix(preview, "\n") {
		preview += "\n"
	}
	return preview + r.Marker()
}

// previewOf returns how many bytes of the start of text to show: whole lines while they
// fit in size; when they fill less than half of it (a long first line, say), as much of
// the text as fits, cut between two UTF-8 sequences.
func previewOf(text string, size int) int {
	if size <= 0 {
		return 0
	}
	if len(text) <= size {
		return len(text)
	}
	n := strings.LastIndexByte(text[:size], '\n') + 1
	if n*2 >= size {
		return n
	}
	n = size
	for back := 0; back < utf8.UTFMax && n > 0 && !utf8.RuneStart(text[n]); back++ {
		n--
	}
	return n
}

// shown is a preview as the document holds it: valid UTF-8 (JSON cannot carry anything
// else), each run of invalid bytes shown as U+FFFD.
func shown(text string, n int) string { return strings.ToValidUTF8(text[:n], "\uFFFD") }

// unit is one text of a tool result that can be stored: the result's content string or
// one text part of its list content.
type unit struct {
	body  transcript.Span // the JSON string literal in the document
	raw   string          // its bytes
	outer string          // its decoded text
	// inner locates, in outer, the JSON string literal of the command output when outer is
	// Codex's {"output": ..., "metadata": ...} wrapper: then that output is what is stored,
	// and the wrapper stays valid JSON around the reference.
	inner    transcript.Span
	hasInner bool
	// head is the length of the label outer starts with (Block.Head: Cline's
	// "[tool for 'x'] Result:" line): it stays in place, and what follows it is stored.
	head int
	text string // what is stored: the wrapped output, what follows the label, or outer
}

// units lists the texts of a result, decoded. Parts that are not text (images) are not
// texts.
func units(t *transcript.Transcript, b *transcript.Block) []unit {
	if b.User {
		return nil // the user's words stay where the model reads them
	}
	var us []unit
	add := func(body transcript.Span, head int) {
		u := unit{body: body, raw: t.Slice(body)}
		u.outer = t.BodyText(&transcript.Block{Body: body})
		u.text = u.outer
		if label, rest := transcript.SplitLabel(u.outer, head); label != "" {
			u.head, u.text = len(label), rest
		} else {
			u.unwrap()
		}
		us = append(us, u)
	}
	if len(b.Parts) == 0 {
		if !b.Body.IsZero() && !b.BodyJSON {
			add(b.Body, b.Head)
		}
		return us
	}
	for i := range b.Parts {
		p := &b.Parts[i]
		if p.Kind == transcript.Text && !p.Body.IsZero() && !p.BodyJSON {
			add(p.Body, 0)
		}
	}
	return us
}

// rawSize is an upper bound of the decoded size of a result's texts (escapes only shrink),
// to pass over small results without decoding them.
func rawSize(b *transcript.Block) int {
	if b.User {
		return 0
	}
	n := 0
	if len(b.Parts) == 0 {
		if !b.BodyJSON {
			n = b.Body.Len()
		}
		return n
	}
	for i := range b.Parts {
		if p := &b.Parts[i]; p.Kind == transcript.Text && !p.BodyJSON {
			n += p.Body.Len()
		}
	}
	return n
}

// unwrap points the unit at the command output inside Codex's JSON wrapper
// {"output":"...","metadata":{...}} (any key order).
func (u *unit) unwrap() {
	if len(u.outer) < 12 || u.outer[0] != '{' || !transcript.Valid(u.outer) {
		return
	}
	out, meta := transcript.ShellWrapper(u.outer)
	if out.Type != gjson.String || !meta.IsObject() {
		return
	}
	u.inner = transcript.Span{Start: out.Index, End: out.Index + len(out.Raw)}
	u.hasInner = true
	u.text = out.String()
}

// canonical reports whether re-encoding the unit's text gives back the document's bytes
// exactly, so the store needs only the text.
func (u *unit) canonical() bool {
	if !offload.Spelled(u.outer, u.raw) {
		return false
	}
	return !u.hasInner || offload.Spelled(u.text, u.outer[u.inner.Start:u.inner.End])
}

// replace returns the unit's decoded body with the stored text replaced by text.
func (u *unit) replace(text string) string {
	if u.head > 0 {
		return u.outer[:u.head] + text
	}
	if !u.hasInner {
		return text
	}
	return u.outer[:u.inner.Start] + transcript.Quote(text) + u.outer[u.inner.End:]
}

// spell returns the document bytes for the unit's body when its stored text is text,
// spelled canonically: what was there before when the unit is canonical.
func (u *unit) spell(text string) (string, bool) {
	if u.head > 0 {
		return offload.Encode(u.outer[:u.head] + text)
	}
	if !u.hasInner {
		return offload.Encode(text)
	}
	inner, ok := offload.Encode(text)
	if !ok {
		return "", false
	}
	return offload.Encode(u.outer[:u.inner.Start] + inner + u.outer[u.inner.End:])
}
