// Package snip is ctx-snip, tiers 2-3 of the ctxkit pipeline: it replaces stale tool
// results with a short placeholder that names the call and says how to get the result
// back: read it with ctx-recall --read PATH (kept in the offload store, internal/store,
// as ctx-persist uses it, in a file of its own or in a pack), or re-run the call. The
// tool calls themselves are kept, so the model still knows what it did. Restore puts back what the placeholders replaced, byte
// for byte (ctx-persist --restore runs it).
//
// A result is stale when a later read of the same file supersedes it, when a later
// identical search does, when more than K results of the same search tool came after it,
// or, to bring utilization down, when it is older than the newest N results. The tier acts
// above a utilization of the effective window, or when the prompt cache has gone cold
// (microcompact: the newest message is older than the idle time), and below both it gives
// the document back byte for byte.
//
// Plan is the tier: a pure function from a parsed transcript and Options to the edits and
// the run's Stats. Main is the command-line adapter around it.
package snip

import (
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/human"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Reason says why a result was cleared.
type Reason string

// The reasons, in the order the rules run.
const (
	// Reread: a later read of the same file (the whole file, or the same part) supersedes it.
	Reread Reason = "reread"
	// RepeatedSearch: a later search with the same tool and arguments supersedes it.
	RepeatedSearch Reason = "repeated-search"
	// SearchLimit: more than MaxSearches newer results of the same search tool follow it.
	SearchLimit Reason = "max-searches"
	// Old: older than the newest Keep results, cleared oldest first until utilization is
	// down to the target.
	Old Reason = "old"
	// Idle: older than the newest Keep results after the cache went cold.
	Idle Reason = "idle"
)

// Options configure the tier. Defaults gives the documented defaults.
type Options struct {
	// Trigger is the utilization (a fraction of the effective window) above which the tier
	// acts.
	Trigger float64
	// Target is the utilization old results are cleared down to, oldest first, once the
	// tier acts; it sits below Trigger so the next turn does not clear again at once.
	Target float64
	// Keep is the number of newest results only ever cleared when superseded (a read
	// again, a search repeated: a newer copy follows); never as old or for the search limit.
	Keep int
	// MaxSearches is how many results of each search tool are kept; 0 means no limit.
	MaxSearches int
	// Idle is how long after the newest message the cache counts as cold; 0 turns
	// microcompact off. Now is the current time; zero also turns it off.
	Idle time.Duration
	Now  time.Time
	// CachedAt, when set, is when the prompt cache was last written (the conversation's
	// previous request, which ctx-proxy knows): idleness counts from it rather than from
	// the newest message's time, and a document without timestamps can go idle. CacheTTL
	// is the cache lifetime the request asked for (Anthropic's ttl of 1h): the cache is
	// not cold before it, so it lengthens Idle.
	CachedAt time.Time
	CacheTTL time.Duration
	// ClearInputs also replaces the arguments of cleared calls with a stub.
	ClearInputs bool
	// Store is the offload store's directory as placeholders name it (absolute reads best:
	// ctx-recall, run by the model, may not share the working directory). Each cleared
	// text is kept there and its placeholder gives ctx-recall --read its path; "" clears
	// without keeping (--no-store), and the placeholder only says to re-run the call.
	Store string
	// Redact, when set, redacts what is kept in the store (DESIGN §4.11); the placeholder
	// names the redacted file.
	Redact *redact.Redactor
	// Kept, when set, remembers what was kept of each result from one document to the
	// next (a tier that plans a conversation request after request): a result read before
	// is not decoded, redacted and hashed again. nil reads each.
	Kept *KeptMemo
	// Tools adds tool names to the built-in reads and searches.
	Tools Tools
	// Counter measures tokens; nil means the estimate.
	Counter tokens.Counter
	// Tokens is the document's token count before any edit (count.Total with Counter) and
	// Effective the effective window it is measured against.
	Tokens, Effective int
	// Blocks, when set, are the tokens of each block (measure.CountsOf(...).Blocks, counted
	// with Counter along with Tokens), so a cleared result is not counted again; PerMessage,
	// when set, each message's share.
	Blocks     [][]int
	PerMessage []int
	// Was, when set, is each block's size before any ctxkit edit (measure.Counts.Was): a
	// placeholder states it, so clearing a result ctx-budget cut or ctx-persist stored
	// still says what the result first held.
	Was [][]int

	// A firing with a warm cache must be worth the prompt cache it breaks: every token
	// from the first cleared result on is written to the cache again. It must save at
	// least MinSaving tokens, and, with Repay > 0, pay the cache back within Repay
	// requests at Price (each later request reads fewer tokens). Otherwise the tier does
	// not act, and leaves the document to the tiers after it. A cold cache costs nothing
	// to break: microcompact is exempt.
	MinSaving int
	MinShare  float64 // of the effective window, when it asks for more than MinSaving
	Repay     int
	Price     tokens.Price
}

// Defaults returns the documented defaults: act above 60% utilization and clear old
// results down to 50%, keep the newest 3 results and 5 results of each search tool,
// microcompact after 5 minutes of idleness.
func Defaults() Options {
	return Options{Trigger: 0.60, Target: 0.50, Keep: 3, MaxSearches: 5, Idle: 5 * time.Minute, MinShare: 0.05, Repay: 10}
}

// Item is one cleared result.
type Item struct {
	// Message and Block locate the result; Line is its JSONL line (0 for JSON documents).
	Message int    `json:"message"`
	Block   int    `json:"block"`
	Line    int    `json:"line,omitempty"`
	ID      string `json:"id,omitempty"`
	Tool    string `json:"tool"`
	Arg     string `json:"argument"`
	Reason  Reason `json:"reason"`
	// Tokens is what the result held; Saved is what clearing it (and its call's input)
	// saves.
	Tokens       int  `json:"tokens"`
	Saved        int  `json:"saved"`
	InputCleared bool `json:"input_cleared,omitempty"`
}

// Stats describe one run.
type Stats struct {
	// Trigger says why the tier acted ("utilization 73%", "idle 2h5m") or why it did not
	// ("below 60% of window").
	Trigger string
	Acted   bool
	// Utilization before the run; UtilizationAfter the same measure afterwards.
	Utilization, UtilizationAfter float64
	// Results is the number of tool results seen; Already how many of them an earlier run
	// had cleared.
	Results, Already int
	// Items lists the results cleared by this run, in document order.
	Items []Item
	// Inputs is the number of call inputs replaced by the stub (also of results cleared
	// by an earlier run).
	Inputs int
	// Stored is the number of texts (results and inputs) kept in the store.
	Stored int
	// TokensDelta is the change in the document's token count: zero or negative.
	TokensDelta int
	// Repay is the judgement of the clearing against the prompt cache it breaks (nil when
	// it was not judged: nothing to clear, a cold cache, --repay 0).
	Repay *tokens.Repayment
}

// Reasons counts the cleared results by reason.
func (s *Stats) Reasons() map[Reason]int {
	m := map[Reason]int{}
	for _, it := range s.Items {
		m[it.Reason]++
	}
	return m
}

// Marker is how every placeholder of this tier starts; a result that starts with it is
// never cleared again.
const Marker = "[ctx-snip: "

// The stubs --clear-inputs writes: an object where the API wants an object, a JSON object
// in a string where it wants a JSON string (Chat Completions and Responses arguments), and
// text for free-form inputs (custom tools). Each says how many tokens the input had, which
// ctx-count reads back (measure.markerWas), and where the input is kept; an input that
// starts like one was cleared before (stubs of older versions said no figure, of --no-store
// runs no file).
const (
	stubJSONStart = `{"ctx_snip":"`
	stubTextStart = Marker
)

// stubNote is what a stub says: the tokens the input had and, when it was kept, where.
func stubNote(tokens int, at string) string {
	note := "cleared " + human.Thousands(tokens) + " tokens"
	if at != "" {
		note += "; " + readIt + at
	}
	return note
}

// stubObject is the stub object that carries note.
func stubObject(note string) string { return `{"ctx_snip":` + transcript.Quote(note) + "}" }

func stubJSON(tokens int, at string) string { return stubObject(stubNote(tokens, at)) }

func stubText(tokens int, at string) string {
	return stubTextStart + stubNote(tokens, at) + "]"
}

// result is the tier's view of one tool result.
type result struct {
	ref       transcript.Ref
	calls     []transcript.Ref
	call      Call
	protected bool
	cleared   bool            // an earlier run's placeholder
	content   transcript.Span // what a placeholder replaces; zero when it cannot be replaced
	label     string          // what the placeholder keeps at its start
	kept      kept            // where the content is kept (with Options.Store)
	tokens    int
	reason    Reason
	with      string // the placeholder
	saved     int
	inputs    []change
}

// change is one edit of the plan and, when the text it replaces is kept in the store, how:
// the files its placeholder names, the label the placeholder keeps (not stored), the index
// line's description.
type change struct {
	edit  transcript.Edit
	kept  kept
	label string
	value bool // a call's input kept as the JSON value it is (see keep)
	meta  store.Entry
	rd    *redact.Redactor // Options.Redact
}

// blob is what change ch keeps, read from raw, the document's bytes at its span, whose
// srcSum is sum: the same files its placeholder names, or an error when the text is not
// what the plan read. The bytes the plan read (sum is its kept.src) are only decoded: what
// the plan found (the secrets, whether the original JSON is kept, the hashes) is reused,
// and the store checks the hashes as it writes (offload.Saver).
func (ch *change) blob(raw string, sum uint64) (offload.Blob, error) {
	return ch.blobInto(nil, raw, sum)
}

// blobInto is blob decoding a string literal into *buf (keptTextInto) when buf is not
// nil: the blob's texts are then valid until *buf is used again.
func (ch *change) blobInto(buf *[]byte, raw string, sum uint64) (offload.Blob, error) {
	k := &ch.kept
	var b offload.Blob
	if sum == k.src {
		t := keptTextInto(buf, raw, ch.label, ch.value)
		b = offload.Blob{Hash: k.hash, Data: redact.Apply(t.text, k.found.text), RawHash: k.raw}
		if k.raw != "" {
			b.RawData = redact.Apply(raw, k.found.raw)
		}
		if len(b.Data) != k.size || len(b.RawData) != k.rawSize {
			return offload.Blob{}, fmt.Errorf("internal: the text at bytes %d-%d is not the one planned", ch.edit.Span.Start, ch.edit.Span.End)
		}
	} else {
		var f found
		b, f = keepFound(ch.rd, raw, ch.label, ch.value)
		if keptOf(raw, b, f).files() != k.files() {
			return offload.Blob{}, fmt.Errorf("the text at bytes %d-%d changed since it was read", ch.edit.Span.Start, ch.edit.Span.End)
		}
	}
	m := ch.meta
	m.Hash, m.Bytes, m.Lines, m.Raw = b.Hash, len(b.Data), offload.LineCount(b.Data), b.RawHash
	b.Meta = m
	return b, nil
}

// Plan decides which results to clear: the edits to apply with t.Apply, the texts they
// replace, which must be in the store before the edits are emitted (with Options.Store),
// and the run's statistics. It does no I/O.
func Plan(t *transcript.Transcript, o Options) ([]transcript.Edit, []offload.Blob, Stats) {
	c := counter(o)
	changes, st := plan(t, o, func(b *transcript.Block) facts { return factsOf(t, b, o, c) })
	var edits []transcript.Edit
	var blobs []offload.Blob
	for i := range changes {
		ch := &changes[i]
		edits = append(edits, ch.edit)
		if ch.kept.hash != "" {
			raw := t.Slice(ch.edit.Span)
			b, err := ch.blob(raw, srcSum(raw))
			if err != nil {
				panic("snip: " + err.Error()) // the plan read this very text
			}
			blobs = append(blobs, b)
		}
	}
	return edits, blobs, st
}

func counter(o Options) tokens.Counter {
	if o.Counter == nil {
		c, _ := tokens.New("estimate")
		return c
	}
	return o.Counter
}

// facts are what the plan reads from the text of a block: of a call, what it does and, with
// ClearInputs, the stub for its input; of a result, whether an earlier run cleared it and
// where its content is. A streamed document has them worked out in its first pass, record
// by record; the plan itself reads no text.
type facts struct {
	call Call
	// stub is what replaces the call's input and saving the tokens it changes by (ok when
	// there is a stub that saves).
	stub   transcript.Edit
	stubOK bool
	saving int
	// input is where the call's input is kept and the tokens it had (with a stub and
	// Options.Store).
	input       kept
	inputTokens int
	// cleared: a placeholder already; content: the span a placeholder replaces (zero when
	// the result cannot be replaced); label: what the placeholder keeps at its start
	// (Block.Head: Cline's "[tool for 'x'] Result:" line).
	cleared bool
	content transcript.Span
	label   string
	// kept is where the content is kept when cleared (with Options.Store).
	kept kept
}

// kept names the files a cleared text is kept in: the text as the model reads it and, when
// re-encoding that text would not give the document's bytes back, the original JSON. src
// is the srcSum of the document's bytes they were made from, size and rawSize their
// lengths: when the same bytes come to be written and both files are stored already
// (offload.Saver.Stored), they are referenced without being made again (keepIn); when
// they are not, the files are made from the bytes with what the plan found (found: the
// secrets redacted), not found again (change.blob).
type kept struct {
	hash, raw     string
	src           uint64
	size, rawSize int
	found         found
}

// files is what the placeholder names.
func (k kept) files() [2]string { return [2]string{k.hash, k.raw} }

// at is what a placeholder says of where the text is: the command that reads it, with its
// path in the store, and the hash of the original JSON when that was kept too. The
// command, not the path alone: a text stored with many others is packed (store.Batch),
// with no file of its own at the path, which ctx-recall resolves all the same.
func (k kept) at(dir string) string {
	if k.hash == "" {
		return ""
	}
	s := recallRead + offload.ShellQuote(store.Path(dir, k.hash))
	if k.raw != "" {
		s += rawNote + k.raw
	}
	return s
}

// rawNote precedes the hash of a kept original JSON in a placeholder.
const rawNote = "; original JSON: sha256:"

// recallRead is the command a placeholder gives to read its text back, before the path;
// readIt precedes it, in a result's placeholder after "re-run the call or ", in a stub
// after the tokens. (Older versions said "read PATH (or ctx-recall --outline/--read with
// that path)", "stored in PATH" in a stub, which the parsers still read: keep.go.)
const (
	recallRead = "ctx-recall --read "
	readIt     = "read it with: "
)

// keptOf is where blob b, made from the document's bytes raw with the secrets f redacted,
// keeps them.
func keptOf(raw string, b offload.Blob, f found) kept {
	return kept{hash: b.Hash, raw: b.RawHash, src: srcSum(raw), size: len(b.Data), rawSize: len(b.RawData), found: f}
}

// srcSum tells the bytes a plan read from others: a seeded 64-bit hash (hash/maphash),
// several times as fast as SHA-256, whose seed is this process's. It does not name a file:
// it checks that the bytes written are those the plan named the files of, which the store
// checks again by their SHA-256 as it writes them, and a streamed document is checked
// unchanged as a whole between its passes (cli).
func srcSum(raw string) uint64 { return maphash.String(srcSeed, raw) }

var srcSeed = maphash.MakeSeed()

// factsOf reads the facts of block b of t (a call or a result), or takes them from the
// plan of the request before (Options.Kept, KeptMemo.facts) where the block is there,
// the same, at the same offset. A call's stub (--clear-inputs) is counted with c, which
// the memo does not know: read every time.
func factsOf(t *transcript.Transcript, b *transcript.Block, o Options, c tokens.Counter) facts {
	if o.Kept != nil && (b.Kind == transcript.ToolResult || b.Kind == transcript.ToolCall && !o.ClearInputs) {
		return o.Kept.facts(t, b, o, func() facts { return readFacts(t, b, o, c) })
	}
	return readFacts(t, b, o, c)
}

// readFacts is factsOf without the memo.
func readFacts(t *transcript.Transcript, b *transcript.Block, o Options, c tokens.Counter) facts {
	var f facts
	switch b.Kind {
	case transcript.ToolCall:
		f.call = Classify(b.ToolName, t.BodyText(b), o.Tools)
		if o.ClearInputs {
			if with, in, n, ok := inputStub(t, b, c, o.Store, o.Redact); ok {
				f.input, f.inputTokens = in, n
				f.stub = transcript.Edit{Span: b.Body, With: with}
				f.saving = inputSaving(t, f.stub, c)
				f.stubOK = f.saving < 0
			}
		}
	case transcript.ToolResult:
		f.label = t.LabelOf(b)
		f.cleared = isPlaceholder(t, b, f.label)
		if editable(b) {
			f.content = contentSpan(t, b)
		}
		if o.Store != "" && !f.cleared && !f.content.IsZero() {
			raw := t.Slice(f.content)
			f.kept = o.Kept.of(raw, f.label, func() kept { return keptFor(o.Redact, raw, f.label, false) })
		}
	}
	return f
}

// detach copies the strings of facts read from a record, so keeping them does not keep the
// record's text.
func (f facts) detach() facts {
	f.call.Tool, f.call.Arg, f.call.Key, f.call.File = strings.Clone(f.call.Tool), strings.Clone(f.call.Arg), strings.Clone(f.call.Key), strings.Clone(f.call.File)
	f.stub.With = strings.Clone(f.stub.With)
	f.label = strings.Clone(f.label)
	return f // kept's hashes are new strings, not slices of the record
}

// plan is Plan with the facts of each block given by factsOf: the changes in document
// order.
func plan(t *transcript.Transcript, o Options, factsOf func(*transcript.Block) facts) ([]change, Stats) {
	c := counter(o)
	st := Stats{}
	if o.Effective > 0 {
		st.Utilization = float64(o.Tokens) / float64(o.Effective)
	}
	st.UtilizationAfter = st.Utilization

	idle, idleFor := coldCache(t, o)
	over := o.Effective > 0 && st.Utilization > o.Trigger
	switch {
	case idle:
		st.Trigger = "idle " + shortDuration(idleFor)
	case over:
		st.Trigger = fmt.Sprintf("utilization %.0f%%", math.Floor(st.Utilization*100))
	default:
		st.Trigger = fmt.Sprintf("below %s of window", percent(o.Trigger))
	}

	res := collect(t, factsOf)
	st.Results = len(res)
	for i := range res {
		if res[i].cleared {
			st.Already++
		}
	}
	if !idle && !over {
		return nil, st
	}
	st.Acted = true
	p := planner{t: t, o: o, c: c, res: res, facts: factsOf}
	p.protectedCalls = t.Protected()

	// Stale results first: a newer copy of what they showed follows them.
	p.superseded()
	p.searchLimit()
	// Then old results, oldest first: down to the target, or all of them when the cache is
	// cold (the whole prompt is paid for again anyway).
	recent := len(res) - max(o.Keep, 0)
	reason := Old
	if idle {
		reason = Idle
	}
	goal := o.Target * float64(o.Effective)
	next := 0
	for ; next < recent; next++ {
		if !idle && float64(o.Tokens+p.delta) <= goal {
			break
		}
		p.mark(next, reason)
	}
	if !idle && p.notWorth() != "" {
		// Not worth the cache at the target: clear the rest of the old results too, since
		// the cache from the first cleared result on is lost either way.
		for ; next < recent; next++ {
			p.mark(next, reason)
		}
		if why := p.notWorth(); why != "" {
			st.Acted, st.Trigger, st.Repay = false, st.Trigger+": "+why, p.repay
			return nil, st
		}
	}
	st.Repay = p.repay
	if o.ClearInputs {
		// Inputs of results an earlier run cleared go too.
		for i := range res {
			if res[i].cleared {
				for _, in := range p.inputEdits(&res[i]) {
					res[i].inputs = append(res[i].inputs, in.change)
					p.delta += in.saving
				}
			}
		}
	}

	var changes []change
	for i := range res {
		r := &res[i]
		changes = append(changes, r.inputs...)
		st.Inputs += len(r.inputs)
		if r.reason == "" {
			continue
		}
		b := t.Block(r.ref)
		changes = append(changes, change{
			edit: transcript.Edit{Span: r.content, With: transcript.Quote(r.with)},
			kept: r.kept, label: r.label, rd: o.Redact,
			meta: entryOf(r.call.Tool, b.ToolID, r.tokens, c),
		})
		st.Items = append(st.Items, Item{
			Message: r.ref.Message, Block: r.ref.Block, Line: lineOf(t, t.Block(r.ref).Span.Start),
			ID: t.Block(r.ref).ToolID, Tool: r.call.Tool, Arg: r.call.Arg, Reason: r.reason,
			Tokens: r.tokens, Saved: r.saved, InputCleared: len(r.inputs) > 0,
		})
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].edit.Span.Start < changes[j].edit.Span.Start })
	for i := range changes {
		if changes[i].kept.hash != "" {
			st.Stored++
		}
	}
	st.TokensDelta = p.delta
	if o.Effective > 0 {
		st.UtilizationAfter = float64(o.Tokens+p.delta) / float64(o.Effective)
	}
	return changes, st
}

