package snip

import (
	"path"
	"strings"
)

// script is what a shell command does, as far as staleness goes.
type script struct {
	class Class
	file  string // the file a read shows, "" when unknown
	whole bool   // the read shows the whole file (plain cat)
}

// readPrograms show a file or part of it; searchPrograms list or search files.
var (
	readPrograms   = map[string]bool{"cat": true, "head": true, "tail": true, "sed": true, "nl": true, "bat": true, "less": true, "more": true}
	searchPrograms = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "rg": true, "ag": true, "ack": true,
		"find": true, "fd": true, "ls": true, "tree": true, "locate": true}
)

// classifyScript recognises the read-only commands whose output goes stale: a file shown
// with cat, head, tail, sed -n or nl, or a search with grep, rg, find, ls and the like,
// optionally after `cd DIR &&` and piped through other programs. Anything that chains
// further commands, substitutes commands or redirects output to a file is Other: it may
// change what a later read shows, so it is never taken for a read.
func classifyScript(cmd, dir string) script {
	words, ok := shellWords(strings.TrimSpace(cmd))
	if !ok || len(words) == 0 {
		return script{}
	}
	// Leading "cd DIR &&" steps set the directory.
	for len(words) >= 3 && words[0] == "cd" && words[2] == "&&" {
		dir = resolve(dir, words[1])
		words = words[3:]
	}
	var segments [][]string
	start := 0
	for i, w := range words {
		switch w {
		case "|":
			segments = append(segments, words[start:i])
			start = i + 1
		case "&&", "||", ";", "&", ">", ">>", "<", "<<", "\n", "|&":
			return script{}
		}
	}
	segments = append(segments, words[start:])
	first := segments[0]
	for len(first) > 0 && isAssignment(first[0]) {
		first = first[1:]
	}
	if len(first) == 0 {
		return script{}
	}
	prog := path.Base(first[0])
	args := first[1:]
	if prog == "git" && len(args) > 0 && (args[0] == "grep" || args[0] == "ls-files") {
		return script{class: Search}
	}
	switch {
	case searchPrograms[prog]:
		for _, a := range args {
			if a == "-delete" || a == "-exec" || a == "-execdir" || a == "-ok" {
				return script{}
			}
		}
		return script{class: Search}
	case readPrograms[prog]:
		operands := fileOperands(prog, args)
		if prog == "sed" && operands == nil {
			return script{} // sed without -n, or in place: an edit
		}
		s := script{class: Read}
		if len(operands) == 1 {
			s.file = resolve(dir, operands[0])
			s.whole = prog == "cat" && len(segments) == 1
		}
		return s
	}
	return script{}
}

// fileOperands lists the file arguments of a read program. For sed it is nil unless the
// command only prints (-n, no -i).
func fileOperands(prog string, args []string) []string {
	var ops []string
	quiet, script := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if prog == "sed" {
				if strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "--in-place") {
					return nil
				}
				if a == "-n" || a == "--quiet" || a == "--silent" {
					quiet = true
				}
				if a == "-e" && i+1 < len(args) {
					i++
					script = true
				}
			}
			if (prog == "head" || prog == "tail") && (a == "-n" || a == "-c") && i+1 < len(args) {
				i++ // the count
			}
		case prog == "sed" && !script:
			script = true
		default:
			ops = append(ops, a)
		}
	}
	if prog == "sed" && (!quiet || ops == nil) {
		return nil
	}
	return ops
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	return eq > 0 && !strings.ContainsAny(w[:eq], "/-.")
}

func resolve(dir, p string) string {
	if dir != "" && !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
		p = path.Join(dir, p)
	}
	return path.Clean(p)
}

// shellWords splits a command into words the way a POSIX shell would for simple
// commands: quotes and backslashes group, and the operators | || & && ; < > >> and a
// line break are words of their own. ok is false for what this reader does not follow
// (command substitution, backquotes, unbalanced quotes). Redirections of stderr
// ("2>/dev/null", "2>&1") are dropped: they do not change what the command shows.
func shellWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t':
			flush()
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
					i++
					cur.WriteByte(s[i])
				case s[i] == '$' && i+1 < len(s) && s[i+1] == '(', s[i] == '`':
					return nil, false
				default:
					cur.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
					inWord = true
				}
			}
		case '`':
			return nil, false
		case '$':
			if i+1 < len(s) && s[i+1] == '(' {
				return nil, false
			}
			cur.WriteByte(c)
			inWord = true
		case '2':
			if !inWord && strings.HasPrefix(s[i:], "2>") {
				rest := s[i+2:]
				switch {
				case strings.HasPrefix(rest, "&1"):
					i += 3
					continue
				case strings.HasPrefix(rest, "/dev/null"):
					i += 1 + len("/dev/null")
					continue
				}
			}
			cur.WriteByte(c)
			inWord = true
		case '|', '&', ';', '<', '>', '\n':
			flush()
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c && c != ';' && c != '\n' || c == '|' && s[i+1] == '&') {
				op += string(s[i+1])
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, true
}
