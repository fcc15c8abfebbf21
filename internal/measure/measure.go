// Package measure counts what a conversation costs the model: every block's and message's
// tokens, the document's total, and the window it is measured against. It is the one
// figure every tier decides on and ctx-count reports; it reads transcripts (whole, or
// streamed record by record) and writes nothing.
package measure

import (
	"runtime"
	"sort"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Block is one block counted, without its text.
type Block struct {
	Kind   transcript.Kind
	Tokens int
	Chars  int // decoded characters of a result's text, counted with previews only (ctx-count's largest result, which says whether the budget tiers act)
	Bytes  int // and its size in bytes, for ctx-persist
	// Reasoning marks an OpenAI reasoning item's encrypted payload, which the API drops
	// once a newer user message follows it (see dropStaleReasoning); Stale is what it cost
	// when it was last sent, once it is dropped (Tokens is then 0).
	Reasoning bool
	Stale     int
	// Was is what the text a ctxkit marker in the block stands for held, in tokens, as
	// the marker says (0 without one): what an edit removed is Was - Tokens.
	Was int
	// Fixed is the part of Tokens the counter did not count: images, priced by their
	// pixels, encrypted reasoning by its size, thinking stored empty by its signature's.
	Fixed    int
	ToolName string
	ToolID   string
	ToolIDs  []string
}

// Message is one message counted, without its text.
type Message struct {
	Role    string
	Blocks  []Block
	Preview string // its first words, when previews were asked for
	Line    int    // first JSONL line, 0 for JSON documents
}

// Tokens is the message's share of the total: its blocks and its framing.
func (m *Message) Tokens(f tokens.Framing) int {
	n := m.Framing(f)
	for i := range m.Blocks {
		n += m.Blocks[i].Tokens
	}
	return n
}

// Framing is what the provider adds around the message and its tool blocks.
func (m *Message) Framing(f tokens.Framing) int {
	n := f.Message
	if f.ToolCall == 0 && f.ToolResult == 0 {
		return n
	}
	for i := range m.Blocks {
		switch m.Blocks[i].Kind {
		case transcript.ToolCall:
			n += f.ToolCall
		case transcript.ToolResult:
			n += f.ToolResult
		}
	}
	return n
}

// Tally is a conversation counted, message by message: what the figures a tier decides on
// and ctx-count's report are made from. Of makes one from a whole transcript; a streamed
// JSONL document is tallied record by record (Streamed).
type Tally struct {
	Format    transcript.Format
	Counter   tokens.Counter
	Messages  []Message
	HasSchema bool // the request declares tool schemas, of Schema tokens
	Schema    int
	Usage     []transcript.Usage
	// Hidden is the part of what the model sees that no record of the file holds (the
	// system prompt and tool schemas an agent sends, reminders it does not log), learned from the
	// newest recorded usage figure (Anchor) or said by the user (AddOverhead); HiddenFrom
	// says which, "" when there is none.
	Hidden     int
	HiddenFrom string
	Anchor     *Anchor
	// HiddenAcross says Hidden was learned from the newest figure before the newest
	// compaction (carryHidden): the conversation since records none yet.
	HiddenAcross bool
	// Attachments are what the conversation's attachment records put into the prompt
	// (transcript.Attachment), counted, in order.
	Attachments []Attached
}

// Attached is an attachment counted: what it puts into the prompt, with its wrapping,
// and the message it comes before.
type Attached struct {
	Type   string
	Before int
	Tokens int
}

// AttachmentWrap is the text Claude Code wraps an attachment's text in.
const AttachmentWrap = "<system-reminder>\n\n</system-reminder>"

// countAttachment counts what an attachment puts into the prompt: its block, and the
// system-reminder tags around it.
func countAttachment(t *transcript.Transcript, a *transcript.Attachment, c tokens.Counter, provider string) Attached {
	return Attached{Type: a.Type, Before: a.Before, Tokens: countBlock(t, &a.Block, c, provider).Tokens + c.Count(AttachmentWrap)}
}

// AttachmentTokens is what the attachments cost in all.
func (tl *Tally) AttachmentTokens() int {
	n := 0
	for _, a := range tl.Attachments {
		n += a.Tokens
	}
	return n
}

// Len, Blocks and Tool let transcript.PairsOf pair calls and results among counted messages.
func (tl *Tally) Len() int         { return len(tl.Messages) }
func (tl *Tally) Blocks(m int) int { return len(tl.Messages[m].Blocks) }
func (tl *Tally) Tool(m, b int) (transcript.Kind, string, []string) {
	bc := &tl.Messages[m].Blocks[b]
	return bc.Kind, bc.ToolID, bc.ToolIDs
}

// Framing is what the provider adds around each message and tool block. A Cline
// history sends its tool results as user text, which carries no tool_result framing.
func (tl *Tally) Framing() tokens.Framing {
	f := tokens.FramingOf(ProviderOf(tl.Format))
	if tl.Format == transcript.Cline {
		f.ToolResult = 0
	}
	return f
}

// Of counts every message of a transcript, spreading messages over the cores; previews
// asks for each message's first words and each result's characters too (ctx-count's
// report: Block.Chars is 0 without them).
func Of(t *transcript.Transcript, c tokens.Counter, previews bool) *Tally {
	return tally(t, c, countMessages(t, c, ProviderOf(t.Format), previews), nil)
}

// tally makes the tally of t from its messages counted (their lines not yet set); known
// (nil: nothing) maps the text an attachment or the tool schemas are counted from to what
// was counted of it before.
func tally(t *transcript.Transcript, c tokens.Counter, msgs []Message, known map[string]int) *Tally {
	tl := &Tally{Format: t.Format, Counter: c, Messages: msgs, Usage: t.Usage}
	for i := range t.Messages {
		tl.Messages[i].Line = lineOf(t.Records, &t.Messages[i])
	}
	for i := range t.Attachments {
		a := &t.Attachments[i]
		if n, ok := knownAttachment(t, a, known); ok {
			tl.Attachments = append(tl.Attachments, Attached{Type: a.Type, Before: a.Before, Tokens: n})
			continue
		}
		tl.Attachments = append(tl.Attachments, countAttachment(t, a, c, ProviderOf(t.Format)))
	}
	if !t.Tools.IsZero() {
		tl.HasSchema = true
		schema := t.Slice(t.Tools)
		if n, ok := known[schema]; ok {
			tl.Schema = n
		} else {
			tl.Schema = c.Count(schema)
		}
	}
	dropStaleReasoning(tl.Messages)
	tl.anchor()
	if tl.Anchor == nil && t.Prior != nil {
		pt := &Tally{Format: t.Format, Counter: c, Messages: make([]Message, len(t.Prior.Messages)), Usage: []transcript.Usage{t.Prior.Usage}}
		for i := range t.Prior.Messages {
			pt.Messages[i] = countMessage(t, &t.Prior.Messages[i], c, ProviderOf(t.Format), false)
		}
		for i := range t.Prior.Attachments {
			pt.Attachments = append(pt.Attachments, countAttachment(t, &t.Prior.Attachments[i], c, ProviderOf(t.Format)))
		}
		tl.carryHidden(pt)
	}
	return tl
}

// lineOf is the line number of a message's first JSONL record, 0 for JSON documents.
func lineOf(records []transcript.Record, m *transcript.Message) int {
	if len(m.Lines) == 0 {
		return 0
	}
	at := m.Lines[0].Start
	i := sort.Search(len(records), func(i int) bool { return records[i].Span.Start >= at })
	if i < len(records) && records[i].Span.Start == at {
		return records[i].Line
	}
	return 0
}

// dropStaleReasoning prices at nothing the reasoning items of every turn before the newest
// user message, in place (so the per-block counts a tier reads agree with the total): the
// encrypted reasoning and the summary shown of it.
//
// The model: OpenAI's Responses API keeps a reasoning item in the model's context only
// within the turn that made it (the tool-calling loop since the last user message);
// reasoning items of earlier turns are accepted in the input but dropped, not billed as
// input. Codex sends every item back, so an old rollout is mostly such base64, and
// counting it (at its decoded size, tokens.EncryptedTokens) put a real 2 MB rollout at
// 281,004 tokens where its token_count recorded 153,122. Reasoning of the current turn
// still counts at its decoded size, which is what it costs when the model reads it.
// The item's summary goes with it: the API drops the item, not its payload. (Counted as
// text, the summaries of earlier turns made the part no record holds shrink by them turn
// after turn, and a compaction carried that shortfall across, 14% of the first request
// after it in generated rollouts.)
func dropStaleReasoning(ms []Message) {
	last := -1
	for mi := len(ms) - 1; mi >= 0; mi-- {
		if ms[mi].Role == "user" {
			last = mi
			break
		}
	}
	for mi := 0; mi < last; mi++ {
		bs := ms[mi].Blocks
		item := false // a reasoning item: its encrypted payload and its summary
		for bi := range bs {
			item = item || bs[bi].Reasoning
		}
		for bi := range bs {
			if bc := &bs[bi]; item && bc.Kind == transcript.Thinking && bc.Tokens > 0 {
				bc.Stale, bc.Tokens = bc.Tokens, 0
			}
		}
	}
}

// Counts are what a tier needs of a conversation's count: the total, each message's share
// of it, and each block's tokens, as BlockTokens counts them (Blocks[m][b] for
// Messages[m].Blocks[b]).
type Counts struct {
	Total      int
	PerMessage []int
	Blocks     [][]int
	// Was is, per block, its size before any ctxkit edit: Blocks plus what its markers
	// say earlier edits took out of it. A tier that replaces a block, or a message (see
	// Removed), with a marker of its own states the size as it was, so that edits upon
	// edits still say what the content first held.
	Was [][]int
}

// Removed is, per message, what ctxkit markers in it say earlier edits took out of it:
// its blocks' Was less their tokens.
func (n Counts) Removed() []int {
	out := make([]int, len(n.Was))
	for mi := range n.Was {
		for bi, was := range n.Was[mi] {
			out[mi] += was - n.Blocks[mi][bi]
		}
	}
	return out
}

// Counts sums the tally: the total is every message's blocks and framing, the tool
// schemas, the priming of the reply and the part not in the file (as Total sums it).
func (tl *Tally) Counts() Counts {
	framing := tl.Framing()
	n := Counts{Total: tl.Total(), PerMessage: make([]int, len(tl.Messages)), Blocks: make([][]int, len(tl.Messages)), Was: make([][]int, len(tl.Messages))}
	// Every message's blocks' figures in two arrays, each message's a slice of them
	// capped at its own (an append by a tier copies it): two allocations where one a
	// message each made most of a request's objects in ctx-proxy, every tier.
	blocks := 0
	for mi := range tl.Messages {
		blocks += len(tl.Messages[mi].Blocks)
	}
	all, was := make([]int, blocks), make([]int, blocks)
	at := 0
	for mi := range tl.Messages {
		m := &tl.Messages[mi]
		n.PerMessage[mi] = m.Tokens(framing)
		end := at + len(m.Blocks)
		n.Blocks[mi], n.Was[mi] = all[at:end:end], was[at:end:end]
		at = end
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			n.Blocks[mi][bi] = b.Tokens
			n.Was[mi][bi] = max(b.Tokens, b.Was)
		}
	}
	return n
}