// notWorth says why the results marked so far do not repay the prompt cache they break,
// or "" when they do (or nothing is marked).
func (p *planner) notWorth() string {
	saved := -p.delta
	first := -1
	for i := range p.res {
		r := &p.res[i]
		if r.reason == "" && len(r.inputs) == 0 {
			continue
		}
		at := r.ref.Message
		if len(r.inputs) > 0 {
			for _, c := range r.calls {
				at = min(at, c.Message)
			}
		}
		if first < 0 || at < first {
			first = at
		}
	}
	if first < 0 {
		return ""
	}
	if least := max(p.o.MinSaving, int(p.o.MinShare*float64(p.o.Effective))); saved < least {
		return fmt.Sprintf("clearing would save %s tokens, less than the %s it must (--clear-at-least)", human.Thousands(saved), human.Thousands(least))
	}
	if p.o.Repay <= 0 {
		return ""
	}
	uncached := 0
	for mi := first; mi < len(p.t.Messages); mi++ {
		uncached += p.messageTokens(mi)
	}
	pr := p.o.Price
	if pr.CacheWrite <= 0 {
		pr = tokens.PriceOf("", "anthropic")
	}
	r := pr.Judge(saved, uncached, p.o.Repay)
	p.repay = &r
	if !r.Repays {
		requests := "requests"
		if p.o.Repay == 1 {
			requests = "request"
		}
		return fmt.Sprintf("clearing %s tokens would not repay the %s it takes out of the prompt cache within %d %s (--repay)", human.Thousands(saved), human.Thousands(uncached), p.o.Repay, requests)
	}
	return ""
}

