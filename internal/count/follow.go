package count

import "github.com/ctxkit/ctxkit/internal/cli"

func follow(ctx *cli.Context, f *Flags) error { return cli.Usagef("--follow: not yet") }
