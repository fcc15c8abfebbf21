// Command ctx-trim drops the oldest messages of an LLM conversation document, tool calls
// with their results, until it fits its context window: the emergency tier of ctxkit.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/trim"
)

func main() { os.Exit(trim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
