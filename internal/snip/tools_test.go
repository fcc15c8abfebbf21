package snip

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/human"
)

func TestClassify(t *testing.T) {
	none := Tools{}
	tests := []struct {
		name, tool, args string
		extra            Tools
		class            Class
		file             string
		whole            bool
		arg              string
	}{
		// Claude Code.
		{"cc read", "Read", `{"file_path":"/repo/main.go"}`, none, Read, "/repo/main.go", true, "/repo/main.go"},
		{"cc read range", "Read", `{"file_path":"/repo/main.go","offset":10,"limit":50}`, none, Read, "/repo/main.go", false, "/repo/main.go"},
		{"cc read unclean", "Read", `{"file_path":"/repo/./a/../main.go"}`, none, Read, "/repo/main.go", true, "/repo/./a/../main.go"},
		{"cc grep", "Grep", `{"pattern":"TODO","path":"/repo"}`, none, Search, "", false, "TODO"},
		{"cc glob", "Glob", `{"pattern":"**/*.go"}`, none, Search, "", false, "**/*.go"},
		{"cc ls", "LS", `{"path":"/repo"}`, none, Search, "", false, "/repo"},
		{"cc bash cat", "Bash", `{"command":"cat /repo/go.mod","description":"show go.mod"}`, none, Read, "/repo/go.mod", true, "cat /repo/go.mod"},
		{"cc bash head", "Bash", `{"command":"head -20 js/drone.js"}`, none, Read, "js/drone.js", false, "head -20 js/drone.js"},
		{"cc bash grep", "Bash", `{"command":"grep -rn foo src 2>/dev/null | head -20"}`, none, Search, "", false, "grep -rn foo src 2>/dev/null | head -20"},
		{"cc bash find", "Bash", `{"command":"find . -type d -maxdepth 2 | grep -v \".git\""}`, none, Search, "", false, `find . -type d -maxdepth 2 | grep -v ".git"`},
		{"cc bash find delete", "Bash", `{"command":"find . -name '*.tmp' -delete"}`, none, Other, "", false, "find . -name '*.tmp' -delete"},
		{"cc bash test", "Bash", `{"command":"go test ./..."}`, none, Other, "", false, "go test ./..."},
		{"cc bash chain", "Bash", `{"command":"cat a.go && rm a.go"}`, none, Other, "", false, "cat a.go && rm a.go"},
		{"cc bash redirect", "Bash", `{"command":"cat a.go > b.go"}`, none, Other, "", false, "cat a.go > b.go"},
		{"cc bash subst", "Bash", `{"command":"cat $(ls *.go)"}`, none, Other, "", false, "cat $(ls *.go)"},
		{"cc bash cd", "Bash", `{"command":"cd /repo && cat go.mod"}`, none, Read, "/repo/go.mod", true, "cd /repo && cat go.mod"},
		{"cc edit", "Edit", `{"file_path":"/repo/main.go","old_string":"a","new_string":"b"}`, none, Other, "", false, "/repo/main.go"},
		// Codex.
		{"codex sed", "shell", `{"command":["bash","-lc","sed -n '1,222p' internal/server/handler.go"],"workdir":"/repo"}`, none, Read, "/repo/internal/server/handler.go", false, "sed -n '1,222p' internal/server/handler.go"},
		{"codex cat", "shell", `{"command":["bash","-lc","cat internal/x.go"],"workdir":"/repo"}`, none, Read, "/repo/internal/x.go", true, "cat internal/x.go"},
		{"codex rg", "shell", `{"command":["bash","-lc","rg -n 'useSession' internal/"],"workdir":"/repo"}`, none, Search, "", false, "rg -n 'useSession' internal/"},
		{"codex argv", "shell", `{"command":["ls","-la"]}`, none, Search, "", false, "ls -la"},
		{"codex sed -i", "shell", `{"command":["bash","-lc","sed -i 's/a/b/' x.go"]}`, none, Other, "", false, "sed -i 's/a/b/' x.go"},
		{"codex sed no -n", "shell", `{"command":["bash","-lc","sed 's/a/b/' x.go"]}`, none, Other, "", false, "sed 's/a/b/' x.go"},
		{"codex local_shell", "local_shell", `{"type":"exec","command":["cat","/etc/hosts"]}`, none, Read, "/etc/hosts", true, "cat /etc/hosts"},
		{"codex local_shell action", "local_shell", `{"action":{"type":"exec","command":["rg","x"],"working_directory":"/r"}}`, none, Search, "", false, "rg x"},
		{"codex exec_command", "exec_command", `{"cmd":"git grep -n foo"}`, none, Search, "", false, "git grep -n foo"},
		{"apply_patch", "apply_patch", `{"input":"*** Begin Patch\n*** Update File: a.go\n"}`, none, Other, "", false, "*** Begin Patch\n*** Update File: a.go\n"},
		{"apply_patch free text", "apply_patch", "*** Begin Patch", none, Other, "", false, ""},
		// OpenHands.
		{"openhands view", "str_replace_editor", `{"command":"view","path":"/w/a.py"}`, none, Read, "/w/a.py", true, "/w/a.py"},
		{"openhands view range", "str_replace_editor", `{"command":"view","path":"/w/a.py","view_range":[1,40]}`, none, Read, "/w/a.py", false, "/w/a.py"},
		{"openhands edit", "str_replace_editor", `{"command":"str_replace","path":"/w/a.py","old_str":"a"}`, none, Other, "", false, "/w/a.py"},
		{"openhands bash", "execute_bash", `{"command":"grep -r foo ."}`, none, Search, "", false, "grep -r foo ."},
		// SWE-agent.
		{"swe open", "open", `{"path":"src/fields.py","line_number":1474}`, none, Read, "src/fields.py", false, "src/fields.py"},
		{"swe open top", "open", `{"path":"setup.py"}`, none, Read, "setup.py", false, "setup.py"},
		{"swe goto", "goto", `{"line_number":20}`, none, Read, "", false, ""},
		// Gemini CLI: several files in one list, so only an identical call supersedes one.
		{"gemini read_many_files", "read_many_files", `{"paths":["a.py","b.py"]}`, none, Read, "", false, ""},
		{"swe scroll", "scroll_down", `{}`, none, Read, "", false, ""},
		{"swe search_dir", "search_dir", `{"search_term":"TimeDelta","dir":"src"}`, none, Search, "", false, "TimeDelta"},
		{"swe find_file", "find_file", `{"file_name":"fields.py","dir":"src"}`, none, Search, "", false, "fields.py"},
		{"swe bash", "bash", `{"command":"cat reproduce.py"}`, none, Read, "reproduce.py", true, "cat reproduce.py"},
		// Cline.
		{"cline read", "read_file", `{"path":"src/app.ts"}`, none, Read, "src/app.ts", true, "src/app.ts"},
		{"cline search", "search_files", `{"path":"src","regex":"foo","file_pattern":"*.ts"}`, none, Search, "", false, "foo"},
		{"cline list", "list_files", `{"path":"src","recursive":true}`, none, Search, "", false, "src"},
		{"cline command", "execute_command", `{"command":"cat package.json","requires_approval":false}`, none, Read, "package.json", true, "cat package.json"},
		// Generic and extended.
		{"generic search", "search", `{"query":"retry policy"}`, none, Search, "", false, "retry policy"},
		{"unknown", "get_reservation_details", `{"reservation_id":"ABC123"}`, none, Other, "", false, "ABC123"},
		{"extra read", "get_reservation_details", `{"reservation_id":"ABC123"}`, Tools{Read: []string{"get_reservation_details"}}, Read, "", false, "ABC123"},
		{"extra read path", "fetch_doc", `{"path":"/d/x.md"}`, Tools{Read: []string{"fetch_doc"}}, Read, "/d/x.md", true, "/d/x.md"},
		{"extra search", "search_direct_flight", `{"origin":"JFK","destination":"SEA"}`, Tools{Search: []string{"search_direct_flight"}}, Search, "", false, "JFK"},
		{"string args", "read_file", `"{\"path\":\"a.go\"}"`, none, Read, "a.go", true, "a.go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(tc.tool, tc.args, tc.extra)
			if c.Class != tc.class || c.File != tc.file || c.Whole != tc.whole || c.Arg != tc.arg {
				t.Errorf("Classify(%s, %s) = class %s, file %q, whole %v, arg %q; want %s, %q, %v, %q",
					tc.tool, tc.args, c.Class, c.File, c.Whole, c.Arg, tc.class, tc.file, tc.whole, tc.arg)
			}
			if c.Class != Other && c.Key == "" && c.File != "" {
				t.Errorf("a %s with a file has no key", c.Class)
			}
		})
	}
}

