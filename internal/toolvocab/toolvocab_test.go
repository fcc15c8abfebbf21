package toolvocab

import "testing"

// TestVocabulary: names are matched whatever their case, each table answers for its own
// names only, and a file's contents are what reads, editors and edits show, not what a
// shell or a search prints.
func TestVocabulary(t *testing.T) {
	for _, c := range []struct {
		name                                   string
		read, windowed, many                   bool
		search, shell, editor, edit, showsFile bool
	}{
		{name: "Read", read: true, showsFile: true},
		{name: "READ_FILE", read: true, showsFile: true},
		{name: "open", read: true, windowed: true, showsFile: true},
		{name: "read_many_files", read: true, many: true, showsFile: true},
		{name: "str_replace_editor", editor: true, showsFile: true},
		{name: "Text_Editor", editor: true, showsFile: true},
		{name: "MultiEdit", edit: true, showsFile: true},
		{name: "write_to_file", edit: true, showsFile: true},
		{name: "Bash", shell: true},
		{name: "container.exec", shell: true},
		{name: "Grep", search: true},
		{name: "search_dir", search: true},
		{name: "WebFetch"},
		{name: "apply_patch"},
	} {
		read, windowed, many := Read(c.name)
		if read != c.read || windowed != c.windowed || many != c.many || Search(c.name) != c.search || Shell(c.name) != c.shell ||
			Editor(c.name) != c.editor || Edit(c.name) != c.edit || ShowsFile(c.name) != c.showsFile {
			t.Errorf("%s: read %v windowed %v many %v search %v shell %v editor %v edit %v shows a file %v, want %+v", c.name,
				read, windowed, many, Search(c.name), Shell(c.name), Editor(c.name), Edit(c.name), ShowsFile(c.name), c)
		}
	}
	// A name is in one table only: what a call does is not ambiguous.
	for _, tables := range []map[string]bool{searchTools, shellTools, editorTools, editTools} {
		for n := range tables {
			if _, ok := readTools[n]; ok {
				t.Errorf("%s is a read and something else", n)
			}
		}
	}
	for n := range searchTools {
		if shellTools[n] || editorTools[n] || editTools[n] {
			t.Errorf("%s is a search and something else", n)
		}
	}
	for n := range editTools {
		if shellTools[n] || editorTools[n] {
			t.Errorf("%s is an edit and something else", n)
		}
	}
}
