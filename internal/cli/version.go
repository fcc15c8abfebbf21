package cli

import "runtime/debug"

// version is set at link time:
//
//	go build -ldflags "-X github.com/ctxkit/ctxkit/internal/cli.version=v1.2.3"
//
// It is the package's only variable and is never written at run time.
var version = ""

// Version returns the release version: the link-time value when set, else
// the main module version recorded by the go command, else "(devel)".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