// Total is what the model would see if the conversation were sent now: every message's
// blocks and framing, the attachments, the tool schemas, the priming of the reply, and
// the part the file does not hold (Hidden).
func (tl *Tally) Total() int { return tl.Counted() + tl.Hidden }

// Counted is the total without Hidden: what the file holds.
func (tl *Tally) Counted() int {
	framing, n := tl.Framing(), 0
	for mi := range tl.Messages {
		n += tl.Messages[mi].Tokens(framing)
	}
	if tl.HasSchema {
		n += tl.Schema
	}
	return n + tl.AttachmentTokens() + replyPriming(len(tl.Messages))
}

// Countered is the part of Counted the counter counted: every block's text and the tool
// schemas, without framing, images and encrypted reasoning. A counter scaled by r would
// make Counted grow by (r-1)*Counter (to rounding).
func (tl *Tally) Countered() int {
	n := 0
	for mi := range tl.Messages {
		for bi := range tl.Messages[mi].Blocks {
			b := &tl.Messages[mi].Blocks[bi]
			n += b.Tokens - b.Fixed
		}
	}
	if tl.HasSchema {
		n += tl.Schema
	}
	return n
}

// replyPriming is what priming the reply costs a conversation of n messages.
func replyPriming(n int) int {
	if n > 0 {
		return tokens.ReplyPriming
	}
	return 0
}

