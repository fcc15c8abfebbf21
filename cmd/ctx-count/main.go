// Command ctx-count counts the tokens of an LLM conversation document and shows where they
// go: by message, role, block kind and tool, against the model's context window.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/count"
)

func main() { os.Exit(count.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
