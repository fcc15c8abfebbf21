package snip

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// keep is how a text a placeholder or stub replaces is kept in the store. raw is its JSON
// as the document spells it: a string literal, a result's list of parts, a call's input
// object. label is what the placeholder keeps at its start (Cline's "[tool for 'x']
// Result:" line), which is not stored.
//
// The stored file is what the model would read: a string's decoded text, the texts of a
// list of parts. When that does not give the document's bytes back (a list, an escape
// spelled otherwise than offload.Encode spells it), the original JSON is kept as a second
// file, which the placeholder names too (persist's rule). value says the replacement is a
// JSON value itself (the stub object of an input object): the stored file is then the
// value as written, which restoring puts back as it is.
//
// rd, when set, redacts both (DESIGN §4.11): the store keeps no secret, and restoring
// gives back the text with markers where the secrets were. A marker holds nothing JSON
// escapes, so a redacted literal or value is still valid JSON.
func keep(rd *redact.Redactor, raw, label string, value bool) offload.Blob {
	b, _ := keepFound(rd, raw, label, value)
	return b
}

// found is where redaction found secrets in a kept text and in its original JSON (spans
// in the unredacted texts): a plan keeps them with the hashes it names, so that writing
// the files replaces them again (redact.Apply) without searching a second time.
type found struct{ text, raw []redact.Match }

// keepFound is keep, also returning where the secrets were.
func keepFound(rd *redact.Redactor, raw, label string, value bool) (offload.Blob, found) {
	b := keepAsIs(raw, label, value)
	if rd == nil {
		return b, found{}
	}
	f := found{rd.Find(b.Data), rd.Find(b.RawData)}
	if len(f.text) == 0 && len(f.raw) == 0 {
		return b, found{}
	}
	return offload.Text(redact.Apply(b.Data, f.text), redact.Apply(b.RawData, f.raw)), f
}

// keptFor is keptOf(raw, keepFound(rd, raw, label, value)) worked out without keeping the
// text: a plan needs the names of the files (hashes and sizes) and where the secrets are,
// and change.blob makes the text again when it is written. A string literal is decoded
// into a buffer taken back after (decoded), not a new allocation the size of the text:
// naming every result a document holds decoded as much as the document, most of it into
// fresh pages.
func keptFor(rd *redact.Redactor, raw, label string, value bool) kept {
	buf := decoded.Get().(*[]byte)
	defer decoded.Put(buf)
	t := keptTextInto(buf, raw, label, value)
	rawData := ""
	if t.withRaw {
		rawData = raw
	}
	var f found
	if rd != nil {
		if f = (found{rd.Find(t.text), rd.Find(rawData)}); len(f.text) == 0 && len(f.raw) == 0 {
			f = found{}
		}
	}
	data := redact.Apply(t.text, f.text)
	k := kept{hash: store.HashString(data), src: srcSum(raw), size: len(data), found: f}
	if rawData != "" {
		rawData = redact.Apply(rawData, f.raw)
		k.raw, k.rawSize = store.HashString(rawData), len(rawData)
	}
	return k
}

// decoded holds the buffers keptFor decodes into.
var decoded = sync.Pool{New: func() any { return new([]byte) }}

// keepAsIs is keep without redaction.
func keepAsIs(raw, label string, value bool) offload.Blob {
	k := keptText(raw, label, value)
	if k.withRaw {
		return offload.Text(k.text, raw)
	}
	return offload.Text(k.text, "")
}

// textOf is what keep stores of a document's bytes raw, before redaction: text and
// whether raw is kept beside it, which for a string literal whose text begins with the
// label depends on its spelling: raw is kept unless it is what offload.Encode makes of the
// text it stands for (offload.Spelled).
type textOf struct {
	text    string
	withRaw bool
}

func keptText(raw, label string, value bool) textOf { return keptTextInto(nil, raw, label, value) }