// CountsOf counts a transcript.
func CountsOf(t *transcript.Transcript, c tokens.Counter) Counts {
	tl := Of(t, c, false)
	return tl.Counts()
}

// Total counts a transcript: what a tier measures utilization and its savings with.
func Total(t *transcript.Transcript, c tokens.Counter) int {
	return CountsOf(t, c).Total
}

// BlockTokens is what one block costs the model in a document of the given format: its
// text, a call's name, the parts of a result, an image by its pixels, encrypted reasoning
// by its size. Tiers use it to price what they remove the way ctx-count prices it.
func BlockTokens(t *transcript.Transcript, b *transcript.Block, c tokens.Counter) int {
	return countBlock(t, b, c, ProviderOf(t.Format)).Tokens
}

// ProviderOf names the provider whose billing rules apply to a format.
func ProviderOf(f transcript.Format) string { return f.Provider() }

// countMessages counts every message of a transcript, spreading messages over the cores.
func countMessages(t *transcript.Transcript, c tokens.Counter, provider string, previews bool) []Message {
	out := make([]Message, len(t.Messages))
	countInto(t, c, provider, previews, out, nil)
	return out
}

// countInto counts messages todo of a transcript (all of them when todo is nil) into out,
// spreading them over the cores.
func countInto(t *transcript.Transcript, c tokens.Counter, provider string, previews bool, out []Message, todo []int) {
	work := func(lo, hi int) {
		for k := lo; k < hi; k++ {
			mi := k
			if todo != nil {
				mi = todo[k]
			}
			out[mi] = countMessage(t, &t.Messages[mi], c, provider, previews)
		}
	}
	n := len(t.Messages)
	if todo != nil {
		n = len(todo)
	}
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	if workers <= 1 {
		work(0, n)
		return
	}
	// Interleaved chunks keep the cores busy when big results cluster in one place.
	const chunk = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	var faults transcript.Faults // the workers', rethrown here
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer transcript.GuardFaults()()
			defer faults.Keep()
			for {
				mu.Lock()
				lo := next
				next += chunk
				mu.Unlock()
				if lo >= n {
					return
				}
				work(lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
	faults.Rethrow()
}

// countMessage counts one message of t (a whole transcript, or one record of a streamed
// one). Its line is left for the caller.
func countMessage(t *transcript.Transcript, m *transcript.Message, c tokens.Counter, provider string, previews bool) Message {
	mc := Message{Role: m.Role, Blocks: make([]Block, len(m.Blocks))}
	if previews {
		mc.Preview = preview(t, m)
	}
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		// (a result's characters only for the report, which shows the largest result:
		// reading them cost a fifth of ctx-budget's CPU on an Anthropic request)
		bc := countSized(t, b, c, provider, previews && b.Kind == transcript.ToolResult)
		bc.ToolName, bc.ToolID, bc.ToolIDs = b.ToolName, b.ToolID, b.ToolIDs
		mc.Blocks[bi] = bc
	}
	return mc
}

func countBlock(t *transcript.Transcript, b *transcript.Block, c tokens.Counter, provider string) Block {
	// Only a result's size is reported (the largest result), so only results and their
	// parts pay for counting characters.
	return countSized(t, b, c, provider, b.Kind == transcript.ToolResult)
}

// RuneCount is utf8.RuneCountInString(s), eight bytes at a time where they are ASCII:
// results are mostly ASCII, and counting their characters rune by rune cost a sixth of
// what counting their tokens exactly does.
func RuneCount(s string) int {
	n, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&0x8080808080808080 == 0 {
				n += 8
				i += 8
				continue
			}
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		n++
	}
	return n
}