// messageTokens is message mi's share of the count.
func (p *planner) messageTokens(mi int) int {
	if mi < len(p.o.PerMessage) {
		return p.o.PerMessage[mi]
	}
	if p.o.Blocks != nil {
		n := 0
		for _, b := range p.o.Blocks[mi] {
			n += b
		}
		return n
	}
	n := 0
	m := &p.t.Messages[mi]
	for bi := range m.Blocks {
		n += measure.BlockTokens(p.t, &m.Blocks[bi], p.c)
	}
	return n
}

type planner struct {
	t              *transcript.Transcript
	o              Options
	c              tokens.Counter
	res            []result
	protectedCalls map[int]bool
	facts          func(*transcript.Block) facts
	delta          int // tokens saved so far, negative
	// repay is the last judgement notWorth made (nil: none yet).
	repay *tokens.Repayment
}

// superseded marks reads that a later read of the same file supersedes and searches that
// a later identical search does. A later call counts whatever its result says, an error
// included: the file may be gone, and that is the news.
func (p *planner) superseded() {
	whole := map[string]bool{}
	same := map[string]bool{}
	for i := len(p.res) - 1; i >= 0; i-- {
		call := &p.res[i].call
		key := call.Tool + "\x00" + call.Key
		switch call.Class {
		case Read:
			if (call.File != "" && whole[call.File]) || (call.Key != "" && same[key]) {
				p.mark(i, Reread)
			}
			if call.Whole {
				whole[call.File] = true
			}
		case Search:
			if same[key] {
				p.mark(i, RepeatedSearch)
			}
		default:
			continue
		}
		if call.Key != "" {
			same[key] = true
		}
	}
}

