package summarize

import "github.com/ctxkit/ctxkit/internal/cli"

// Examples are ctx-summarize's in --help. They live in a file of their own so that its
// help text and logic (main.go) change without them.
func (*Flags) Examples() []cli.Example {
	return []cli.Example{
		{Does: "the pipeline in front of a request; a summary only when the window is 80% full", Command: "ctx-budget < request.json | ctx-snip | ctx-summarize | ctx-trim > out.json"},
		{Does: "compact a session now, keeping the last three turns and the full history in the store", Command: "ctx-summarize -f --keep '3 turns' --offload -i SESSION.jsonl"},
		{Does: "use Claude, falling back to the local summarizer when the API is down", Command: "ctx-summarize --backend anthropic --fallback local chat.json > out.json"},
	}
}
