// Package count owns ctx-count: it measures where a conversation's tokens go (by message,
// role, block kind and tool), how full the model's window is, and which tiers of the
// pipeline would act; it renders that as a JSON report or a picture for a terminal, and
// compares two versions of a conversation.
//
// Measure and Compare are pure; Main is the command-line adapter.
package count

import (
	"runtime"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// MessageCount is one message's share of the total.
type MessageCount struct {
	Index   int      `json:"index"`
	Role    string   `json:"role"`
	Kinds   []string `json:"kinds"`
	Tools   []string `json:"tools,omitempty"`
	Tokens  int      `json:"tokens"`
	Preview string   `json:"preview"`
	// Line is the first JSONL line of the message (0 for JSON documents).
	Line int `json:"line,omitempty"`
}

// ToolCount is what one tool costs: its calls and its results.
type ToolCount struct {
	Name          string `json:"name"`
	Calls         int    `json:"calls"`
	CallTokens    int    `json:"call_tokens"`
	ResultTokens  int    `json:"result_tokens"`
	Tokens        int    `json:"tokens"`
	LargestResult int    `json:"largest_result_tokens"`
}

// Anchor reports a transcript's own usage figure and what came after it.
type Anchor struct {
	// Recorded is the last real context size the agent recorded, after message RecordedAt.
	Recorded   int    `json:"recorded"`
	RecordedAt int    `json:"recorded_at_message"`
	Source     string `json:"source"`
	// EstimatedAfter is our count of the messages after that point.
	EstimatedAfter int     `json:"estimated_after"`
	Tokens         int     `json:"tokens"`
	Utilization    float64 `json:"utilization"`
	CacheRead      int     `json:"cache_read"`
	CacheCreation  int     `json:"cache_creation"`
}

// Tier says whether one tool of the pipeline would act on the document as it is.
type Tier struct {
	Tool   string `json:"tool"`
	Acts   bool   `json:"acts"`
	Reason string `json:"reason"`
}

// Report is ctx-count's measurement of one document. Its JSON form is documented in
// ctx-count(1); keep the two in step.
type Report struct {
	File            string         `json:"file"`
	Format          string         `json:"format"`
	Tokenizer       string         `json:"tokenizer"`
	Model           string         `json:"model,omitempty"`
	Tokens          int            `json:"tokens"`
	Window          int            `json:"window"`
	Reserve         int            `json:"reserve"`
	EffectiveWindow int            `json:"effective_window"`
	Utilization     float64        `json:"utilization"`
	Anchored        *Anchor        `json:"anchored,omitempty"`
	ByRole          map[string]int `json:"by_role"`
	ByKind          map[string]int `json:"by_kind"`
	ByTool          []ToolCount    `json:"by_tool"`
	// Categories split the total the way the window picture does.
	Categories Categories     `json:"categories"`
	Tiers      []Tier         `json:"tiers"`
	Largest    LargestResult  `json:"largest_result"`
	Messages   []MessageCount `json:"messages"`
}

// Categories is the split of the window the terminal picture draws.
type Categories struct {
	System      int `json:"system"`
	Tools       int `json:"tools"`
	User        int `json:"user"`
	Assistant   int `json:"assistant"`
	ToolResults int `json:"tool_results"`
}

// LargestResult is the biggest tool result, the one the cheap tiers cut first.
type LargestResult struct {
	Message int    `json:"message"`
	Tool    string `json:"tool,omitempty"`
	Chars   int    `json:"chars"`
	Bytes   int    `json:"bytes"`
	Tokens  int    `json:"tokens"`
}

// Options for Measure.
type Options struct {
	File    string
	Counter tokens.Counter
	Budget  tokens.Budget
	// NoPreviews leaves the messages' previews empty: a tier that only needs the counts
	// does not pay for decoding every message's text to show its start.
	NoPreviews bool
}

// blockCount is the count of one block: all the report needs of it.
type blockCount struct {
	kind   transcript.Kind
	tokens int
	chars  int // decoded characters of a result's text, for the budget tiers
	bytes  int // and its size in bytes, for ctx-persist
	// reasoning marks an OpenAI reasoning item's encrypted payload, which the API drops
	// once a newer user message follows it (see dropStaleReasoning).
	reasoning bool
	toolName  string
	toolID    string
	toolIDs   []string
}

// counted is one message counted, without its text.
type counted struct {
	role    string
	blocks  []blockCount
	preview string
	line    int // first JSONL line, 0 for JSON documents
}

// tally is a conversation counted: what a Report is summarised from. Measure makes one from
// a whole transcript; a streamed JSONL document is tallied record by record (stream.go).
type tally struct {
	format    transcript.Format
	messages  []counted
	hasSchema bool // the request declares tool schemas, of schemaTokens tokens
	schema    int
	usage     []transcript.Usage
}

// tallyBlocks lets transcript.PairsOf pair calls and results among counted messages.
type tallyBlocks []counted

func (s tallyBlocks) Len() int         { return len(s) }
func (s tallyBlocks) Blocks(m int) int { return len(s[m].blocks) }
func (s tallyBlocks) Tool(m, b int) (transcript.Kind, string, []string) {
	bc := &s[m].blocks[b]
	return bc.kind, bc.toolID, bc.toolIDs
}

// Measure counts a transcript.
func Measure(t *transcript.Transcript, o Options) Report {
	return summarise(tallyOf(t, o.Counter, !o.NoPreviews), o)
}

// tallyOf counts every message of a transcript, spreading messages over the cores.
func tallyOf(t *transcript.Transcript, c tokens.Counter, previews bool) tally {
	tl := tally{format: t.Format, messages: countMessages(t, c, providerOf(t.Format), previews), usage: t.Usage}
	for i := range t.Messages {
		tl.messages[i].line = lineOf(t.Records, &t.Messages[i])
	}
	if !t.Tools.IsZero() {
		tl.hasSchema, tl.schema = true, c.Count(t.Slice(t.Tools))
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

// summarise makes the report of a counted conversation.
func summarise(tl tally, o Options) Report {
	r := Report{
		File:            o.File,
		Format:          string(tl.format),
		Tokenizer:       o.Counter.Name(),
		Model:           o.Budget.Model,
		Window:          o.Budget.Window,
		Reserve:         o.Budget.Reserve,
		EffectiveWindow: o.Budget.Effective,
		ByRole:          map[string]int{},
		ByKind:          map[string]int{},
		Messages:        make([]MessageCount, len(tl.messages)),
	}
	provider := providerOf(tl.format)
	dropStaleReasoning(tl.messages)

	// Which tool each result answers, for results that do not carry the name themselves.
	resultTool := map[transcript.Ref]string{}
	for _, p := range transcript.PairsOf(tallyBlocks(tl.messages)) {
		if p.Call != transcript.None && p.Result != transcript.None {
			resultTool[p.Result] = tl.messages[p.Call.Message].blocks[p.Call.Block].toolName
		}
	}
	tools := map[string]*ToolCount{}
	toolOf := func(name string) *ToolCount {
		if name == "" {
			name = "(unknown)"
		}
		tc := tools[name]
		if tc == nil {
			tc = &ToolCount{Name: name}
			tools[name] = tc
		}
		return tc
	}

	overhead := tokens.MessageOverhead(provider)
	for mi := range tl.messages {
		m := &tl.messages[mi]
		mc := MessageCount{Index: mi, Role: m.role, Tokens: overhead, Preview: m.preview, Line: m.line}
		r.ByKind["framing"] += overhead
		seen := map[string]bool{}
		for bi := range m.blocks {
			bc := &m.blocks[bi]
			kind := bc.kind.String()
			mc.Tokens += bc.tokens
			r.ByKind[kind] += bc.tokens
			if !seen[kind] {
				seen[kind] = true
				mc.Kinds = append(mc.Kinds, kind)
			}
			switch bc.kind {
			case transcript.ToolCall:
				tc := toolOf(bc.toolName)
				tc.Calls++
				tc.CallTokens += bc.tokens
				mc.Tools = appendUnique(mc.Tools, tc.Name)
				r.Categories.Assistant += bc.tokens
			case transcript.ToolResult:
				name := bc.toolName
				if n, ok := resultTool[transcript.Ref{Message: mi, Block: bi}]; ok {
					name = n
				}
				tc := toolOf(name)
				tc.ResultTokens += bc.tokens
				tc.LargestResult = max(tc.LargestResult, bc.tokens)
				mc.Tools = appendUnique(mc.Tools, tc.Name)
				r.Categories.ToolResults += bc.tokens
				if bc.chars > r.Largest.Chars {
					r.Largest = LargestResult{Message: mi, Tool: tc.Name, Chars: bc.chars, Bytes: bc.bytes, Tokens: bc.tokens}
				}
			default:
				switch m.role {
				case "system", "developer":
					r.Categories.System += bc.tokens
				case "assistant":
					r.Categories.Assistant += bc.tokens
				default:
					r.Categories.User += bc.tokens
				}
			}
		}
		// Framing goes with the message's role.
		switch m.role {
		case "system", "developer":
			r.Categories.System += overhead
		case "assistant":
			r.Categories.Assistant += overhead
		default:
			r.Categories.User += overhead
		}
		r.ByRole[roleKey(m.role)] += mc.Tokens
		r.Tokens += mc.Tokens
		r.Messages[mi] = mc
	}
	if tl.hasSchema {
		r.ByKind["tools"] += tl.schema
		r.Categories.Tools += tl.schema
		r.Tokens += tl.schema
	}
	if len(tl.messages) > 0 {
		r.Tokens += tokens.ReplyPriming
		r.ByKind["framing"] += tokens.ReplyPriming
		r.Categories.Assistant += tokens.ReplyPriming
	}
	for _, tc := range tools {
		tc.Tokens = tc.CallTokens + tc.ResultTokens
		r.ByTool = append(r.ByTool, *tc)
	}
	sort.Slice(r.ByTool, func(i, j int) bool {
		if r.ByTool[i].Tokens != r.ByTool[j].Tokens {
			return r.ByTool[i].Tokens > r.ByTool[j].Tokens
		}
		return r.ByTool[i].Name < r.ByTool[j].Name
	})
	if r.ByTool == nil {
		r.ByTool = []ToolCount{}
	}
	r.Utilization = ratio(r.Tokens, r.EffectiveWindow)
	r.Anchored = anchor(tl, &r)
	r.Tiers = tiers(&r)
	return r
}

// dropStaleReasoning prices at nothing the encrypted reasoning of every turn before the
// newest user message, in place (so the per-block counts a tier reads agree with the
// total).
//
// The model: OpenAI's Responses API keeps a reasoning item in the model's context only
// within the turn that made it (the tool-calling loop since the last user message);
// reasoning items of earlier turns are accepted in the input but dropped, not billed as
// input. Codex sends every item back, so an old rollout is mostly such base64, and
// counting it (at its decoded size, tokens.EncryptedTokens) put a real 2 MB rollout at
// 281,004 tokens where its token_count recorded 153,122. Reasoning of the current turn
// still counts at its decoded size, which is what it costs when the model reads it.
// The visible summary text of every reasoning item is still counted as text: whether
// the API drops it with the item is not documented, so the figure errs high by at most
// the summaries, a few hundred tokens a turn.
func dropStaleReasoning(ms []counted) {
	last := -1
	for mi := len(ms) - 1; mi >= 0; mi-- {
		if ms[mi].role == "user" {
			last = mi
			break
		}
	}
	for mi := 0; mi < last; mi++ {
		for bi := range ms[mi].blocks {
			if bc := &ms[mi].blocks[bi]; bc.reasoning {
				bc.tokens = 0
			}
		}
	}
}

// Total counts a transcript the way Measure does, without the breakdown: what a tier
// uses to measure utilization, and its savings.
func Total(t *transcript.Transcript, c tokens.Counter) int {
	return Measure(t, Options{Counter: c, NoPreviews: true}).Tokens
}

// Counts are what a tier needs of a conversation's count: the total, as Total counts it,
// and each block's tokens, as BlockTokens counts them (Blocks[m][b] for Messages[m].Blocks[b]).
type Counts struct {
	Total  int
	Blocks [][]int
	// PerMessage is each message's share of Total, as PerMessage gives it.
	PerMessage []int
}

// CountsOf counts a transcript once for both figures.
func CountsOf(t *transcript.Transcript, c tokens.Counter) Counts {
	return countsOf(tallyOf(t, c, false), c)
}

func countsOf(tl tally, c tokens.Counter) Counts {
	r := summarise(tl, Options{Counter: c})
	n := Counts{Total: r.Tokens, Blocks: make([][]int, len(tl.messages)), PerMessage: make([]int, len(r.Messages))}
	for mi := range r.Messages {
		n.PerMessage[mi] = r.Messages[mi].Tokens
	}
	for mi := range tl.messages {
		bs := tl.messages[mi].blocks
		n.Blocks[mi] = make([]int, len(bs))
		for bi := range bs {
			n.Blocks[mi][bi] = bs[bi].tokens
		}
	}
	return n
}

// PerMessage counts a transcript as Total does and also returns each message's share
// (index-aligned with its messages): what a tier that drops or replaces whole messages
// needs.
func PerMessage(t *transcript.Transcript, c tokens.Counter) (total int, per []int) {
	r := Measure(t, Options{Counter: c, NoPreviews: true})
	per = make([]int, len(r.Messages))
	for i, m := range r.Messages {
		per[i] = m.Tokens
	}
	return r.Tokens, per
}

// BlockTokens is what one block costs the model in a document of the given format: its
// text, a call's name, the parts of a result, an image by its pixels, encrypted reasoning
// by its size. Tiers use it to price what they remove the way ctx-count prices it.
func BlockTokens(t *transcript.Transcript, b *transcript.Block, c tokens.Counter) int {
	return countBlock(t, b, c, providerOf(t.Format)).tokens
}

// providerOf names the provider whose billing rules apply to a format.
func providerOf(f transcript.Format) string {
	if f.MessagesAPI() || f == transcript.ClaudeCode {
		return "anthropic"
	}
	return "openai"
}

// countMessages counts every message of a transcript, spreading messages over the cores.
func countMessages(t *transcript.Transcript, c tokens.Counter, provider string, previews bool) []counted {
	out := make([]counted, len(t.Messages))
	work := func(lo, hi int) {
		for mi := lo; mi < hi; mi++ {
			out[mi] = countMessage(t, &t.Messages[mi], c, provider, previews)
		}
	}
	n := len(t.Messages)
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	if workers <= 1 {
		work(0, n)
		return out
	}
	// Interleaved chunks keep the cores busy when big results cluster in one place.
	const chunk = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
	return out
}

// countMessage counts one message of t (a whole transcript, or one record of a streamed
// one). Its line is left for the caller.
func countMessage(t *transcript.Transcript, m *transcript.Message, c tokens.Counter, provider string, previews bool) counted {
	mc := counted{role: m.Role, blocks: make([]blockCount, len(m.Blocks))}
	if previews {
		mc.preview = preview(t, m)
	}
	for bi := range m.Blocks {
		b := &m.Blocks[bi]
		bc := countBlock(t, b, c, provider)
		bc.toolName, bc.toolID, bc.toolIDs = b.ToolName, b.ToolID, b.ToolIDs
		mc.blocks[bi] = bc
	}
	return mc
}

func countBlock(t *transcript.Transcript, b *transcript.Block, c tokens.Counter, provider string) blockCount {
	// Only a result's size is reported (the largest result), so only results and their
	// parts pay for counting characters.
	return countSized(t, b, c, provider, b.Kind == transcript.ToolResult)
}

func countSized(t *transcript.Transcript, b *transcript.Block, c tokens.Counter, provider string, sized bool) blockCount {
	bc := blockCount{kind: b.Kind}
	switch {
	case b.Kind == transcript.Image:
		bc.tokens = imageTokens(t, b.Image, provider)
		return bc
	case b.Encrypted > 0:
		bc.tokens = tokens.EncryptedTokens(b.Encrypted)
		bc.reasoning = b.Type == "encrypted_content"
		return bc
	}
	if lc, ok := c.(tokens.ByLength); ok {
		// The count needs the length alone: the text is never decoded.
		if sized {
			bc.bytes, bc.chars = t.BodySize(b)
		} else {
			bc.bytes = t.BodyLen(b)
		}
		bc.tokens = lc.CountLength(bc.bytes)
	} else {
		text := t.BodyText(b)
		bc.tokens = c.Count(text)
		bc.bytes = len(text)
		if sized {
			bc.chars = utf8.RuneCountInString(text)
		}
	}
	if b.Kind == transcript.ToolCall {
		bc.tokens += c.Count(b.ToolName)
	}
	for pi := range b.Parts {
		pc := countSized(t, &b.Parts[pi], c, provider, sized)
		bc.tokens += pc.tokens
		bc.chars += pc.chars
		bc.bytes += pc.bytes
	}
	return bc
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

// anchor relates the count to the transcript's own last usage figure.
func anchor(tl tally, r *Report) *Anchor {
	u, ok := transcript.LastUsage(tl.usage)
	if !ok {
		return nil
	}
	a := &Anchor{Recorded: u.Context(), RecordedAt: u.After, CacheRead: u.CacheRead, CacheCreation: u.CacheCreation}
	switch tl.format {
	case transcript.ClaudeCode:
		a.Source = "message.usage"
	case transcript.Codex:
		a.Source = "token_count"
	}
	for i := u.After + 1; i < len(r.Messages); i++ {
		a.EstimatedAfter += r.Messages[i].Tokens
	}
	a.Tokens = a.Recorded + a.EstimatedAfter
	a.Utilization = ratio(a.Tokens, r.EffectiveWindow)
	return a
}

func ratio(a, b int) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func roleKey(role string) string {
	if role == "" {
		return "other"
	}
	return role
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// preview is the first words of a message, on one line.
func preview(t *transcript.Transcript, m *transcript.Message) string {
	const max = 80
	for i := range m.Blocks {
		b := &m.Blocks[i]
		var s string
		switch b.Kind {
		case transcript.Text, transcript.Thinking:
			s = t.BodyText(b)
		case transcript.ToolCall:
			s = b.ToolName + " " + clip(t.BodyText(b), 2*max)
		case transcript.ToolResult:
			s = clip(t.BodyText(b), 4*max)
			for pi := 0; s == "" && pi < len(b.Parts); pi++ {
				s = partPreview(t, &b.Parts[pi])
			}
		case transcript.Image:
			s = "[image]"
		}
		if s = oneLine(clip(s, 4*max)); s != "" {
			return clip(s, max)
		}
	}
	return ""
}

func partPreview(t *transcript.Transcript, b *transcript.Block) string {
	if b.Kind == transcript.Image {
		return "[image]"
	}
	return oneLine(clip(t.BodyText(b), 320))
}

// clip shortens s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}
