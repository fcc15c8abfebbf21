// End-to-end tests: the testscript scripts in testdata/script run the real binaries,
// pipelines included, and assert their stdout, stderr and exit status.
package ctxkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// commands maps every binary to its entry point, run in-process by testscript.
var commands = map[string]func() int{
	"ctx-count":   func() int { return count.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-budget":  func() int { return budget.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-snip":    func() int { return snip.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-persist": func() int { return persist.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-repair":  func() int { return repair.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-convert": func() int { return convert.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-trim":    func() int { return trim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv) },
	"ctx-summarize": func() int {
		return summarize.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	},
}

func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, commands))
}

func TestScripts(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: false,
		Setup: func(env *testscript.Env) error {
			// Scripts reach the shipped samples through $SAMPLES and the shared corpus
			// through $CORPUS (which may not exist: scripts that use it check first).
			env.Setenv("SAMPLES", filepath.Join(root, "testdata"))
			env.Setenv("CORPUS", filepath.Join(root, "..", "shared", "corpus"))
			env.Setenv("NO_COLOR", "")
			// Token counts shared between runs go to the script's own directory, never
			// to the home directory testscript names.
			env.Setenv("CTX_CACHE_DIR", filepath.Join(env.WorkDir, ".cache"))
			return nil
		},
	})
}