// searchLimit marks the results of each search tool beyond its newest MaxSearches, outside
// the newest Keep results.
func (p *planner) searchLimit() {
	if p.o.MaxSearches <= 0 {
		return
	}
	seen := map[string]int{}
	recent := len(p.res) - max(p.o.Keep, 0)
	for i := len(p.res) - 1; i >= 0; i-- {
		call := &p.res[i].call
		if call.Class != Search {
			continue
		}
		seen[call.Tool]++
		if seen[call.Tool] > p.o.MaxSearches && i < recent {
			p.mark(i, SearchLimit)
		}
	}
}

// mark clears result i for reason, unless it is protected, cleared already, cannot be
// edited, or its placeholder would not be smaller.
func (p *planner) mark(i int, reason Reason) {
	r := &p.res[i]
	if r.reason != "" || r.cleared || r.protected || r.content.IsZero() {
		return
	}
	if p.o.Blocks != nil {
		r.tokens = p.o.Blocks[r.ref.Message][r.ref.Block]
	} else {
		r.tokens = measure.BlockTokens(p.t, p.t.Block(r.ref), p.c)
	}
	stated := r.tokens
	if p.o.Was != nil {
		stated = max(stated, p.o.Was[r.ref.Message][r.ref.Block])
	}
	with := r.label + placeholder(r.call, reason, stated, p.o, r.kept.at(p.o.Store))
	saved := r.tokens - p.c.Count(with)
	if saved <= 0 {
		return
	}
	r.reason, r.with, r.saved = reason, with, saved
	p.delta -= saved
	for _, in := range p.inputEdits(r) {
		r.inputs = append(r.inputs, in.change)
		r.saved += -in.saving
		p.delta += in.saving
	}
}