func countSized(t *transcript.Transcript, b *transcript.Block, c tokens.Counter, provider string, sized bool) Block {
	bc := Block{Kind: b.Kind}
	switch {
	case b.Kind == transcript.Image:
		bc.Tokens = imageTokens(t, b.Image, provider)
		bc.Fixed = bc.Tokens
		return bc
	case b.Encrypted > 0:
		bc.Tokens = tokens.EncryptedTokens(b.Encrypted)
		bc.Fixed = bc.Tokens
		bc.Reasoning = b.Type == "encrypted_content"
		return bc
	case b.Signature > 0 && t.BodyLen(b) == 0:
		// Thinking stored without its text: the model still reads it (tokens/signature.go).
		bc.Tokens = signatureTokens(c, b.Signature)
		bc.Fixed = bc.Tokens
		return bc
	}
	lit, byLiteral := c.(tokens.ByLiteral)
	if lc, ok := c.(tokens.ByLength); ok || byLiteral {
		// The count needs the length alone, or reads the literal as written: the text is
		// never decoded.
		if sized {
			bc.Bytes, bc.Chars = t.BodySize(b)
		} else {
			bc.Bytes = t.BodyLen(b)
		}
		switch {
		case ok:
			bc.Tokens = lc.CountLength(bc.Bytes)
		case b.BodyJSON || b.Body.IsZero():
			bc.Tokens = c.Count(t.BodyText(b))
		default:
			bc.Tokens = lit.CountLiteral(t.Slice(b.Body))
		}
	} else {
		// Decoded into scratch memory: the text is needed only to be counted, and a copy of
		// every text of a document was as much garbage as the document.
		sc := decodeScratch.Get().(*[]byte)
		text, grown := t.BodyTextInto(*sc, b)
		bc.Tokens = c.Count(text)
		bc.Bytes = len(text)
		if sized {
			bc.Chars = RuneCount(text)
		}
		if cap(grown) <= maxDecodeScratch {
			*sc = grown
		}
		decodeScratch.Put(sc)
	}
	removed := 0
	if !b.Body.IsZero() {
		// What a ctxkit marker in the text says the text held (see Tally.anchor).
		was, messages := markerWas(t.Slice(b.Body))
		if messages {
			was -= tokens.MessageOverhead(provider)
		}
		removed = max(0, was-bc.Tokens)
	}
	if b.Kind == transcript.ToolCall {
		bc.Tokens += c.Count(b.ToolName)
	}
	for pi := range b.Parts {
		pc := countSized(t, &b.Parts[pi], c, provider, sized)
		bc.Tokens += pc.Tokens
		bc.Fixed += pc.Fixed
		bc.Chars += pc.Chars
		bc.Bytes += pc.Bytes
		removed += max(0, pc.Was-pc.Tokens)
	}
	if removed > 0 {
		bc.Was = bc.Tokens + removed
	}
	return bc
}

