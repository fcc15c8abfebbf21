// Package toolvocab is ctxkit's one vocabulary of agent tools: which tool names read a
// file, search or list files, edit or write one, run a shell command, or are an editor
// whose "command" argument says what it does, and which input keys hold a path. ctx-snip
// (what supersedes what), ctx-budget (which results are file contents), ctx-summarize
// (what was read, changed, run) and ctx-count (which files a session touched) all ask it,
// so a tool name added here is known to every one of them.
//
// Names are matched lower-cased: agents spell the same tool Read, read or READ.
package toolvocab

import "strings"

// readTools maps the lower-cased names of file-reading tools to how they read: windowed
// tools show a part of the file even without a range argument (SWE-agent's open shows 100
// lines); many read several files at once and name them in one list, not a path key.
var readTools = map[string]struct{ windowed, many bool }{
	"read":            {},            // Claude Code, generic
	"read_file":       {},            // Cline, Gemini CLI, many MCP servers
	"readfile":        {},            //
	"view_file":       {},            //
	"open_file":       {},            //
	"file_read":       {},            //
	"notebookread":    {},            // Claude Code
	"read_many_files": {many: true},  // Gemini CLI
	"open":            {true, false}, // SWE-agent
	"goto":            {true, false}, // SWE-agent: the open file at a line
	"scroll_up":       {true, false}, // SWE-agent
	"scroll_down":     {true, false}, // SWE-agent
	"view":            {},            // generic
}

// searchTools are the lower-cased names of search and listing tools.
var searchTools = map[string]bool{
	"grep": true, "glob": true, "ls": true, // Claude Code
	"search_files": true, "list_files": true, // Cline
	"search_file": true, "search_dir": true, "find_file": true, // SWE-agent
	"search": true, "find": true, "list_dir": true, "list_directory": true, "grep_search": true,
	"file_search": true, "codebase_search": true, "glob_search": true, "find_files": true,
	"websearch": true, "web_search": true,
}

// shellTools are the lower-cased names of tools that run a shell command.
var shellTools = map[string]bool{
	"bash": true, "shell": true, "local_shell": true, "container.exec": true, "execute_bash": true,
	"exec_command": true, "shell_command": true, "run_terminal_cmd": true, "execute_command": true,
	"run_shell_command": true, "terminal": true,
}

// editorTools take a "command" argument: "view" reads a file, the others (create,
// str_replace, insert, undo_edit) change it and show a snippet of it (OpenHands,
// SWE-agent, Anthropic's text editor tool).
var editorTools = map[string]bool{"str_replace_editor": true, "str_replace_based_edit_tool": true, "text_editor": true}

// editTools are the lower-cased names of tools that edit or write the file a path key
// names (SWE-agent's edit names none: it edits the open file).
var editTools = map[string]bool{
	"edit": true, "multiedit": true, "write": true, "notebookedit": true, // Claude Code
	"write_to_file": true, "replace_in_file": true, // Cline
	"apply_diff": true, "insert_content": true, "search_replace": true, // Roo Code
	"write_file": true, "edit_file": true, "create_file": true,
}

// PathKeys name the input key that holds a file path, in order of preference.
var PathKeys = []string{"file_path", "path", "filename", "file_name", "notebook_path", "target_file", "file", "absolute_path", "relative_path"}

// EditorView is the value of an editor's "command" argument that reads a file.
const EditorView = "view"

// Read reports whether the tool reads files, and how: windowed (a part even without a
// range argument) or many (several files, named in a list).
func Read(name string) (ok, windowed, many bool) {
	r, ok := readTools[strings.ToLower(name)]
	return ok, r.windowed, r.many
}

// Search reports whether the tool searches or lists files.
func Search(name string) bool { return searchTools[strings.ToLower(name)] }

// Shell reports whether the tool runs a shell command.
func Shell(name string) bool { return shellTools[strings.ToLower(name)] }

// Editor reports whether the tool is an editor whose "command" argument says what it
// does (EditorView reads).
func Editor(name string) bool { return editorTools[strings.ToLower(name)] }

// Edit reports whether the tool edits or writes a file.
func Edit(name string) bool { return editTools[strings.ToLower(name)] }

// ShowsFile reports whether the tool's results are a file's contents: a read shows the
// file, an editor or an edit the part it viewed or changed, which an agent quotes back
// byte for byte when it edits.
func ShowsFile(name string) bool {
	ok, _, _ := Read(name)
	return ok || Editor(name) || Edit(name)
}