// entryOf is the index line of a text kept in the store, but for what the Saver fills in.
// Its strings are copies: a line waits in the Saver for the files to be written, which
// may be after the document is let go (keepIn), and a piece of a document read whole
// would keep all of it.
func entryOf(tool, id string, n int, c tokens.Counter) store.Entry {
	return store.Entry{Tool: strings.Clone(tool), ToolCallID: strings.Clone(id), Tokens: n, Tokenizer: c.Name()}
}

// stubbed is a call's input replaced by its stub, and the tokens that changes.
type stubbed struct {
	change
	saving int
}

// inputEdits are the stubs for the inputs of a cleared result's calls (--clear-inputs),
// with what each saves.
func (p *planner) inputEdits(r *result) []stubbed {
	if !p.o.ClearInputs {
		return nil
	}
	var stubs []stubbed
	for _, ref := range r.calls {
		if p.protectedCalls[ref.Message] {
			continue
		}
		b := p.t.Block(ref)
		if f := p.facts(b); f.stubOK {
			ch := change{edit: f.stub, kept: f.input, value: b.BodyJSON, rd: p.o.Redact, meta: entryOf(b.ToolName, b.ToolID, f.inputTokens, p.c)}
			ch.meta.Input = true
			stubs = append(stubs, stubbed{ch, f.saving})
		}
	}
	return stubs
}

