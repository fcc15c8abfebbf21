// Command ctx-proxy is a local HTTP server between an agent (Claude Code, Codex, an SDK
// client) and its provider that runs a pipeline of ctxkit filters on every request,
// keeping the prompt cache's prefix from one turn to the next.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/proxy"
)

func main() { os.Exit(proxy.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