// keptTextInto is keptText decoding a string literal into *buf (grown as needed) when buf is
// not nil: the text is then valid until *buf is used again. A literal's spelling is read
// in the pass that decodes it (offload.DecodeSpelled), not in a second pass over it.
func keptTextInto(buf *[]byte, raw, label string, value bool) textOf {
	if !strings.HasPrefix(raw, `"`) {
		if value {
			return textOf{text: raw}
		}
		return textOf{text: partsText(raw), withRaw: true}
	}
	var scratch []byte
	if buf != nil {
		scratch = *buf
	}
	full, grown, spelled := offload.DecodeSpelled(scratch, raw)
	if buf != nil {
		*buf = grown
	}
	if !strings.HasPrefix(full, label) {
		return textOf{text: full, withRaw: true}
	}
	return textOf{text: full[len(label):], withRaw: !spelled}
}

// partsText is what a model reads of a list of parts: its texts, a line apart; a value
// that holds no text is kept as written.
func partsText(raw string) string {
	var texts []string
	v := gjson.Parse(raw)
	if v.IsArray() {
		v.ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Type == gjson.String {
				texts = append(texts, t.String())
			}
			return true
		})
	}
	if len(texts) == 0 {
		return raw
	}
	return strings.Join(texts, "\n")
}

// Compiled once and only read; not state. The path is shell-quoted when it needs to be
// (offload.ShellQuote), and the placeholder's argument comes before it: the last " or read "
// is the one this tier wrote. Each reads this version's wording (readIt, recallRead: the
// path in group 1) and the older one's ("read PATH", "stored in PATH", then
// offload.RecallNote, which older still did not write: the path in group 2), which
// documents cleared before hold; the original JSON's hash is group 3.
var (
	keptResult = regexp.MustCompile(`(?s)^\[ctx-snip: .* cleared \([0-9,]+ tokens?\); .* — re-run the call(?: that made it)? or ` + keptAt("read ") + `\]$`)
	keptNote   = regexp.MustCompile(`(?s)^cleared [0-9,]+ tokens?; ` + keptAt("stored in ") + `$`)
)

// keptAt is the expression of where a placeholder or stub says its text is, in this
// version's words or, after old, in an older version's.
func keptAt(old string) string {
	return `(?:` + regexp.QuoteMeta(readIt+recallRead) + `(.+?)|` + regexp.QuoteMeta(old) + `(.+?)(?:` + regexp.QuoteMeta(offload.RecallNote) + `)?)(?:` + regexp.QuoteMeta(rawNote) + `([0-9a-f]{64}))?`
}

// errMalformed is wrapped by every error about a placeholder that cannot be read.
var errMalformed = errors.New("malformed ctx-snip placeholder")

