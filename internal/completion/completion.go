// Package completion writes shell completion scripts for bash, zsh and fish from the flags
// of each tool's command-line model (cli.Flags), so that what a shell proposes is what
// --help lists. One script per command and shell, named and placed as each shell looks for
// them: bash-completion's completions/NAME, zsh's _NAME on $fpath, fish's NAME.fish.
package completion

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/internal/cli"
)

// Command is what a completion script knows of one command.
type Command struct {
	Name  string         // "ctx-count"
	Flags []cli.FlagSpec // its flags
	Files bool           // takes file arguments
	Words []string       // words it takes first instead of files (ctxkit's tool names)
}

// Shells are the shells a script can be written for.
var Shells = []string{"bash", "zsh", "fish"}

// FileName is the name a shell looks for the script of command under.
func FileName(shell, command string) string {
	switch shell {
	case "zsh":
		return "_" + command
	case "fish":
		return command + ".fish"
	}
	return command
}

// Script writes command's completion script for shell.
func Script(shell string, c Command) (string, error) {
	switch shell {
	case "bash":
		return bash(c), nil
	case "zsh":
		return zsh(c), nil
	case "fish":
		return fish(c), nil
	}
	return "", fmt.Errorf("no completions for shell %q (one of %s)", shell, strings.Join(Shells, ", "))
}

// header says where a script comes from.
func header(shell string, c Command) string {
	return fmt.Sprintf("# %s completion for %s, written by 'ctxkit completion %s' from its flags.\n", shell, c.Name, shell)
}

// FuncName is the name of the bash function that completes command.
func FuncName(command string) string {
	return "_ctxkit_" + strings.NewReplacer("-", "_", ".", "_").Replace(command)
}

// singleQuoted quotes s for a POSIX shell (and fish, which reads '\” the same way).
func singleQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func bash(c Command) string {
	var b strings.Builder
	b.WriteString(header("bash", c))
	fn := FuncName(c.Name)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	// bash splits --flag=value at the "=" (COMP_WORDBREAKS): the value follows a "=" word
	b.WriteString("\tif [[ $cur == = ]]; then\n\t\tcur=\n\telif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then\n\t\tprev=${COMP_WORDS[COMP_CWORD-2]}\n\tfi\n")
	// one arm per way of completing a value, listing the flags that complete so
	var actions []string
	arms := map[string][]string{}
	for _, f := range c.Flags {
		if !f.Value {
			continue
		}
		var action string
		switch {
		case len(f.Enum) > 0:
			action = fmt.Sprintf("COMPREPLY=($(compgen -W %s -- \"$cur\"))", singleQuoted(strings.Join(f.Enum, " ")))
		case f.Names == "dir":
			action = "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$cur\"))"
		case f.Names == "file":
			action = "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))"
		default:
			action = "COMPREPLY=()" // a number, a name: nothing to propose
		}
		if arms[action] == nil {
			actions = append(actions, action)
		}
		arms[action] = append(arms[action], names(f)...)
	}
	if len(actions) > 0 {
		b.WriteString("\tcase $prev in\n")
		for _, a := range actions {
			fmt.Fprintf(&b, "\t%s)\n\t\t%s\n\t\treturn ;;\n", strings.Join(arms[a], "|"), a)
		}
		b.WriteString("\tesac\n")
	}
	var all []string
	for _, f := range c.Flags {
		all = append(all, names(f)...)
	}
	fmt.Fprintf(&b, "\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\t\treturn\n\tfi\n", singleQuoted(strings.Join(all, " ")))
	if len(c.Words) > 0 {
		fmt.Fprintf(&b, "\tif [[ $COMP_CWORD -eq 1 ]]; then\n\t\tCOMPREPLY=($(compgen -W %s -- \"$cur\"))\n\t\treturn\n\tfi\n", singleQuoted(strings.Join(c.Words, " ")))
	}
	if c.Files {
		b.WriteString("\tcompopt -o filenames 2>/dev/null\n\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n")
	} else {
		b.WriteString("\tCOMPREPLY=()\n")
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "complete -F %s %s\n", fn, c.Name)
	return b.String()
}

// names are a flag's spellings: "-o" and "--output".
func names(f cli.FlagSpec) []string {
	var n []string
	if f.Short != 0 {
		n = append(n, "-"+string(f.Short))
	}
	return append(n, "--"+f.Long)
}

// zshDescription escapes a help text for an _arguments spec: inside its [...] the
// brackets, and the colons and backslashes the spec reads.
func zshDescription(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(firstSentence(s))
}

// firstSentence is a help text up to its first ". " (a shell's menu has one line for it).
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

func zsh(c Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n", c.Name)
	b.WriteString(header("zsh", c))
	b.WriteString("_arguments -s -S \\\n")
	for _, f := range c.Flags {
		action := ""
		if f.Value {
			switch {
			case len(f.Enum) > 0:
				action = ":" + f.Long + ":(" + strings.Join(f.Enum, " ") + ")"
			case f.Names == "dir":
				action = ":" + f.Long + ":_files -/"
			case f.Names == "file":
				action = ":" + f.Long + ":_files"
			default:
				action = ":" + f.Long + ": "
			}
		}
		desc := "[" + zshDescription(f.Help) + "]"
		long := "--" + f.Long
		if f.Value {
			long += "="
		}
		var spec string
		if f.Short != 0 {
			short := "-" + string(f.Short)
			if f.Value {
				short += "+"
			}
			// the two spellings exclude each other
			spec = fmt.Sprintf("'(-%c --%s)'{%s,%s}%s", f.Short, f.Long, short, long, singleQuoted(desc+action))
		} else {
			spec = singleQuoted(long + desc + action)
		}
		fmt.Fprintf(&b, "\t%s \\\n", spec)
	}
	switch {
	case len(c.Words) > 0:
		fmt.Fprintf(&b, "\t%s \\\n\t'*:file:_files'\n", singleQuoted("1:command:("+strings.Join(c.Words, " ")+")"))
	case c.Files:
		b.WriteString("\t'*:file:_files'\n")
	default:
		b.WriteString("\t\n")
	}
	return b.String()
}

func fish(c Command) string {
	var b strings.Builder
	b.WriteString(header("fish", c))
	for _, f := range c.Flags {
		fmt.Fprintf(&b, "complete -c %s", c.Name)
		if f.Short != 0 {
			fmt.Fprintf(&b, " -s %c", f.Short)
		}
		fmt.Fprintf(&b, " -l %s", f.Long)
		if f.Value {
			switch {
			case len(f.Enum) > 0:
				fmt.Fprintf(&b, " -x -a %s", singleQuoted(strings.Join(f.Enum, " ")))
			case f.Names == "dir":
				b.WriteString(" -x -a '(__fish_complete_directories)'")
			case f.Names == "file":
				b.WriteString(" -r -F")
			default:
				b.WriteString(" -x")
			}
		}
		fmt.Fprintf(&b, " -d %s\n", singleQuoted(firstSentence(f.Help)))
	}
	if len(c.Words) > 0 {
		words := append([]string(nil), c.Words...)
		sort.Strings(words)
		fmt.Fprintf(&b, "complete -c %s -n __fish_use_subcommand -f -a %s\n", c.Name, singleQuoted(strings.Join(words, " ")))
	}
	if !c.Files && len(c.Words) == 0 {
		fmt.Fprintf(&b, "complete -c %s -f\n", c.Name)
	}
	return b.String()
}
