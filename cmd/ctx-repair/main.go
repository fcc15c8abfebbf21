// Command ctx-repair makes an LLM conversation document one the provider's API accepts:
// every tool call answered, no result without its call, unique call ids, and the role and
// content rules of the format; --check lists the problems instead.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/repair"
)

func main() { os.Exit(repair.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