// signatureTokens prices thinking stored empty from its signature's size, at the rate of
// the counter's model family (the Claude estimate knows it), else the main family's.
func signatureTokens(c tokens.Counter, n int) int {
	if p, ok := c.(tokens.SignaturePricer); ok {
		return p.SignatureTokens(n)
	}
	return tokens.SignatureTokens(tokens.SignatureRate(""), n)
}

func imageTokens(t *transcript.Transcript, img *transcript.ImageRef, provider string) int {
	var w, h int
	if img != nil && !img.Data.IsZero() {
		w, h, _ = tokens.ImageDimensions(t.BodyText(&transcript.Block{Body: img.Data}))
	}
	if provider == "anthropic" {
		return tokens.AnthropicImageTokens(w, h)
	}
	detail := ""
	if img != nil {
		detail = img.Detail
	}
	return tokens.OpenAIImageTokens(w, h, detail)
}

// Ratio is a/b, 0 when b is not positive: a utilization with no window is none.
func Ratio(a, b int) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// preview is the first words of a message, on one line.
func preview(t *transcript.Transcript, m *transcript.Message) string {
	const max = previewMax
	for i := range m.Blocks {
		b := &m.Blocks[i]
		var s string
		switch b.Kind {
		case transcript.Text, transcript.Thinking:
			s = t.BodyTextPrefix(b, 4*max)
		case transcript.ToolCall:
			s = b.ToolName + " " + human.Clip(t.BodyTextPrefix(b, 2*max), 2*max)
		case transcript.ToolResult:
			s = human.Clip(t.BodyTextPrefix(b, 4*max), 4*max)
			for pi := 0; s == "" && pi < len(b.Parts); pi++ {
				s = partPreview(t, &b.Parts[pi])
			}
		case transcript.Image:
			s = "[image]"
		}
		if s = previewLine(s); s != "" {
			return s
		}
	}
	return ""
}

