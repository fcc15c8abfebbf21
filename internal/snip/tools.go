package snip

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/toolvocab"
)

// Class says what a tool call does, as far as staleness goes.
type Class uint8

// Call classes.
const (
	// Other calls are only ever cleared as old results.
	Other Class = iota
	// Read calls show a file (or part of one); a later read of the same file supersedes them.
	Read
	// Search calls list or search files; a later identical search supersedes them, and only
	// the newest few of each search tool are kept.
	Search
)

func (c Class) String() string {
	switch c {
	case Read:
		return "read"
	case Search:
		return "search"
	}
	return "other"
}

// Call is what the tier knows of one tool call.
type Call struct {
	Tool  string
	Class Class
	// File is the cleaned path a read shows, "" when unknown.
	File string
	// Whole is set when the read shows the whole file (no offset, limit or range), so it
	// supersedes every earlier read of the file; a partial read supersedes only identical ones.
	Whole bool
	// Key identifies the call's arguments: two calls with the same tool and key are the same
	// read or search.
	Key string
	// Arg is the call's main argument for people and placeholders: a path, a pattern, a
	// command. It may be "".
	Arg string
}

// Tools extends the built-in tables with tool names from the command line.
type Tools struct {
	Read, Search []string
}

// argKeys name the argument to show as a call's main argument, in order of preference.
var argKeys = []string{"file_path", "path", "filename", "file_name", "notebook_path", "target_file", "file",
	"pattern", "query", "search_term", "regex", "command", "cmd", "url", "dir", "directory"}

// searchArgKeys name a search's main argument: what it looks for before where.
var searchArgKeys = []string{"pattern", "query", "search_term", "regex", "file_name", "glob", "path", "dir", "directory"}

// ignoredKeys never make two calls different: they describe a call, they do not change
// what it shows.
var ignoredKeys = map[string]bool{"description": true, "explanation": true, "timeout": true, "timeout_ms": true}

// Classify works out what a tool call does from its name and its arguments (a JSON object,
// or for a few tools a JSON string of one). extra adds tool names given on the command line.
func Classify(name, args string, extra Tools) Call {
	c := Call{Tool: name}
	if t := strings.TrimSpace(args); strings.HasPrefix(t, `"`) {
		// Arguments held as a JSON string of an object (Chat Completions, Responses).
		args = gjson.Parse(t).String()
	}
	obj := gjson.Parse(args)
	if !obj.IsObject() {
		obj = gjson.Result{}
	}
	c.Arg = mainArg(obj)
	switch {
	case contains(extra.Read, name):
		c.readOf(obj, false)
		if c.File == "" {
			c.Key = canonical(obj, nil)
		}
	case contains(extra.Search, name):
		c.search(obj)
	case toolvocab.Shell(name):
		c.shell(obj)
	case toolvocab.Editor(name):
		if obj.Get("command").String() == toolvocab.EditorView {
			c.readOf(obj, false)
		}
	case toolvocab.Search(name):
		c.search(obj)
	default:
		if ok, windowed, _ := toolvocab.Read(name); ok {
			c.readOf(obj, windowed)
		}
	}
	return c
}

