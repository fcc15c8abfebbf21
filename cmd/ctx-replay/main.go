// Command ctx-replay replays a saved LLM session request by request through a pipeline of
// ctxkit filters and reports the tokens sent, the prompt cache kept and the cost, against
// the session as it was sent.
package main

import (
	"os"

	_ "github.com/ctxkit/ctxkit/internal/apicount" // --tokenizer api
	"github.com/ctxkit/ctxkit/internal/replay"
)

func main() { os.Exit(replay.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }
