package count

import (
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/toolvocab"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// What /context users look for beyond the window split: which files cost the most, what
// each MCP server costs, and how the context grew over the session. The counts come from
// the tally (which keeps no text); what a call was about (the path it read) is only in the
// call's arguments, so Notes collects that much from each record as the document is read.

// FileCount is what the reads of one file cost: the results of the calls that read,
// edited or wrote it.
type FileCount struct {
	Path   string `json:"path"`
	Reads  int    `json:"reads"`
	Tokens int    `json:"tokens"`
}

// ServerCount is what the tools of one MCP server (tool names mcp__SERVER__TOOL) cost:
// their calls, their results and, where the document declares its tools (an API request),
// their definitions.
type ServerCount struct {
	Server           string      `json:"server"`
	Calls            int         `json:"calls"`
	CallTokens       int         `json:"call_tokens"`
	ResultTokens     int         `json:"result_tokens"`
	Definitions      int         `json:"definitions"`
	DefinitionTokens int         `json:"definition_tokens"`
	Tokens           int         `json:"tokens"`
	Tools            []ToolCount `json:"tools"`
}

// Trend is the context size the agent recorded at each request of the live conversation.
type Trend struct {
	Source string       `json:"source"`
	Points []TrendPoint `json:"points"`
	// Compactions is how many compactions the file records (Claude Code compact
	// summaries, Codex compacted records), and CompactedAt the messages of the live
	// conversation that stand for compacted history. The recorded figures start after
	// the newest compaction: the parser keeps the live conversation only.
	Compactions int   `json:"compactions"`
	CompactedAt []int `json:"compacted_at"`
	// Session is the prompt size recorded at every request of the file, those before a
	// compaction too, in order: the fill, the drop at each compaction and the refill.
	// SessionCompactedAfter says, for each compaction, how many of Session's figures came
	// before it. Points are the live conversation's figures, which a compaction restarts.
	Session               []int `json:"session,omitempty"`
	SessionCompactedAfter []int `json:"session_compacted_after,omitempty"`
}

// TrendPoint is one recorded figure: the prompt the agent sent (input, cache reads and
// cache writes) for the reply that ends at message Message.
type TrendPoint struct {
	Message int `json:"message"`
	Tokens  int `json:"tokens"`
}

// Notes is what the report needs of the conversation's text: the file each call read or
// wrote, by tool id, and the compactions seen. Add takes each record (or the whole
// document as one).
type Notes struct {
	// paths holds, for each tool id, the path of each call with that id in document
	// order ("" when the call touches no known file): ids are reused in the wild.
	paths map[string][]string
	// labelled holds the path a Cline result's label names, by its tool id.
	labelled    map[string]string
	compactions int
	// session holds every usage figure the file records, in order, and compactedAfter
	// how many of them came before each compaction (Trend.Session); turnAt is where the
	// figure of each Claude Code turn is, as a turn's later lines repeat it.
	session        []int
	compactedAfter []int
	turnAt         map[string]int
	// defined holds the tokens of each MCP tool's definition, by tool name.
	defined map[string]int
	// subagents are the calls that started a subagent, with what their results record.
	subagents transcript.SubagentCalls
	// thread says whose usage figures are the log's: 0 until its first message record,
	// then 1 the session's, 2 a subagent's (a subagent's own log, all of whose lines are
	// isSidechain).
	thread int8
}

// Add notes the calls and compactions of one record, and with a counter the size of each
// MCP tool's definition the document declares.
func (n *Notes) Add(rec *transcript.Transcript, c tokens.Counter) {
	if n.paths == nil {
		n.paths, n.labelled, n.defined = map[string][]string{}, map[string]string{}, map[string]int{}
		n.turnAt = map[string]int{}
	}
	if !rec.Tools.IsZero() && c != nil {
		// (Anthropic's {"name"}, Chat Completions' {"function":{"name"}}, Responses' {"name"})
		gjson.Parse(rec.Slice(rec.Tools)).ForEach(func(_, def gjson.Result) bool {
			name := def.Get("name").String()
			if name == "" {
				name = def.Get("function.name").String()
			}
			if _, _, ok := mcpServer(name); ok {
				n.defined[strings.Clone(name)] += c.Count(def.Raw)
			}
			return true
		})
	}
	n.subagents.Add(rec)
	for _, r := range rec.Records {
		// (a Codex compacted record; Claude Code's compact_boundary, a small system record)
		if r.Type == "compacted" || rec.Format == transcript.ClaudeCode && r.Type == "system" &&
			gjson.Get(rec.Slice(r.Span), "subtype").String() == "compact_boundary" {
			n.compactions++
			n.compactedAfter = append(n.compactedAfter, len(n.session))
		}
		if n.thread == 0 && (r.Type == "user" || r.Type == "assistant") {
			n.thread = 1
			if rec.Format == transcript.ClaudeCode && gjson.Get(rec.Slice(r.Span), "isSidechain").Bool() {
				n.thread = 2
			}
		}
		if r.Type == "assistant" || r.Type == "event_msg" {
			n.addUsage(rec.Format, rec.Slice(r.Span))
		}
	}
	for mi := range rec.Messages {
		m := &rec.Messages[mi]
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			switch b.Kind {
			case transcript.ToolCall:
				// (cloned: a path parsed from the record may point into its line, which a
				// streamed document's memory must not keep)
				id := strings.Clone(b.ToolID)
				n.paths[id] = append(n.paths[id], strings.Clone(callPath(b.ToolName, rec.Slice(b.Body))))
			case transcript.ToolResult:
				if p := labelPath(rec.LabelOf(b)); p != "" {
					n.labelled[strings.Clone(b.ToolID)] = strings.Clone(p)
				}
			}
		}
	}
}

