// Package persist is ctx-persist, tier 0.5 of the ctxkit pipeline and the reversible one:
// tool results above a size are written to the offload store (internal/store) and replaced
// by a preview of their first lines and a reference that tells the model where the whole
// text is and how to read it; --restore puts every one back, byte for byte.
//
// Plan is the tier: a pure function from a parsed transcript and Options to the edits and
// the texts to store. Restore is its inverse, pure as well given a function that fetches a
// stored file. Main is the command-line adapter: it writes every file to the store, durably,
// before it emits a document that refers to it.
//
// # Exactness
//
// The store keeps a result's text as the model reads it (the decoded JSON string), so cat
// and grep work on it. Restore has to give back the document's bytes, not just the text:
// the document may spell the same text with other escapes (\u003c for <, \/ for /, \u00e9
// for é, invalid UTF-8 or lone surrogates). Plan re-encodes each text with one canonical
// spelling (offload.Encode, fixed there) and compares it with the document's bytes. When
// they match, which is the case for every result in the corpus, the text alone is stored
// and Restore re-encodes it. When they differ, the original JSON string literal is stored
// as a second file too, its hash is written in the reference ("original encoding:
// sha256:..."), and Restore puts that literal back as it was. Either way the bytes come
// back exactly, and every file is checked against its SHA-256 before it is used.
package persist

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Options configure the tier.
type Options struct {
	// Threshold: a result whose texts add up to more bytes than this is offloaded.
	Threshold int
	// Preview is about how many bytes of a stored text's first lines stay in place.
	Preview int
	// Store is the store directory as references name it (an absolute path reads best:
	// a model's file tools may not share the working directory).
	Store string
	// Counter measures the tokens a reference reports and the savings. Nil means the
	// estimate.
	Counter tokens.Counter
	// Redact, when set, redacts each text before it is stored (DESIGN §4.11): the store
	// keeps no secret, the reference names the redacted file, and --restore puts back the
	// text with markers where the secrets were.
	Redact *redact.Redactor
}

// Defaults returns the documented defaults: results above 30 KB, previews of about 2 KB.
// The store has no fixed default: the runner works out the working directory's one in the
// user's state directory (cli, store.DefaultDir).
func Defaults() Options {
	return Options{Threshold: 30_000, Preview: 2_000}
}

// Blob is one stored text the plan's edits refer to (see offload.Blob).
type Blob = offload.Blob

// Stats describe one run of Plan.
type Stats struct {
	// Trigger says why the tier acted, or why not.
	Trigger string
	// Results is the number of tool results seen; Offloaded how many had texts stored,
	// Texts how many texts that was (a result with list content may have several).
	Results, Offloaded, Texts int
	// Already counts texts that are references from an earlier run; Protected results
	// above the threshold left alone because they are in a message no tier may alter.
	Already, Protected int
	// BytesStored is the size of the stored texts; BytesLeft what stayed in their place.
	BytesStored, BytesLeft int
	// Raw counts texts whose original literal was stored as well (see the package doc).
	Raw int
	// TokensDelta is the change in the document's token count (count.Total with the same
	// counter): zero or negative.
	TokensDelta int
}

// Plan decides what to offload: the edits to apply with t.Apply, the files they refer to
// (which must be in the store first), and the run's statistics. It does no I/O.
func Plan(t *transcript.Transcript, o Options) ([]transcript.Edit, []Blob, Stats) {
	p := newPlanner(t, o)
	st := p.stats()
	var edits []transcript.Edit
	var blobs []Blob
	for _, ref := range p.candidates() {
		e, b := p.offload(t, ref, &st)
		edits, blobs = append(edits, e...), append(blobs, b...)
	}
	p.finish(&st)
	return edits, blobs, st
}

// planner is what Plan knows before it reads any text: which results answer which tool,
// which messages are protected. A streamed transcript is planned with the conversation of
// its first pass and offloaded, result by result, in its second (main.go).
type planner struct {
	o Options
	c tokens.Counter
	t *transcript.Transcript // the conversation: blocks and spans, text not needed
	// names are the tool names of the results, made when a result is first offloaded:
	// a request with none to offload (most of a conversation's) pairs no calls.
	names     map[transcript.Ref]string
	namesOnce sync.Once
	// The newest results are what the model is about to read: offloading them would only
	// make it read them back. So no result in a protected message is touched (DESIGN §4.6).
	keep map[int]bool
}

func newPlanner(t *transcript.Transcript, o Options) *planner {
	c := o.Counter
	if c == nil {
		c, _ = tokens.New("estimate")
	}
	return &planner{o: o, c: c, t: t, keep: t.Protected()}
}

// nameOf is the tool name of result ref ("" unknown).
func (p *planner) nameOf(ref transcript.Ref) string {
	p.namesOnce.Do(func() { p.names = toolNames(p.t) })
	return p.names[ref]
}

// stats starts the run's statistics: the results seen.
func (p *planner) stats() Stats {
	st := Stats{Trigger: fmt.Sprintf("no tool result above %d bytes", p.o.Threshold)}
	for mi := range p.t.Messages {
		for bi := range p.t.Messages[mi].Blocks {
			if p.t.Messages[mi].Blocks[bi].Kind == transcript.ToolResult {
				st.Results++
			}
		}
	}
	return st
}

