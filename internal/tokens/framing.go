package tokens

import "strings"

// MessageOverhead is the framing a provider adds around each message, in tokens.
//
// OpenAI's chat format wraps every message as <|start|>role<|message|>...<|end|>: 3
// tokens beyond the content, the figure OpenAI's own counting examples use. Anthropic
// does not publish how it frames messages; its turn markers ("\n\nHuman:",
// "\n\nAssistant:" in the older text format) cost about as much, so the same 3 is used.
// The usage Claude Code records cannot pin it down: nearly every recorded interval is a
// reply and one result message per tool call, so the price of a message moves with that
// of a tool block (AnthropicToolCallOverhead), and fits with 0 to 10 tokens a message
// are equally good (scripts/calibrate prints them). Any other provider gets the same
// figure.
func MessageOverhead(provider string) int {
	if strings.EqualFold(provider, "anthropic") {
		return anthropicMessageOverhead
	}
	return openAIMessageOverhead
}

const (
	openAIMessageOverhead    = 3
	anthropicMessageOverhead = 3
)

// Framing is what a provider adds around the text of a conversation, in tokens: around
// each message, and around each tool call and tool result beyond their text. A block
// keeps its framing when a tier replaces its text, so it is counted with the message
// (measure), not with the block.
type Framing struct {
	Message, ToolCall, ToolResult int
}

// FramingOf is the framing of a provider: MessageOverhead a message, and for Anthropic
// the fitted price of its tool blocks (AnthropicToolCallOverhead). OpenAI's tool calls
// and results are counted as their text and the message that carries them, so they add
// nothing more.
func FramingOf(provider string) Framing {
	f := Framing{Message: MessageOverhead(provider)}
	if strings.EqualFold(provider, "anthropic") {
		f.ToolCall, f.ToolResult = AnthropicToolCallOverhead, AnthropicToolResultOverhead
	}
	return f
}

// ReplyPriming is the tokens that prime the assistant's reply once per request
// (<|start|>assistant<|message|> in OpenAI's format).
const ReplyPriming = 3

// EncryptedMinTokens is the least an encrypted or redacted reasoning block costs.
const EncryptedMinTokens = 16

// EncryptedTokens is the cost charged for encrypted reasoning (OpenAI encrypted_content,
// Anthropic redacted_thinking) given as n bytes of base64 text.
//
// Counting the base64 text with a BPE would be wrong in both directions: base64 tokenizes
// at little more than one byte per token, while the model sees the decrypted reasoning.
// The payload decodes to n*3/4 bytes, which is about the size of the reasoning text it
// carries plus a little cipher overhead, and reasoning text runs about 4 bytes per token:
// so ceil(n*3/16) tokens, but at least EncryptedMinTokens for the block's framing.
// 0 for n <= 0.
func EncryptedTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return max((n*3+15)/16, EncryptedMinTokens)
}

// DefaultTokenizer is the counter to use for a document format when none is named.
//
// OpenAI formats ("openai", "responses", "codex") are read by models that use o200k_base,
// so "o200k" is exact for them. For Anthropic formats ("anthropic", "claude-code") no
// BPE here is exact: Claude's tokenizer is unpublished, and o200k or cl100k is off from it
// by as much as the byte estimate while costing far more than it (the exact counters run
// at tens of MB/s, the estimate at memory speed). So they get "estimate"; Claude Code
// transcripts also record the real usage Claude reported, which is shown alongside.
// Unknown formats get "estimate" too.
func DefaultTokenizer(format string) string {
	switch strings.ToLower(format) {
	case "openai", "responses", "codex":
		return "o200k"
	}
	return "estimate"
}