// addUsage notes the figure a record carries, if any: a later line of a Claude Code turn
// replaces the figure its first line gave, and a Codex token_count repeating the totals
// of the one before it is the same request (transcript.RecordUsage).
func (n *Notes) addUsage(f transcript.Format, raw string) {
	u, turn, ok := transcript.ThreadUsage(f, raw, n.thread == 2)
	if !ok {
		return
	}
	if at, seen := n.turnAt[turn]; seen && turn != "" {
		n.session[at] = u.Input
		return
	}
	if turn != "" {
		n.turnAt[strings.Clone(turn)] = len(n.session)
	}
	n.session = append(n.session, u.Input)
}

// callPath is the file a call reads or writes, "" when it is no such call.
func callPath(name, args string) string {
	c := snip.Classify(name, args, snip.Tools{})
	if c.Class == snip.Read {
		return c.File
	}
	if toolvocab.Edit(name) {
		// A write names its file as a read does (file_path, path...): classified as a
		// read, the call gives that argument, and no other (SWE-agent's edit has none).
		return snip.Classify("read", args, snip.Tools{}).File
	}
	return ""
}

// labelPath is the path of a Cline result label ("[read_file for 'src/a.go'] Result:") of
// a tool that reads or writes a file; other tools' labels name a command or a search.
func labelPath(label string) string {
	tool, rest, ok := strings.Cut(strings.TrimPrefix(label, "["), " for '")
	if read, _, _ := toolvocab.Read(tool); !ok || !read && !toolvocab.Edit(tool) {
		return ""
	}
	p, _, ok := strings.Cut(rest, "'] Result:")
	if !ok {
		return ""
	}
	return p
}

// mcpServer splits an MCP tool name, mcp__SERVER__TOOL, into its server and tool.
func mcpServer(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != ""
}

// byServer groups the MCP tools of byTool by server, with the definitions declared of
// them, most expensive first, each with its tools called (already most expensive first).
func byServer(byTool []ToolCount, defined map[string]int) []ServerCount {
	idx := map[string]int{}
	var out []ServerCount
	serverOf := func(server string) *ServerCount {
		i, seen := idx[server]
		if !seen {
			i = len(out)
			idx[server] = i
			out = append(out, ServerCount{Server: server, Tools: []ToolCount{}})
		}
		return &out[i]
	}
	for _, tc := range byTool {
		server, tool, ok := mcpServer(tc.Name)
		if !ok {
			continue
		}
		s := serverOf(server)
		s.Calls += tc.Calls
		s.CallTokens += tc.CallTokens
		s.ResultTokens += tc.ResultTokens
		s.Tokens += tc.Tokens
		tc.Name = tool
		s.Tools = append(s.Tools, tc)
	}
	names := make([]string, 0, len(defined))
	for name := range defined {
		names = append(names, name)
	}
	sort.Strings(names) // (servers declared but never called come in a stable order)
	for _, name := range names {
		server, _, _ := mcpServer(name)
		s := serverOf(server)
		s.Definitions++
		s.DefinitionTokens += defined[name]
		s.Tokens += defined[name]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tokens > out[j].Tokens })
	if out == nil {
		out = []ServerCount{}
	}
	return out
}

// sortFiles turns the per-path counts into the report's list, most expensive first.
func sortFiles(files map[string]*FileCount) []FileCount {
	out := make([]FileCount, 0, len(files))
	for _, f := range files {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tokens != out[j].Tokens {
			return out[i].Tokens > out[j].Tokens
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// trend is the series of recorded usage figures, with the compactions noted.
func trend(us []transcript.Usage, source string, summaries []int, n *Notes) *Trend {
	if len(us) == 0 && n.compactions == 0 && len(n.session) == 0 {
		return nil
	}
	t := &Trend{Source: source, Points: []TrendPoint{}, Compactions: max(n.compactions, len(summaries)), CompactedAt: summaries,
		Session: n.session, SessionCompactedAfter: n.compactedAfter}
	if t.CompactedAt == nil {
		t.CompactedAt = []int{}
	}
	for _, u := range us {
		t.Points = append(t.Points, TrendPoint{Message: u.After, Tokens: u.Input})
	}
	return t
}

// sparks are the eight heights of the trend chart, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws values in at most width cells, one a value or, when there are more
// values than cells, the largest of each run of values a cell stands for (a peak is never
// averaged away), scaled to top. It also returns, for each value, the cell it is in.
func sparkline(values []int, top, width int) (line []rune, cellOf []int) {
	n := len(values)
	cellsUsed := min(n, width)
	line = make([]rune, cellsUsed)
	peak := make([]int, cellsUsed)
	cellOf = make([]int, n)
	for i, v := range values {
		c := i * cellsUsed / n
		cellOf[i] = c
		peak[c] = max(peak[c], v)
	}
	for c, v := range peak {
		h := 0
		if top > 0 {
			h = min(v*len(sparks)/top, len(sparks)-1)
		}
		line[c] = sparks[max(h, 0)]
	}
	return line, cellOf
}

// clipLeft shortens a path to n columns by its start, keeping the file's name.
func clipLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[len(r)-n:])
	}
	return "…" + string(r[len(r)-n+1:])
}

// commonDir is the folder (ending in /) every path is under, "" when there is none or only
// one file.
func commonDir(files []FileCount) string {
	if len(files) < 2 {
		return ""
	}
	dir := files[0].Path
	for _, f := range files[1:] {
		for !strings.HasPrefix(f.Path, dir) {
			dir = dir[:len(dir)-1]
		}
	}
	if i := strings.LastIndexByte(dir, '/'); i > 0 {
		return dir[:i+1]
	}
	return ""
}