func contains(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// readOf fills in a file read: the path and, from the other arguments, whether it reads
// the whole file.
func (c *Call) readOf(obj gjson.Result, windowed bool) {
	c.Class = Read
	skip := map[string]bool{"command": obj.Get("command").String() == toolvocab.EditorView}
	for _, k := range toolvocab.PathKeys {
		if v := obj.Get(k); v.Type == gjson.String && v.Str != "" {
			c.File = path.Clean(v.Str)
			c.Arg = v.Str
			skip[k] = true
			break
		}
	}
	rest := canonical(obj, skip)
	if c.File == "" && windowed {
		return // SWE-agent's goto and scroll show whichever file is open: no key
	}
	c.Key = c.File + "\x00" + rest
	c.Whole = c.File != "" && !windowed && rest == "{}"
}

// search fills in a search: its key is all of its arguments.
func (c *Call) search(obj gjson.Result) {
	c.Class, c.Key = Search, canonical(obj, nil)
	for _, k := range searchArgKeys {
		if v := obj.Get(k); v.Type == gjson.String && v.Str != "" {
			c.Arg = v.Str
			return
		}
	}
}

// shell classifies a shell tool call by its command.
func (c *Call) shell(obj gjson.Result) {
	cmd, dir := shellCommand(obj)
	if cmd == "" {
		return
	}
	c.Arg = cmd
	sc := classifyScript(cmd, dir)
	switch sc.class {
	case Read:
		c.Class, c.File, c.Whole = Read, sc.file, sc.whole
		c.Key = sc.file + "\x00" + dir + "\x00" + cmd
	case Search:
		c.Class, c.Key = Search, dir+"\x00"+cmd
	}
}

// shellCommand finds the command a shell call runs and its working directory: a string
// (Claude Code's Bash, OpenHands), an argv array (Codex's shell, often ["bash","-lc",
// script]), or Codex's local_shell action.
func shellCommand(obj gjson.Result) (cmd, dir string) {
	for _, k := range []string{"workdir", "working_directory", "cwd"} {
		if v := obj.Get(k); v.Type == gjson.String {
			dir = v.Str
			break
		}
	}
	v := obj.Get("command")
	if !v.Exists() {
		v = obj.Get("cmd")
	}
	if !v.Exists() {
		v = obj.Get("action.command")
		if d := obj.Get("action.working_directory"); d.Type == gjson.String && dir == "" {
			dir = d.Str
		}
	}
	switch {
	case v.Type == gjson.String:
		return v.Str, dir
	case v.IsArray():
		var argv []string
		for _, a := range v.Array() {
			argv = append(argv, a.String())
		}
		return argvScript(argv), dir
	}
	return "", dir
}

// argvScript turns an argv into the script it runs: the script of `bash -lc SCRIPT`, or
// the words joined.
func argvScript(argv []string) string {
	if len(argv) == 3 {
		switch path.Base(argv[0]) {
		case "bash", "sh", "zsh", "dash":
			if f := argv[1]; strings.HasPrefix(f, "-") && strings.Contains(f, "c") {
				return argv[2]
			}
		}
	}
	return strings.Join(argv, " ")
}

// mainArg is the argument that says what a call is about, for people.
func mainArg(obj gjson.Result) string {
	if !obj.Exists() {
		return ""
	}
	for _, k := range argKeys {
		v := obj.Get(k)
		switch {
		case v.Type == gjson.String && v.Str != "":
			return v.Str
		case k == "command" && v.IsArray():
			var argv []string
			for _, a := range v.Array() {
				argv = append(argv, a.String())
			}
			return argvScript(argv)
		}
	}
	if v := obj.Get("action.command"); v.IsArray() {
		var argv []string
		for _, a := range v.Array() {
			argv = append(argv, a.String())
		}
		return argvScript(argv)
	}
	arg := ""
	obj.ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && v.Str != "" {
			arg = v.Str
			return false
		}
		return true
	})
	return arg
}

// canonical writes the object's members, sorted by key and without the skipped and
// ignored keys, as compact JSON: two calls with the same arguments in another order or
// spacing get the same key.
func canonical(obj gjson.Result, skip map[string]bool) string {
	type member struct{ k, v string }
	var ms []member
	obj.ForEach(func(k, v gjson.Result) bool {
		if key := k.String(); !skip[key] && !ignoredKeys[key] {
			ms = append(ms, member{key, compact(v.Raw)})
		}
		return true
	})
	sort.Slice(ms, func(i, j int) bool { return ms[i].k < ms[j].k })
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(m.k)
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(m.v)
	}
	b.WriteByte('}')
	return b.String()
}

func compact(raw string) string {
	if strings.ContainsAny(raw, " \t\r\n") {
		return gjson.Parse(raw).Get("@ugly").Raw
	}
	return raw
}
