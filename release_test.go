package ctxkit_test

import (
	"go/build/constraint"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

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

// TestCIBuildsEveryReleasePlatform checks that .ci/run builds and vets exactly the
// GOOS/GOARCH pairs goreleaser.yaml ships, so that a change to one without the other
// fails here: a platform the release names but CI never builds would break unnoticed.
func TestCIBuildsEveryReleasePlatform(t *testing.T) {
	b, err := os.ReadFile("goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var release struct {
		Builds []struct {
			ID     string   `yaml:"id"`
			Goos   []string `yaml:"goos"`
			Goarch []string `yaml:"goarch"`
			Goarm  []string `yaml:"goarm"`
			Ignore []any    `yaml:"ignore"`
			Skip   any      `yaml:"skip"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(b, &release); err != nil {
		t.Fatalf("goreleaser.yaml: %v", err)
	}
	if len(release.Builds) == 0 {
		t.Fatal("goreleaser.yaml has no builds")
	}
	var shipped []string
	for _, build := range release.Builds {
		// goreleaser's defaults, a goarm list or ignore rules would need more than a
		// cross product here: make the test follow before relying on them.
		if len(build.Goos) == 0 || len(build.Goarch) == 0 || build.Goarm != nil || build.Ignore != nil || build.Skip != nil {
			t.Fatalf("goreleaser.yaml: build %q: name goos and goarch, with no goarm, ignore or skip, or teach this test them", build.ID)
		}
		for _, goos := range build.Goos {
			for _, goarch := range build.Goarch {
				shipped = append(shipped, goos+"/"+goarch)
			}
		}
	}
	slices.Sort(shipped)
	shipped = slices.Compact(shipped)

	script, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^platforms="([^"]*)"$`).FindSubmatch(script)
	if m == nil {
		t.Fatal(`.ci/run has no platforms="..." line`)
	}
	built := strings.Fields(string(m[1]))
	slices.Sort(built)
	if !slices.Equal(built, shipped) {
		t.Errorf(".ci/run builds %v; goreleaser.yaml ships %v", built, shipped)
	}
}

// TestNoFileDependsOnArch holds what .ci/run relies on to vet once per OS rather than
// once per platform: no file of ours is built or left out by architecture, neither by
// its name (x_arm64.go) nor by a //go:build line naming one.
func TestNoFileDependsOnArch(t *testing.T) {
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		t.Skipf("go tool dist list: %v", err)
	}
	arches := map[string]bool{}
	for _, platform := range strings.Fields(string(out)) {
		if _, arch, ok := strings.Cut(platform, "/"); ok {
			arches[arch] = true
		}
	}
	files, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	for _, file := range strings.Fields(string(files)) {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".go"), "_test")
		for _, part := range strings.Split(name, "_")[1:] {
			if arches[part] {
				t.Errorf("%s: built for one architecture only (_%s); vet it per platform in .ci/run", file, part)
			}
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !constraint.IsGoBuild(line) {
				continue
			}
			expr, err := constraint.Parse(line)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			for _, tag := range buildTags(expr) {
				if arches[tag] {
					t.Errorf("%s: %q names an architecture; vet it per platform in .ci/run", file, line)
				}
			}
		}
	}
}

// buildTags is every tag a build constraint names (Eval would stop at the first side of
// an || or && that settles it).
func buildTags(expr constraint.Expr) []string {
	switch e := expr.(type) {
	case *constraint.TagExpr:
		return []string{e.Tag}
	case *constraint.NotExpr:
		return buildTags(e.X)
	case *constraint.AndExpr:
		return append(buildTags(e.X), buildTags(e.Y)...)
	case *constraint.OrExpr:
		return append(buildTags(e.X), buildTags(e.Y)...)
	}
	return nil
}