// keptIn reads where a placeholder (without its label) or a stub's note says its text is
// kept; ok is false when it names no file (a --no-store placeholder, or one of an older
// version): then there is nothing to restore.
func keptIn(re *regexp.Regexp, text string) (k kept, ok bool, err error) {
	m := re.FindStringSubmatch(text)
	if m == nil {
		return kept{}, false, nil
	}
	path := m[1]
	if path == "" {
		path = m[2]
	}
	h, err := offload.HashOfPath(offload.ShellUnquote(path))
	if err != nil {
		return kept{}, false, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return kept{hash: h, raw: m[3]}, true, nil
}

// KeptMemo remembers what factsOf kept of each result, by its bytes and label, for the
// plans of one tier over a conversation's requests: each request holds the results of the
// one before, and naming their stored files (decoding, redacting, hashing) was most of
// a turn's ctx-snip. Safe for concurrent plans; bounded by maxKept results, forgotten
// all at once past it.
type KeptMemo struct {
	mu   sync.Mutex
	kept map[keptKey]kept
	// The facts of each call and result of the last two documents planned, by the
	// block's offset: a request that extends the one before holds its blocks at the same
	// offsets, so a plan reads only the blocks that are new or moved (collect walked and
	// read every block of the history each request).
	byAt, olderByAt map[int]*factsAt
	doc             *transcript.Transcript // the document byAt is of
	read            factsOptions           // the options the facts were read under
}

// factsAt is what a plan read of the block at an offset: the block as read, the bytes
// of its span and body (which are all of the document factsOf reads), and its facts.
type factsAt struct {
	block      transcript.Block
	span, body string
	format     transcript.Format
	f          facts
}

// factsOptions are the options factsOf reads facts under (a call's stub aside, which is
// not remembered).
type factsOptions struct {
	store        string
	redact       *redact.Redactor
	read, search []string
}

// facts is the facts of b, a block of t: those read for the block at b's offset in this
// document or the one planned before it when the block is the same there (every field,
// and the same bytes in its span and body), else read by read and remembered. Two
// documents' facts are kept, so a memo that plans one conversation request after
// request holds only the blocks of the newest two.
func (m *KeptMemo) facts(t *transcript.Transcript, b *transcript.Block, o Options, read func() facts) facts {
	at, span, body := b.Span.Start, t.Slice(b.Span), t.Slice(b.Body)
	opts := factsOptions{o.Store, o.Redact, o.Tools.Read, o.Tools.Search}
	m.mu.Lock()
	if !m.read.same(opts) {
		m.byAt, m.olderByAt, m.doc, m.read = nil, nil, nil, opts
	}
	if m.doc != t {
		m.doc, m.byAt, m.olderByAt = t, make(map[int]*factsAt, len(m.byAt)), m.byAt
	}
	for _, memo := range [2]map[int]*factsAt{m.byAt, m.olderByAt} {
		if e, ok := memo[at]; ok && e.format == t.Format && e.span == span && e.body == body && sameBlock(&e.block, b) {
			// (this document's block and bytes, so that the memo keeps no older one)
			e.block, e.span, e.body = *b, span, body
			m.byAt[at] = e
			m.mu.Unlock()
			return e.f
		}
	}
	m.mu.Unlock()
	f := read() // (unlocked: it reads through m.of)
	m.mu.Lock()
	if m.doc == t && m.read.same(opts) {
		m.byAt[at] = &factsAt{block: *b, span: span, body: body, format: t.Format, f: f.detach()}
	}
	m.mu.Unlock()
	return f
}

func (a factsOptions) same(b factsOptions) bool {
	return a.store == b.store && a.redact == b.redact && slices.Equal(a.read, b.read) && slices.Equal(a.search, b.search)
}

// blockFields are a Block's fields but its slices and image (TestSameBlockFields holds
// the list to Block's).
type blockFields struct {
	kind                  transcript.Kind
	typ, toolID, toolName string
	span, body, lead      transcript.Span
	bodyJSON, isError     bool
	encrypted, sig, head  int
	agent, user, pinned   bool
}

func fieldsOf(b *transcript.Block) blockFields {
	return blockFields{b.Kind, b.Type, b.ToolID, b.ToolName, b.Span, b.Body, b.Lead, b.BodyJSON, b.IsError,
		b.Encrypted, b.Signature, b.Head, b.Agent, b.User, b.Pinned}
}

// sameBlock reports whether two blocks were read the same, field for field.
func sameBlock(a, b *transcript.Block) bool {
	if fieldsOf(a) != fieldsOf(b) || !slices.Equal(a.ToolIDs, b.ToolIDs) || (a.Image == nil) != (b.Image == nil) ||
		a.Image != nil && *a.Image != *b.Image || len(a.Parts) != len(b.Parts) {
		return false
	}
	for k := range a.Parts {
		if !sameBlock(&a.Parts[k], &b.Parts[k]) {
			return false
		}
	}
	return true
}

type keptKey struct {
	src   [sha256.Size]byte
	label string
}

const maxKept = 50_000

// of is what is kept of raw under label: remembered, else read by read and remembered.
// A nil memo reads it every time.
func (m *KeptMemo) of(raw, label string, read func() kept) kept {
	if m == nil {
		return read()
	}
	key := keptKey{sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw))), label} // (read in place: no copy)
	m.mu.Lock()
	k, ok := m.kept[key]
	m.mu.Unlock()
	if ok {
		return k
	}
	k = read()
	key.label = strings.Clone(label) // not a slice of the document
	m.mu.Lock()
	if m.kept == nil || len(m.kept) >= maxKept {
		m.kept = make(map[keptKey]kept, 1024)
	}
	m.kept[key] = k
	m.mu.Unlock()
	return k
}