// inputSaving is the change in tokens an input stub makes (negative when it saves).
func inputSaving(t *transcript.Transcript, e transcript.Edit, c tokens.Counter) int {
	before := t.BodyText(&transcript.Block{Body: e.Span, BodyJSON: !strings.HasPrefix(e.With, `"`)})
	after := e.With
	if strings.HasPrefix(after, `"`) {
		after = gjson.Parse(after).String()
	}
	return c.Count(after) - c.Count(before)
}

// collect lists the tool results outside header messages, in document order, with the
// calls they answer.
func collect(t *transcript.Transcript, factsOf func(*transcript.Block) facts) []result {
	callsOf := map[transcript.Ref][]transcript.Ref{}
	for _, pr := range t.Pairs() {
		if pr.Call != transcript.None && pr.Result != transcript.None {
			callsOf[pr.Result] = append(callsOf[pr.Result], pr.Call)
		}
	}
	protected := t.Protected()
	var res []result
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Header {
			continue
		}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Kind != transcript.ToolResult {
				continue
			}
			ref := transcript.Ref{Message: mi, Block: bi}
			f := factsOf(b)
			r := result{ref: ref, calls: callsOf[ref], protected: protected[mi], cleared: f.cleared, content: f.content, label: f.label, kept: f.kept}
			switch {
			case len(r.calls) == 1:
				r.call = factsOf(t.Block(r.calls[0])).call
			case len(r.calls) > 1:
				// One result for several calls (SWE-agent's tool_call_ids): name the first.
				r.call = Call{Tool: t.Block(r.calls[0]).ToolName}
			default:
				r.call = Call{Tool: b.ToolName}
			}
			res = append(res, r)
		}
	}
	return res
}

