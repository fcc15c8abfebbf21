// Command ctx-summarize replaces the older part of an LLM conversation document with one
// structured summary message, written offline or by a model, when the conversation nears
// the end of its context window.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/summarize"
)

func main() { os.Exit(summarize.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