// previewMax is the length in bytes of a message's preview, less its ellipsis.
const previewMax = 80

// previewLine is human.Clip(human.OneLine(human.Clip(s, 4*previewMax)), previewMax), the
// preview's line from a block's text, built in place: the three calls allocated a list of
// the words of up to 320 bytes, their join and the clipped copies, for every message of
// ctx-count's report (8% of its CPU on the 100 MB OpenAI document of scripts/bench.sh).
// It joins the words of s, cut as Clip cuts it, with one space, and stops once it has
// more than previewMax bytes of them, which is all the last Clip reads.
func previewLine(s string) string {
	var buf [previewMax + 16]byte
	out := buf[:0]
	cut := len(s) > 4*previewMax
	if cut {
		n := 4 * previewMax
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	inWord := false
	add := func(seg string) bool {
		for i := 0; i < len(seg); {
			r, size := rune(seg[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(seg[i:])
			}
			if unicode.IsSpace(r) {
				inWord = false
			} else {
				if !inWord && len(out) > 0 {
					out = append(out, ' ')
				}
				inWord = true
				out = append(out, seg[i:i+size]...)
				if len(out) > previewMax {
					return false
				}
			}
			i += size
		}
		return true
	}
	if add(s) && cut {
		add("…")
	}
	if len(out) <= previewMax {
		return string(out)
	}
	n := previewMax
	for n > 0 && !utf8.RuneStart(out[n]) {
		n--
	}
	return string(append(out[:n], "…"...))
}

func partPreview(t *transcript.Transcript, b *transcript.Block) string {
	if b.Kind == transcript.Image {
		return "[image]"
	}
	return human.OneLine(human.Clip(t.BodyTextPrefix(b, 320), 320))
}

// PerMessage counts a transcript and returns its total and each message's share: what a
// tier that drops or replaces whole messages decides on.
func PerMessage(t *transcript.Transcript, c tokens.Counter) (total int, per []int) {
	n := CountsOf(t, c)
	return n.Total, n.PerMessage
}

// decodeScratch holds the buffers countSized decodes texts into. A counter keeps no
// reference to the text it counts (its caches copy what they keep, or a digest).
var decodeScratch = sync.Pool{New: func() any { return new([]byte) }}

// maxDecodeScratch: a buffer grown past this by one huge text is not kept.
const maxDecodeScratch = 4 << 20