// candidates are the results that may be above the threshold, by a bound read off their
// spans (escapes only shrink a text): the only ones offload needs to read.
func (p *planner) candidates() []transcript.Ref {
	var refs []transcript.Ref
	for mi := range p.t.Messages {
		for bi := range p.t.Messages[mi].Blocks {
			if b := &p.t.Messages[mi].Blocks[bi]; b.Kind == transcript.ToolResult && rawSize(b) > p.o.Threshold {
				refs = append(refs, transcript.Ref{Message: mi, Block: bi})
			}
		}
	}
	return refs
}

// offload decides result ref, reading its text through doc: the whole document, or, for a
// streamed one, a piece of it that holds the result. It is safe for concurrent use: it
// changes nothing but *st (the figures add sums).
func (p *planner) offload(doc *transcript.Transcript, ref transcript.Ref, st *Stats) ([]transcript.Edit, []Blob) {
	b := p.t.Block(ref)
	us := units(doc, b)
	size := 0
	for i := range us {
		size += len(us[i].text)
	}
	if size <= p.o.Threshold {
		return nil, nil
	}
	if p.keep[ref.Message] {
		st.Protected++
		return nil, nil
	}
	var edits []transcript.Edit
	var blobs []Blob
	for i := range us {
		u := &us[i]
		if _, ok := markerLine(u.text); ok {
			st.Already++
			continue
		}
		e, blob, saved, ok := offloadUnit(u, p.o, p.c, p.nameOf(ref), b.ToolID)
		if !ok {
			continue
		}
		edits = append(edits, e)
		blobs = append(blobs, blob)
		st.Texts++
		st.BytesStored += len(u.text)
		st.BytesLeft += len(e.With)
		st.TokensDelta -= saved
		if blob.RawHash != "" {
			st.Raw++
		}
	}
	if len(edits) > 0 {
		st.Offloaded++
	}
	return edits, blobs
}

// add adds to s what offload added to its own Stats.
func (s *Stats) add(o Stats) {
	s.Protected += o.Protected
	s.Already += o.Already
	s.Texts += o.Texts
	s.BytesStored += o.BytesStored
	s.BytesLeft += o.BytesLeft
	s.TokensDelta += o.TokensDelta
	s.Raw += o.Raw
	s.Offloaded += o.Offloaded
}

// finish words the trigger once every result is decided.
func (p *planner) finish(st *Stats) {
	if st.Offloaded > 0 {
		st.Trigger = fmt.Sprintf("tool results above %d bytes", p.o.Threshold)
	}
}

// offloadUnit stores one text: the edit that leaves its preview and reference, the files to
// store, and the tokens saved. ok is false when the reference would not be smaller than
// the text, in bytes or in tokens.
func offloadUnit(u *unit, o Options, c tokens.Counter, tool, callID string) (transcript.Edit, Blob, int, bool) {
	text := u.text
	raw := ""
	if !u.canonical() {
		raw = u.raw
	}
	// Redacted, the reference describes the file stored: its size, its lines and its
	// preview are the redacted text's, so that --restore can check them and gives back
	// that text.
	if r := o.Redact.String(text); r != text {
		text, raw = r, redactedRaw(o.Redact, raw, r)
	}
	n := previewOf(text, o.Preview)
	if n >= len(text) {
		return transcript.Edit{}, Blob{}, 0, false
	}
	blob := offload.Text(text, raw)
	r := Reference{
		Bytes:  len(text),
		Lines:  blob.Meta.Lines,
		Tokens: c.Count(text),
		Shown:  n,
		Hash:   blob.Hash,
		Raw:    blob.RawHash,
	}
	r.Path = store.Path(o.Store, r.Hash)
	newOuter := u.replace(offloaded(shown(text, n), r))
	// The text stored is often the whole body (no wrapper, label or redaction): its count
	// is the one just made, not a second hash of it and a lookup in the count cache.
	before := r.Tokens
	if u.outer != text {
		before = c.Count(u.outer)
	}
	after := c.Count(newOuter)
	if len(newOuter) >= len(u.outer) || after >= before {
		return transcript.Edit{}, Blob{}, 0, false
	}
	blob.Meta.Tool, blob.Meta.ToolCallID, blob.Meta.Tokens, blob.Meta.Tokenizer = tool, callID, r.Tokens, c.Name()
	return transcript.Edit{Span: u.body, With: transcript.Quote(newOuter)}, blob, before - after, true
}

// redactedRaw is the original literal raw of a text redacted to text, redacted as well, or
// "" when it does not spell text any more (a secret the literal spells with escapes the
// text does not have): the text is then stored alone and --restore spells it anew.
func redactedRaw(rd *redact.Redactor, raw, text string) string {
	if raw == "" {
		return ""
	}
	r := rd.String(raw)
	var got string
	if json.Unmarshal([]byte(r), &got) != nil || got != text {
		return ""
	}
	return r
}

// toolNames maps each result to the name of the call it answers: results seldom name it.
func toolNames(t *transcript.Transcript) map[transcript.Ref]string {
	names := map[transcript.Ref]string{}
	for _, p := range t.Pairs() {
		if p.Call != transcript.None && p.Result != transcript.None {
			if n := t.Block(p.Call).ToolName; n != "" {
				names[p.Result] = n
			}
		}
	}
	for mi := range t.Messages {
		for bi := range t.Messages[mi].Blocks {
			b := &t.Messages[mi].Blocks[bi]
			r := transcript.Ref{Message: mi, Block: bi}
			if b.Kind == transcript.ToolResult && b.ToolName != "" && names[r] == "" {
				names[r] = b.ToolName
			}
		}
	}
	return names
}
