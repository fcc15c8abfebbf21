// Command ctxkit is every ctxkit tool in one binary: linked as ctx-count, ctx-budget...
// it is that tool; run as ctxkit, its first argument names one (see internal/multicall).
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/multicall"
)

func main() {
	os.Exit(multicall.Main(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
