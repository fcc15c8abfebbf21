// Command ctx-snip replaces stale tool results in an LLM conversation document with a
// placeholder that names the call and says how to get the result back: files read again
// later, repeated searches, and old results once the context window fills up or the prompt
// cache has gone cold.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/snip"
)

func main() { os.Exit(snip.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
