// Command ctx-budget caps the size of every tool result in an LLM conversation document,
// keeping head and tail, and tightens the cap as the context window fills.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/budget"
)

func main() { os.Exit(budget.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
