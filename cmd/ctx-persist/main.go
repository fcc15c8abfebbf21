// Command ctx-persist writes the big tool results of an LLM conversation document to a
// content-addressed store and leaves a preview and a reference in their place; with
// --restore it puts them back, byte for byte.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/persist"
)

func main() { os.Exit(persist.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
