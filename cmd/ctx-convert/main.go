// Command ctx-convert converts an LLM conversation document between the Anthropic
// Messages, OpenAI Chat Completions and OpenAI Responses request formats, and saved agent
// transcripts (Claude Code, Codex, SWE-agent, tau-bench) to API request documents.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/convert"
)

func main() { os.Exit(convert.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