func TestSameArgumentsSameKey(t *testing.T) {
	a := Classify("Grep", `{"pattern":"x","path":"/r"}`, Tools{})
	b := Classify("Grep", `{ "path": "/r",  "pattern": "x" }`, Tools{})
	c := Classify("Grep", `{"pattern":"x","path":"/s"}`, Tools{})
	if a.Key != b.Key {
		t.Errorf("same arguments in another order: keys %q and %q", a.Key, b.Key)
	}
	if a.Key == c.Key {
		t.Errorf("different arguments, same key %q", a.Key)
	}
	// A description does not make a read different.
	r1 := Classify("Read", `{"file_path":"/a","offset":5,"description":"x"}`, Tools{})
	r2 := Classify("Read", `{"file_path":"/a","offset":5}`, Tools{})
	if r1.Key != r2.Key {
		t.Errorf("description changed the key: %q vs %q", r1.Key, r2.Key)
	}
	// Spacing inside values does not count either.
	v1 := Classify("str_replace_editor", `{"command":"view","path":"/a","view_range":[1, 40]}`, Tools{})
	v2 := Classify("str_replace_editor", `{"command":"view","path":"/a","view_range":[1,40]}`, Tools{})
	if v1.Key != v2.Key {
		t.Errorf("spacing changed the key: %q vs %q", v1.Key, v2.Key)
	}
	// goto shows whichever file is open: two gotos are not the same read.
	if g := Classify("goto", `{"line_number":5}`, Tools{}); g.Key != "" {
		t.Errorf("goto has key %q", g.Key)
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{`cat a.go`, `cat|a.go`, true},
		{`cat "a b.go"`, `cat|a b.go`, true},
		{`grep -n 'x|y' f | head`, `grep|-n|x|y|f|"|"|head`, true},
		{`a && b`, `a|&&|b`, true},
		{`a; b`, `a|;|b`, true},
		{`ls 2>/dev/null`, `ls`, true},
		{`ls 2>&1 | wc -l`, `ls|"|"|wc|-l`, true},
		{`echo $(date)`, ``, false},
		{"echo `date`", ``, false},
		{`cat 'unterminated`, ``, false},
		{`cat a\ b`, `cat|a b`, true},
		{`x > y`, `x|>|y`, true},
	}
	for _, tc := range tests {
		words, ok := shellWords(tc.in)
		if ok != tc.ok {
			t.Errorf("shellWords(%q) ok = %v", tc.in, ok)
			continue
		}
		for i, w := range words {
			if w == "|" {
				words[i] = `"|"`
			}
		}
		if got := strings.Join(words, "|"); ok && got != tc.want {
			t.Errorf("shellWords(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	if got := human.Label("abc", 5); got != "abc" {
		t.Errorf("clip short = %q", got)
	}
	if got := human.Label("a  b\n c", 10); got != "a b c" {
		t.Errorf("clip spaces = %q", got)
	}
	got := human.Label(strings.Repeat("日本", 10), 5)
	if got != "日本日本…" {
		t.Errorf("clip = %q", got)
	}
}
