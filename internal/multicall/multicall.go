// Package multicall is ctxkit's one binary for every tool: called by a tool's name (a link
// named ctx-count, ctx-budget...) it is that tool; called as ctxkit, its first argument
// names the tool (ctxkit count FILE) or one of its own commands: link, which makes those
// names in a directory, and completion, which writes the shell completion scripts. A
// release ships this binary alone, so the token tables every tool embeds are shipped once.
package multicall

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/completion"
	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/proxy"
	"github.com/ctxkit/ctxkit/internal/recall"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/tiers"
)

// Name is the multi-call binary's own name.
const Name = "ctxkit"

// tool is one command the binary can be.
type tool struct {
	main cli.MainFunc
	spec func() *cli.Tool
}

// tools are the commands, by the name each is installed under: every tier of the
// registry, and the tools that are not tiers.
var tools = func() map[string]tool {
	m := map[string]tool{
		"ctx-count":   {count.Main, count.Tool},
		"ctx-repair":  {repair.Main, repair.Tool},
		"ctx-convert": {convert.Main, convert.Tool},
		"ctx-replay":  {replay.Main, replay.Tool},
		"ctx-proxy":   {proxy.Main, proxy.Tool},
		"ctx-recall":  {recall.Main, recall.Tool},
	}
	for _, t := range tiers.All() {
		m[t.Name] = tool{t.Main, t.Tool}
	}
	return m
}()

// Names are the tools' names, sorted.
func Names() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tools are the tools' descriptions, fresh ones, in the order of Names.
func Tools() []*cli.Tool {
	var specs []*cli.Tool
	for _, n := range Names() {
		specs = append(specs, tools[n].spec())
	}
	return specs
}

// Main runs the binary called program (its argv[0]) with args and returns the exit status.
func Main(program string, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	name := strings.TrimSuffix(filepath.Base(program), ".exe")
	if t, ok := tools[name]; ok {
		return t.main(args, stdin, stdout, stderr, getenv)
	}
	if len(args) == 0 {
		usage(stderr)
		return cli.ExitUsage
	}
	switch first := args[0]; first {
	case "-h", "--help", "help":
		usage(stdout)
		return cli.ExitOK
	case "--version":
		fmt.Fprintln(stdout, Name, cli.Version())
		return cli.ExitOK
	case "link":
		return link(program, args[1:], stdout, stderr)
	case "completion":
		return completions(args[1:], stdout, stderr)
	default:
		if t, ok := tools[first]; ok {
			return t.main(args[1:], stdin, stdout, stderr, getenv)
		}
		if t, ok := tools["ctx-"+first]; ok {
			return t.main(args[1:], stdin, stdout, stderr, getenv)
		}
		return fail(stderr, fmt.Sprintf("no tool named %q", first), "see 'ctxkit --help' for the tools")
	}
}

func fail(stderr io.Writer, msg, hint string) int {
	fmt.Fprintf(stderr, "%s: error: %s\n", Name, human.Safe(msg))
	if hint != "" {
		fmt.Fprintf(stderr, "%s: hint: %s\n", Name, hint)
	}
	return cli.ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `Usage: ctxkit TOOL [ARGS...]
       ctxkit link [--force] [DIR]
       ctxkit completion bash|zsh|fish [--dir DIR]

Every ctxkit tool in one binary. Called by a tool's name (a link named ctx-count...), it is
that tool; called as ctxkit, the first argument names the tool, with or without "ctx-":

`)
	for _, n := range Names() {
		fmt.Fprintf(w, "  %-14s %s\n", n, tools[n].spec().Summary)
	}
	fmt.Fprintf(w, `
Commands:
  link [DIR]        Make each tool's name in DIR (default: this binary's directory) a link
                    to this binary; --force replaces a file of that name that is not one.
  completion SHELL  Print the completion scripts of every tool for bash, zsh or fish; with
                    --dir DIR, write one file per tool there, named as the shell expects.

Examples:
  ctxkit count session.jsonl
  ctxkit link ~/.local/bin && ctx-count --help
  ctxkit completion bash --dir ~/.local/share/bash-completion/completions
`)
}