// editable reports whether a result's content may be replaced by a string (when it has a
// content span): the results of client tools in every format. Server tool results
// (web_search_tool_result and the like) and computer-use screenshots have a fixed shape
// the API checks, so they stay.
func editable(b *transcript.Block) bool {
	if b.User {
		return false // the user's words: re-running the call would not give them back
	}
	switch b.Type {
	case "tool_result", "mcp_tool_result", "tool", "function",
		"function_call_output", "custom_tool_call_output", "local_shell_call_output":
		return true
	case "text": // a Cline result, a user text block
		return true
	}
	return false
}

// isPlaceholder reports whether a result is already one of this tier's placeholders
// (after its label, when it has one).
func isPlaceholder(t *transcript.Transcript, b *transcript.Block, label string) bool {
	if len(b.Parts) > 0 || b.BodyJSON || b.Body.Len() <= len(Marker) {
		return false
	}
	raw := t.Slice(b.Body)
	if label != "" {
		// The label as this tier spells it (the one it wrote), then the marker.
		lit := transcript.Quote(label)
		lit = lit[:len(lit)-1]
		return strings.HasPrefix(raw, lit) && strings.HasPrefix(raw[len(lit):], Marker)
	}
	return strings.HasPrefix(raw, `"`+Marker)
}

// contentSpan is the span of a result's content value: its body string, or the whole
// list of parts (text and images), which the placeholder string replaces.
func contentSpan(t *transcript.Transcript, b *transcript.Block) transcript.Span {
	if len(b.Parts) == 0 {
		return b.Body
	}
	key := "content"
	if strings.HasSuffix(b.Type, "_output") {
		key = "output"
	}
	v := gjson.Get(t.Slice(b.Span), key)
	if !v.IsArray() {
		return transcript.Span{}
	}
	s := transcript.Span{Start: b.Span.Start + v.Index, End: b.Span.Start + v.Index + len(v.Raw)}
	if s.Start > b.Parts[0].Span.Start || s.End < b.Parts[len(b.Parts)-1].Span.End {
		return transcript.Span{}
	}
	return s
}

