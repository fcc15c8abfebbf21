package ctxkit_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/multicall"
)

// TestEveryBinaryShips checks that each cmd/ctx-* is a tool of the one released binary
// (cmd/ctxkit), is linked under its name by the Linux packages and the Homebrew cask, is
// documented in the README and has a man page.
func TestEveryBinaryShips(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("cmd", "ctx-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no binaries under cmd/: %v", err)
	}
	b, err := os.ReadFile("goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	release := string(b)
	if !strings.Contains(release, "main: ./cmd/ctxkit\n") {
		t.Errorf("goreleaser.yaml does not build cmd/ctxkit")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		name := filepath.Base(d)
		names = append(names, name)
		if !slices.Contains(multicall.Names(), name) {
			t.Errorf("ctxkit cannot be %s", name)
		}
		if !strings.Contains(release, "dst: /usr/bin/"+name+"\n        type: symlink\n") {
			t.Errorf("goreleaser.yaml: the packages do not link %s", name)
		}
		if !strings.Contains(release, "      - "+name+"\n") || !strings.Contains(release, "      - man/"+name+".1\n") {
			t.Errorf("goreleaser.yaml: the cask does not name %s or its man page", name)
		}
		if !strings.Contains(string(readme), "## "+name) {
			t.Errorf("README.md has no section for %s", name)
		}
		if _, err := os.Stat(filepath.Join("man", name+".1")); err != nil {
			t.Errorf("%s has no man page", name)
		}
	}
	if !slices.Equal(names, multicall.Names()) {
		t.Errorf("ctxkit's tools %v, cmd/ has %v", multicall.Names(), names)
	}
	page, err := os.ReadFile(filepath.Join("man", "ctxkit.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range append([]string{"link", "completion", "\\-\\-force", "\\-\\-dir"}, names...) {
		if !strings.Contains(string(page), word) {
			t.Errorf("ctxkit.1 does not mention %s", word)
		}
	}
}