// link makes each tool's name in a directory a symbolic link to this binary. An entry
// already there is left when it is that link, replaced (by a rename, which does not
// follow it) only with --force, and otherwise reported.
func link(program string, args []string, stdout, stderr io.Writer) int {
	force := false
	var dir string
	for _, a := range args {
		switch {
		case a == "--force" || a == "-f":
			force = true
		case strings.HasPrefix(a, "-"):
			return fail(stderr, fmt.Sprintf("unknown flag %s for link", a), "usage: ctxkit link [--force] [DIR]")
		case dir != "":
			return fail(stderr, "link takes one directory", "usage: ctxkit link [--force] [DIR]")
		default:
			dir = a
		}
	}
	self, err := os.Executable()
	if err != nil {
		self = program
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	if self, err = filepath.Abs(self); err != nil {
		return runtimeFail(stderr, err)
	}
	if dir == "" {
		dir = filepath.Dir(self)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return runtimeFail(stderr, fmt.Errorf("%s is not a directory", dir))
	}
	failed := false
	for _, name := range Names() {
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		path := filepath.Join(dir, name)
		if target, err := os.Readlink(path); err == nil && target == self {
			fmt.Fprintf(stdout, "%s: already a link to %s\n", path, self)
			continue
		}
		if _, err := os.Lstat(path); err == nil && !force {
			fmt.Fprintf(stderr, "%s: error: %s exists and is not a link to %s\n", Name, human.Safe(path), human.Safe(self))
			failed = true
			continue
		}
		if err := replaceWithLink(self, path); err != nil {
			fmt.Fprintf(stderr, "%s: error: %s\n", Name, human.Safe(err.Error()))
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "%s -> %s\n", path, self)
	}
	if failed {
		fmt.Fprintf(stderr, "%s: hint: remove those files, or run 'ctxkit link --force' to replace them\n", Name)
		return cli.ExitRuntime
	}
	return cli.ExitOK
}

// replaceWithLink makes path a symbolic link to target: the link is made under a temp name
// beside it and renamed over path, so that path is never missing nor followed.
func replaceWithLink(target, path string) error {
	tmp := filepath.Join(filepath.Dir(path), safefile.TempPrefix(path)+"link"+safefile.TempSuffix)
	_ = os.Remove(tmp) // a temp link a failed run left (a link, so removing it follows nothing)
	makeLink := os.Symlink
	if runtime.GOOS == "windows" {
		makeLink = os.Link // a symbolic link needs an administrator there; a hard link does not
	}
	if err := makeLink(target, tmp); err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link %s: %w", path, err)
	}
	return nil
}

func runtimeFail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: error: %s\n", Name, human.Safe(err.Error()))
	return cli.ExitRuntime
}

// Commands are what completion scripts know of every tool, and of ctxkit itself.
func Commands() ([]completion.Command, error) {
	var cmds []completion.Command
	var words []string
	for _, tool := range Tools() {
		flags, files, err := cli.Flags(tool)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool.Name, err)
		}
		cmds = append(cmds, completion.Command{Name: tool.Name, Flags: flags, Files: files})
		words = append(words, strings.TrimPrefix(tool.Name, "ctx-"))
	}
	words = append(words, "link", "completion")
	own := []cli.FlagSpec{{Long: "help", Short: 'h', Help: "Show the tools and commands."}, {Long: "version", Help: "Print the version and exit."}}
	return append(cmds, completion.Command{Name: Name, Flags: own, Files: true, Words: words}), nil
}

// completions prints the scripts for one shell, or writes one file per command to a
// directory (each created safely: a temp file renamed into place).
func completions(args []string, stdout, stderr io.Writer) int {
	const use = "usage: ctxkit completion bash|zsh|fish [--dir DIR]"
	var shell, dir string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--dir" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasPrefix(a, "--dir="):
			dir = strings.TrimPrefix(a, "--dir=")
		case strings.HasPrefix(a, "-") || shell != "":
			return fail(stderr, fmt.Sprintf("unexpected argument %q", a), use)
		default:
			shell = a
		}
	}
	if shell == "" {
		return fail(stderr, "completion needs a shell", use)
	}
	cmds, err := Commands()
	if err != nil {
		return runtimeFail(stderr, err)
	}
	for _, c := range cmds {
		script, err := completion.Script(shell, c)
		if err != nil {
			return fail(stderr, err.Error(), use)
		}
		if dir == "" {
			fmt.Fprint(stdout, script)
			continue
		}
		// 0644: completion folders are read by every user's shell (/usr/share/...).
		if err := safefile.WriteFileMode(filepath.Join(dir, completion.FileName(shell, c.Name)), []byte(script), 0o644); err != nil {
			return runtimeFail(stderr, err)
		}
	}
	return cli.ExitOK
}
