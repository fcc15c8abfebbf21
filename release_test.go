package ctxkit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryBinaryShips checks that each cmd/ctx-* is built by goreleaser, put in the
// archive, documented in the README and has a man page.
func TestEveryBinaryShips(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("cmd", "ctx-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no binaries under cmd/: %v", err)
	}
	release, err := os.ReadFile("goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		name := filepath.Base(d)
		if !strings.Contains(string(release), "main: ./cmd/"+name+"\n") {
			t.Errorf("goreleaser.yaml does not build %s", name)
		}
		if !strings.Contains(string(release), "      - "+name+"\n") {
			t.Errorf("goreleaser.yaml does not put %s in the archive", name)
		}
		if !strings.Contains(string(readme), "## "+name) {
			t.Errorf("README.md has no section for %s", name)
		}
		if _, err := os.Stat(filepath.Join("man", name+".1")); err != nil {
			t.Errorf("%s has no man page", name)
		}
	}
}
