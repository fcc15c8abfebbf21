package tiers_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/tiers"
)

// TestTierCoresDoNotImportCli: a tier's core, every file of its package but main.go (the
// command adapter: flags, --help, Main, New), imports no cli. The core decides from its
// own settings and returns plain errors; the adapter reads the command line into those
// settings and gives the errors their exit status. The packages are the registry's: where
// each tier's New is defined.
func TestTierCoresDoNotImportCli(t *testing.T) {
	cliPath := reflect.TypeFor[cli.Tool]().PkgPath()
	module := strings.TrimSuffix(cliPath, "/internal/cli")
	for _, tier := range tiers.All() {
		fn := runtime.FuncForPC(reflect.ValueOf(tier.New).Pointer()).Name()
		pkg, ok := strings.CutSuffix(fn, ".New")
		rel, inModule := strings.CutPrefix(pkg, module+"/")
		if !ok || !inModule || strings.Contains(rel, ".") {
			t.Errorf("%s: New is %s, not a tier package's function", tier.Name, fn)
			continue
		}
		files, err := filepath.Glob(filepath.Join("..", "..", filepath.FromSlash(rel), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		core := 0
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == "main.go" {
				continue
			}
			core++
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == cliPath {
					t.Errorf("%s: %s imports %s: only the command adapter (main.go) may", tier.Name, filepath.ToSlash(name), path)
				}
			}
		}
		if core == 0 {
			t.Errorf("%s: no core files in %s", tier.Name, rel)
		}
	}
}