// inputStub returns what replaces a call's input: an object for an object (Anthropic
// tool_use input), a JSON-object string for a JSON string (Chat Completions and Responses
// arguments), a text for free-form input; with a store dir, where the input is kept, and
// the tokens it had. ok is false when there is nothing to replace, it was replaced before,
// or the API would not accept a stub (Codex local_shell actions).
func inputStub(t *transcript.Transcript, b *transcript.Block, c tokens.Counter, dir string, rd *redact.Redactor) (with string, in kept, n int, ok bool) {
	if b.Body.IsZero() || b.Type == "local_shell_call" {
		return "", kept{}, 0, false
	}
	raw := t.Slice(b.Body)
	if b.BodyJSON {
		if !strings.HasPrefix(raw, "{") || strings.HasPrefix(raw, stubJSONStart) {
			return "", kept{}, 0, false
		}
	} else if text := t.BodyText(b); strings.HasPrefix(text, stubJSONStart) || strings.HasPrefix(text, stubTextStart) {
		return "", kept{}, 0, false
	}
	if dir != "" {
		in = keptFor(rd, raw, "", b.BodyJSON)
	}
	at := in.at(dir)
	if b.BodyJSON {
		n = c.Count(raw)
		return stubJSON(n, at), in, n, true
	}
	text := t.BodyText(b)
	n = c.Count(text)
	if trimmed := strings.TrimSpace(text); strings.HasPrefix(trimmed, "{") && gjson.Valid(trimmed) {
		return transcript.Quote(stubJSON(n, at)), in, n, true
	}
	return transcript.Quote(stubText(n, at)), in, n, true
}

// placeholder is the text that replaces a result: what was cleared, why, and how to get
// it back (readKept finds the file it names).
// at, when not "", says where the result is kept.
func placeholder(call Call, reason Reason, tok int, o Options, at string) string {
	what := "a tool result"
	switch {
	case call.Tool != "" && call.Arg != "":
		what = fmt.Sprintf("result of %s(%q)", call.Tool, human.Label(call.Arg, 120))
	case call.Tool != "":
		what = fmt.Sprintf("result of %s", call.Tool)
	}
	var why string
	switch reason {
	case Reread:
		why = "the file was read again later"
	case RepeatedSearch:
		why = "the same search was run again later"
	case SearchLimit:
		why = fmt.Sprintf("only the newest %d %s results are kept", o.MaxSearches, call.Tool)
	case Idle:
		why = "an older result, cleared after the conversation sat idle"
	default:
		why = "an older result, cleared to free context"
	}
	how := "re-run the call"
	if call.Tool == "" {
		how = "re-run the call that made it"
	}
	if at != "" {
		how += " or " + readIt + at
	} else {
		how += " to see it"
	}
	return fmt.Sprintf("%s%s cleared (%s tokens); %s — %s]", Marker, what, human.Thousands(tok), why, how)
}

// coldCache reports whether the prompt cache has gone cold: it was last written (CachedAt,
// else the newest message's time) longer than Idle (or CacheTTL, when longer) before Now.
// Documents without timestamps are never cold unless CachedAt says when the cache was
// written.
func coldCache(t *transcript.Transcript, o Options) (bool, time.Duration) {
	if o.Idle <= 0 || o.Now.IsZero() {
		return false, 0
	}
	written := o.CachedAt
	if written.IsZero() {
		for i := range t.Messages {
			if tm := t.Messages[i].Time; tm.After(written) {
				written = tm
			}
		}
	}
	if written.IsZero() {
		return false, 0
	}
	d := o.Now.Sub(written)
	return d > max(o.Idle, o.CacheTTL), d
}

// lineOf is the 1-based JSONL line holding byte offset at, 0 for JSON documents.
func lineOf(t *transcript.Transcript, at int) int {
	rs := t.Records
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Span.End > at })
	if i < len(rs) && rs[i].Span.Start <= at {
		return rs[i].Line
	}
	return 0
}

// shortDuration writes d rounded to the second without zero units: 2h5m, 6m30s, 45s.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func percent(f float64) string {
	return fmt.Sprintf("%g%%", math.Round(f*100*1e6)/1e6)
}
