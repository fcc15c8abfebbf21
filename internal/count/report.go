package count

import (
	"sort"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
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

// Anchor is the evidence behind the hidden part: the newest usage figure the agent
// recorded, and how the headline is made from it.
type Anchor struct {
	// Recorded is the context the agent recorded at its newest request, up to and with
	// message RecordedAt (the prompt, plus the reply at least as its content counts).
	Recorded   int    `json:"recorded"`
	RecordedAt int    `json:"recorded_at_message"`
	Source     string `json:"source"`
	// CountedBefore is our count of messages 0..RecordedAt as they are now; Removed what
	// ctxkit's markers among them say edits took out since the figure was recorded.
	CountedBefore int `json:"counted_before"`
	Removed       int `json:"removed"`
	// StaleReasoning is what the encrypted reasoning the figure's request sent costs,
	// where a newer user message has since made the API drop it: the figure holds it, the
	// headline does not.
	StaleReasoning int `json:"stale_reasoning"`
	// EstimatedAfter is our count of the messages after RecordedAt.
	EstimatedAfter int     `json:"estimated_after"`
	Tokens         int     `json:"tokens"`
	Utilization    float64 `json:"utilization"`
	CacheRead      int     `json:"cache_read"`
	CacheCreation  int     `json:"cache_creation"`
}

// Hidden is the part of what the model sees that no record of the file holds.
type Hidden struct {
	Tokens int    `json:"tokens"`
	Source string `json:"source"` // "recorded usage" or "--overhead"
	// AcrossCompaction says the figure it was learned from was recorded before the
	// newest compaction: the conversation since records none yet.
	AcrossCompaction bool `json:"across_compaction,omitempty"`
}

// Tier says whether one tool of the pipeline would act on the document as it is.
type Tier struct {
	Tool   string `json:"tool"`
	Acts   bool   `json:"acts"`
	Reason string `json:"reason"`
	// With --savings, from a run of the tier on the document: the tokens it would save,
	// the tokens of the prompt from its first change on (written to the cache again), and
	// whether the saving pays that back within RepayRequests requests.
	Saves    *int  `json:"saves,omitempty"`
	Uncached *int  `json:"uncached,omitempty"`
	Repays   *bool `json:"repays,omitempty"`
}

// Report is ctx-count's measurement of one document. Its JSON form is documented in
// ctx-count(1); keep the two in step.
type Report struct {
	File            string  `json:"file"`
	Format          string  `json:"format"`
	Tokenizer       string  `json:"tokenizer"`
	Model           string  `json:"model,omitempty"`
	Tokens          int     `json:"tokens"`
	Window          int     `json:"window"`
	Reserve         int     `json:"reserve"`
	EffectiveWindow int     `json:"effective_window"`
	Utilization     float64 `json:"utilization"`
	// Counted is what the file holds; Tokens adds Hidden to it.
	Counted int `json:"counted"`
	// API is the count_tokens figure the count was calibrated on (--tokenizer api).
	API      *cli.APICount  `json:"api,omitempty"`
	Hidden   *Hidden        `json:"hidden,omitempty"`
	Anchored *Anchor        `json:"anchored,omitempty"`
	ByRole   map[string]int `json:"by_role"`
	ByKind   map[string]int `json:"by_kind"`
	ByTool   []ToolCount    `json:"by_tool"`
	// Categories split the total the way the window picture does.
	Categories Categories     `json:"categories"`
	Tiers      []Tier         `json:"tiers"`
	Largest    LargestResult  `json:"largest_result"`
	Messages   []MessageCount `json:"messages"`
	// ByFile is what the results of reads (and edits, writes) of each file cost, most
	// expensive first; ByServer the MCP tools grouped by server; Trend the recorded
	// usage per request, where the document records it.
	ByFile   []FileCount   `json:"by_file"`
	ByServer []ServerCount `json:"by_mcp_server"`
	Trend    *Trend        `json:"trend,omitempty"`
	// Session is what the session's log records of its requests (the main log alone)
	// and, for a Claude Code session read from a file, its subagents' (SessionFigures).
	Session *SessionFigures `json:"session,omitempty"`
	// SchemaVersion is the version of schema/count-report.json the report follows
	// (SchemaVersion, the constant). It comes last so that lines matched by their start
	// ({"file":...) keep matching.
	SchemaVersion int `json:"schema_version"`
}

// SchemaVersion is the report's schema_version, and that of the --vs and --text --json
// lines (schema/count-comparison.json, schema/count-text.json): raised when a field
// changes meaning or goes, not when one is added (a reader ignores fields it does not
// know).
const SchemaVersion = 1

// Categories is the split of the window the terminal picture draws.
type Categories struct {
	// Hidden is what the model sees that no record of the file holds: the system prompt
	// and tool schemas an agent sends, reminders it does not log (Report.Hidden).
	Hidden      int `json:"hidden"`
	System      int `json:"system"`
	Tools       int `json:"tools"`
	User        int `json:"user"`
	Assistant   int `json:"assistant"`
	ToolResults int `json:"tool_results"`
	// Thinking is the assistant's thinking and reasoning blocks (recorded with their
	// text, or priced from their signature or encrypted payload), out of Assistant;
	// Attachments what Claude Code's attachment records put into the prompt.
	Thinking    int `json:"thinking"`
	Attachments int `json:"attachments"`
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
	Window  tokens.Budget
	API     *cli.APICount // the count_tokens figure, under --tokenizer api
	// Notes are what the calls were about (Notes.Add on the document), for ByFile and the
	// compactions; Summaries the messages that stand for compacted history.
	Notes     *Notes
	Summaries []int
}

// Measure counts a transcript and reports on it.
func Measure(t *transcript.Transcript, o Options) Report {
	if o.Notes == nil {
		o.Notes = &Notes{}
		o.Notes.Add(t, o.Counter)
		o.Summaries = summaries(t)
	}
	return summarise(measure.Of(t, o.Counter, true), o)
}

// summaries are the messages of t that stand for compacted history.
func summaries(t *transcript.Transcript) []int {
	var out []int
	for i := range t.Messages {
		if t.Messages[i].Summary {
			out = append(out, i)
		}
	}
	return out
}

// summarise makes the report of a counted conversation.
func summarise(tl *measure.Tally, o Options) Report {
	r := Report{
		SchemaVersion:   SchemaVersion,
		File:            o.File,
		Format:          string(tl.Format),
		Tokenizer:       o.Counter.Name(),
		Model:           o.Window.Model,
		Window:          o.Window.Window,
		Reserve:         o.Window.Reserve,
		EffectiveWindow: o.Window.Effective,
		API:             o.API,
		ByRole:          map[string]int{},
		ByKind:          map[string]int{},
		Messages:        make([]MessageCount, len(tl.Messages)),
	}

	// Which tool each result answers, for results that do not carry the name themselves.
	resultTool := map[transcript.Ref]string{}
	resultCall := map[transcript.Ref]transcript.Ref{}
	for _, p := range transcript.PairsOf(tl) {
		if p.Call != transcript.None && p.Result != transcript.None {
			resultTool[p.Result] = tl.Messages[p.Call.Message].Blocks[p.Call.Block].ToolName
			resultCall[p.Result] = p.Call
		}
	}
	paths := o.pathsOf(tl)
	files := map[string]*FileCount{}
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

	framing := tl.Framing()
	for mi := range tl.Messages {
		m := &tl.Messages[mi]
		mc := MessageCount{Index: mi, Role: m.Role, Tokens: m.Framing(framing), Preview: m.Preview, Line: m.Line}
		r.ByKind["framing"] += mc.Tokens
		seen := map[string]bool{}
		for bi := range m.Blocks {
			bc := &m.Blocks[bi]
			kind := bc.Kind.String()
			mc.Tokens += bc.Tokens
			r.ByKind[kind] += bc.Tokens
			if !seen[kind] {
				seen[kind] = true
				mc.Kinds = append(mc.Kinds, kind)
			}
			switch bc.Kind {
			case transcript.ToolCall:
				tc := toolOf(bc.ToolName)
				tc.Calls++
				tc.CallTokens += bc.Tokens
				mc.Tools = appendUnique(mc.Tools, tc.Name)
				r.Categories.Assistant += bc.Tokens + framing.ToolCall
			case transcript.ToolResult:
				name := bc.ToolName
				if n, ok := resultTool[transcript.Ref{Message: mi, Block: bi}]; ok {
					name = n
				}
				tc := toolOf(name)
				path := o.Notes.labelled[bc.ToolID]
				if call, ok := resultCall[transcript.Ref{Message: mi, Block: bi}]; ok && paths[call] != "" {
					path = paths[call]
				}
				if path != "" {
					fc := files[path]
					if fc == nil {
						fc = &FileCount{Path: path}
						files[path] = fc
					}
					fc.Reads++
					fc.Tokens += bc.Tokens + framing.ToolResult
				}
				tc.ResultTokens += bc.Tokens
				tc.LargestResult = max(tc.LargestResult, bc.Tokens)
				mc.Tools = appendUnique(mc.Tools, tc.Name)
				r.Categories.ToolResults += bc.Tokens + framing.ToolResult
				if bc.Chars > r.Largest.Chars {
					r.Largest = LargestResult{Message: mi, Tool: tc.Name, Chars: bc.Chars, Bytes: bc.Bytes, Tokens: bc.Tokens}
				}
			case transcript.Thinking:
				r.Categories.Thinking += bc.Tokens
			default:
				switch m.Role {
				case "system", "developer":
					r.Categories.System += bc.Tokens
				case "assistant":
					r.Categories.Assistant += bc.Tokens
				default:
					r.Categories.User += bc.Tokens
				}
			}
		}
		// A tool block's framing went with its kind; the message's goes with its role.
		switch m.Role {
		case "system", "developer":
			r.Categories.System += framing.Message
		case "assistant":
			r.Categories.Assistant += framing.Message
		default:
			r.Categories.User += framing.Message
		}
		r.ByRole[roleKey(m.Role)] += mc.Tokens
		r.Tokens += mc.Tokens
		r.Messages[mi] = mc
	}
	for _, a := range tl.Attachments {
		r.ByKind["attachment"] += a.Tokens
		r.Categories.Attachments += a.Tokens
		r.Tokens += a.Tokens
	}
	if tl.HasSchema {
		r.ByKind["tools"] += tl.Schema
		r.Categories.Tools += tl.Schema
		r.Tokens += tl.Schema
	}
	if len(tl.Messages) > 0 {
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
	r.ByFile = sortFiles(files)
	r.ByServer = byServer(r.ByTool, o.Notes.defined)
	r.Counted = r.Tokens
	if tl.Hidden > 0 {
		r.Hidden = &Hidden{Tokens: tl.Hidden, Source: tl.HiddenFrom, AcrossCompaction: tl.HiddenAcross}
		r.Categories.Hidden = tl.Hidden
		r.Tokens += tl.Hidden
	}
	r.Utilization = measure.Ratio(r.Tokens, r.EffectiveWindow)
	r.Anchored = anchor(tl, &r)
	if r.Anchored != nil || o.Notes.compactions > 0 || len(o.Summaries) > 0 {
		source := "recorded usage"
		if r.Anchored != nil {
			source = r.Anchored.Source
		}
		r.Trend = trend(tl.Usage, source, o.Summaries, o.Notes)
	}
	r.Tiers = tierReport(&r)
	return r
}

// pathsOf finds the file each call of the tally read or wrote, from the notes taken of the
// document: by tool id, the n-th call with an id in the tally being the n-th from the end
// of the notes' (a compaction leaves out calls the notes saw).
func (o *Options) pathsOf(tl *measure.Tally) map[transcript.Ref]string {
	if o.Notes == nil {
		o.Notes = &Notes{}
	}
	seen := map[string]int{}
	var calls []transcript.Ref
	for mi := range tl.Messages {
		for bi, b := range tl.Messages[mi].Blocks {
			if b.Kind == transcript.ToolCall {
				seen[b.ToolID]++
				calls = append(calls, transcript.Ref{Message: mi, Block: bi})
			}
		}
	}
	out := map[transcript.Ref]string{}
	nth := map[string]int{}
	for _, c := range calls {
		id := tl.Messages[c.Message].Blocks[c.Block].ToolID
		noted := o.Notes.paths[id]
		if k := len(noted) - seen[id] + nth[id]; k >= 0 && k < len(noted) && noted[k] != "" {
			out[c] = noted[k]
		}
		nth[id]++
	}
	return out
}

// anchor reports the evidence behind the hidden part.
func anchor(tl *measure.Tally, r *Report) *Anchor {
	ma := tl.Anchor
	if ma == nil {
		return nil
	}
	a := &Anchor{Recorded: ma.Recorded, RecordedAt: ma.At, CacheRead: ma.CacheRead, CacheCreation: ma.CacheCreation,
		CountedBefore: ma.Counted, Removed: ma.Removed, StaleReasoning: ma.Stale}
	a.Source = tl.Format.UsageSource()
	for i := ma.At + 1; i < len(r.Messages); i++ {
		a.EstimatedAfter += r.Messages[i].Tokens
	}
	a.Tokens = a.Recorded + a.EstimatedAfter - a.Removed - a.StaleReasoning
	a.Utilization = measure.Ratio(a.Tokens, r.EffectiveWindow)
	return a
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
