package ctxkit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/ctxkit/ctxkit/internal/multicall"
)

// TestManPages checks that every binary has a man page with the standard sections and
// that every flag it accepts is documented there.
func TestManPages(t *testing.T) {
	for _, tool := range multicall.Tools() {
		page, err := os.ReadFile(filepath.Join("man", tool.Name+".1"))
		if err != nil {
			t.Errorf("%s: %v", tool.Name, err)
			continue
		}
		text := string(page)
		// A control character is a roff escape that a tool writing the page took for its
		// own ("\f" read as a form feed): the page shows "B--flagR".
		if i := strings.IndexFunc(text, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }); i >= 0 {
			t.Errorf("%s.1: control character %q at byte %d", tool.Name, text[i], i)
		}
		for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"} {
			if !strings.Contains(text, "\n.SH "+section+"\n") {
				t.Errorf("%s.1: no %s section", tool.Name, section)
			}
		}
		parser, err := kong.New(tool.Grammar, kong.Name(tool.Name), kong.Vars(tool.Vars))
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		for _, f := range parser.Model.Flags {
			if f.Name == "help" {
				continue
			}
			roff := `\-\-` + strings.ReplaceAll(f.Name, "-", `\-`)
			if !strings.Contains(text, roff) {
				t.Errorf("%s.1 does not document --%s", tool.Name, f.Name)
			}
			if f.Short != 0 && !strings.Contains(text, `\-`+string(f.Short)) {
				t.Errorf("%s.1 does not document -%c", tool.Name, f.Short)
			}
			for _, env := range f.Envs {
				if !strings.Contains(text, env) {
					t.Errorf("%s.1 does not mention $%s", tool.Name, env)
				}
			}
		}
	}
}

// TestManPagesInputRules checks that every page states the rules of reading input that
// every tool shares: what is refused and when the reader says it departed from a format.
func TestManPagesInputRules(t *testing.T) {
	for _, tool := range multicall.Tools() {
		page, err := os.ReadFile(filepath.Join("man", tool.Name+".1"))
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range []string{".SS Input", "An empty input", "is not a message is refused", "\\-\\-path 0.traj", "given twice in one object is refused", "line order", "Binary data"} {
			if !strings.Contains(string(page), rule) {
				t.Errorf("%s.1: no %q", tool.Name, rule)
			}
		}
	}
}

// TestManPagesEmptyInputExit: an empty input is a conversation with no messages (the Input
// section, and empty_input.txtar), so no EXIT STATUS entry may give it as a cause of exit 3
// without naming the one case that refuses it, an explicit JSON --format (issue 34).
func TestManPagesEmptyInputExit(t *testing.T) {
	for _, tool := range multicall.Tools() {
		page, err := os.ReadFile(filepath.Join("man", tool.Name+".1"))
		if err != nil {
			t.Fatal(err)
		}
		text := string(page)
		start := strings.Index(text, "\n.SH EXIT STATUS\n")
		if start < 0 {
			continue // TestManPages reports it
		}
		section := text[start+1:]
		if end := strings.Index(section[1:], "\n.SH "); end >= 0 {
			section = section[:end+1]
		}
		for _, entry := range strings.Split(section, "\n.TP\n") {
			if strings.Contains(strings.Join(strings.Fields(entry), " "), "empty input") && !strings.Contains(entry, `\-\-format`) {
				t.Errorf("%s.1: EXIT STATUS gives an empty input as a failure without its --format:\n%s", tool.Name, entry)
			}
		}
	}
}
