// Command ctx-recall finds what the tiers offloaded to the store (results ctx-persist
// stored, results ctx-snip cleared, documents ctx-summarize --offload kept) and reads it
// back: a ranked search with excerpts, an item's metadata and outline, its exact bytes.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api, as every binary

	"github.com/ctxkit/ctxkit/internal/recall"
)

func main() { os.Exit(recall.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
