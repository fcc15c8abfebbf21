package transcript

// What ctxkit knows of each format as a whole lives here, in one table: the wire it is
// sent on (which decides its provider, its block types and how a new message is
// written), whether it is a session log of JSON lines, which agent wrote it, and where
// its records carry the usage of a request. A format added to Formats without a row here
// fails TestEveryFormatDescribed; the packages that act per format (repair's rules,
// convert's readers and writers, summarize's wrappers) each keep a table keyed by Format
// or Wire and a test that walks Formats.

// Wire is the API a format's messages are written for: formats of one wire share their
// block types, so their blocks copy between them as they are.
type Wire uint8

// The wires.
const (
	// MessagesWire is Anthropic's Messages API: content blocks, tool_use / tool_result.
	MessagesWire Wire = iota + 1
	// ChatWire is OpenAI's Chat Completions: tool_calls and tool messages.
	ChatWire
	// ResponsesWire is OpenAI's Responses API: items, function_call / function_call_output.
	ResponsesWire
)

// Wires lists every wire.
var Wires = []Wire{MessagesWire, ChatWire, ResponsesWire}

// String names the wire as its request format does.
func (w Wire) String() string {
	switch w {
	case MessagesWire:
		return string(Anthropic)
	case ChatWire:
		return string(OpenAI)
	case ResponsesWire:
		return string(Responses)
	}
	return "unknown wire"
}

// Request is the request format of the wire: the format its API takes.
func (w Wire) Request() Format { return Format(w.String()) }

// Provider names who serves the wire: "anthropic" or "openai" (what prices, counting and
// the proxy's upstreams are keyed by).
func (w Wire) Provider() string {
	if w == MessagesWire {
		return "anthropic"
	}
	return "openai"
}

// Body is the field of a request body of the wire that holds the conversation.
func (w Wire) Body() string {
	if w == ResponsesWire {
		return "input"
	}
	return "messages"
}

// UserMessage is a new user message of the wire whose content is the JSON value content
// (a string literal or a list of blocks), as a request body's array holds it.
func (w Wire) UserMessage(content string) string {
	if w == ResponsesWire {
		return `{"type":"message","role":"user","content":` + content + `}`
	}
	return `{"role":"user","content":` + content + `}`
}

// formatInfo is one format's row.
type formatInfo struct {
	wire Wire
	// jsonl: a session log, one JSON record a line (streamed, compacted by its agent).
	jsonl bool
	// messagesAPI: a message array as the Messages API takes it, so the API's structural
	// rules apply to it as it stands.
	messagesAPI bool
	// agent is the agent that writes the format, "" for a request body any client sends.
	agent string
	// usage is where a record carries the usage of the request it answers, "" for none.
	usage string
	// compacts: a record may replace the conversation before it (a Codex compacted
	// record; Claude Code's compaction adds a summary and leaves the records).
	compacts bool
}

var formats = map[Format]formatInfo{
	Anthropic:  {wire: MessagesWire, messagesAPI: true},
	OpenAI:     {wire: ChatWire},
	Responses:  {wire: ResponsesWire},
	ClaudeCode: {wire: MessagesWire, jsonl: true, agent: "claude-code", usage: "message.usage"},
	Codex:      {wire: ResponsesWire, jsonl: true, agent: "codex", usage: "token_count", compacts: true},
	Cline:      {wire: MessagesWire, messagesAPI: true, agent: "cline"},
}

// Wire is the API the format's messages are written for; 0 for an unknown format.
func (f Format) Wire() Wire { return formats[f].wire }

// Provider names who serves the format's wire: "anthropic" or "openai".
func (f Format) Provider() string { return f.Wire().Provider() }

// MessagesAPI reports whether a document of the format is a Messages API message array
// as it is sent (an Anthropic request, a Cline history), so the API's structural rules
// apply to it as it stands.
func (f Format) MessagesAPI() bool { return formats[f].messagesAPI }

// JSONL reports whether documents of the format are one JSON record a line.
func (f Format) JSONL() bool { return formats[f].jsonl }

// Agent names the agent that writes the format ("claude-code", "codex", "cline"), or ""
// for a request body, which any client may send.
func (f Format) Agent() string { return formats[f].agent }

// UsageSource names where the format's records carry a request's usage ("message.usage",
// "token_count"), or "" when they carry none.
func (f Format) UsageSource() string { return formats[f].usage }

// Compacts reports whether a record of the format may replace the conversation before it
// (Transcript.Compacts).
func (f Format) Compacts() bool { return formats[f].compacts }
