// Package sessions finds the session logs coding agents keep on disk: Claude Code's
// (<config>/projects/<mangled working directory>/<uuid>.jsonl) and Codex's
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, the working directory in the first
// record). It answers "the newest session of this directory" (--latest) and "the recent
// sessions" (ctx-count --sessions); it reads folders and the first line of Codex logs,
// nothing else.
package sessions

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/tidwall/gjson"
)

// The agents whose sessions are found.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// Session is one session log.
type Session struct {
	Path  string
	Agent string // ClaudeCode or Codex
	// Dir is the working directory the session ran in: Codex records it; for Claude Code
	// it is the folder's name, which cannot be turned back into a path.
	Dir  string
	Mod  time.Time
	Size int64
}

// Where says where the agents keep their sessions, from the environment.
type Where struct {
	ClaudeDir string // CLAUDE_CONFIG_DIR, else ~/.claude
	CodexHome string // CODEX_HOME, else ~/.codex
}

// Locate reads the locations from getenv: CLAUDE_CONFIG_DIR (which Claude Code honours
// for its whole configuration folder, projects/ included) and CODEX_HOME, else under
// HOME. A location that cannot be known is "".
func Locate(getenv func(string) string) Where {
	home := getenv("HOME")
	w := Where{ClaudeDir: getenv("CLAUDE_CONFIG_DIR"), CodexHome: getenv("CODEX_HOME")}
	if w.ClaudeDir == "" && home != "" {
		w.ClaudeDir = filepath.Join(home, ".claude")
	}
	if w.CodexHome == "" && home != "" {
		w.CodexHome = filepath.Join(home, ".codex")
	}
	return w
}

// Query says which sessions to find.
type Query struct {
	// Agent is ClaudeCode, Codex, or "" for both.
	Agent string
	// Dirs are the working directory as a path, in each spelling it may have (the
	// logical one of $PWD and the physical one): a session of any of them is one of this
	// directory. None means every project.
	Dirs []string
	// Limit bounds the number found (newest first); 0 is no bound.
	Limit int
}

// Find lists the sessions of q, newest first (by modification time, then path). Folders
// that do not exist hold no session; other errors reading them are returned.
func Find(w Where, q Query) ([]Session, error) {
	var found []Session
	if q.Agent == "" || q.Agent == ClaudeCode {
		s, err := claudeSessions(w.ClaudeDir, q.Dirs)
		if err != nil {
			return nil, err
		}
		found = append(found, s...)
	}
	newest(found)
	if q.Agent == "" || q.Agent == Codex {
		// Codex's logs name their directory inside: read newest first, only as far as the
		// bound needs.
		s, err := codexSessions(w.CodexHome, q.Dirs, q.Limit)
		if err != nil {
			return nil, err
		}
		found = append(found, s...)
	}
	newest(found)
	if q.Limit > 0 && len(found) > q.Limit {
		found = found[:q.Limit]
	}
	return found, nil
}

func newest(s []Session) {
	slices.SortFunc(s, func(a, b Session) int {
		if c := b.Mod.Compare(a.Mod); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// Mangle is the folder name Claude Code gives the sessions of the working directory dir:
// every UTF-16 code unit that is not an ASCII letter or digit becomes '-' (so
// /Users/me/src/my_app is -Users-me-src-my-app, and a character outside the BMP two
// dashes), as its JavaScript replace(/[^a-zA-Z0-9]/g, "-") does. Past 200 characters it
// cuts the name and adds a hash we do not reproduce; projectDirs matches those by prefix.
func Mangle(dir string) string {
	var b strings.Builder
	for _, r := range dir {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteString(strings.Repeat("-", len(utf16.Encode([]rune{r}))))
		}
	}
	return b.String()
}

// maxMangled is the length past which Claude Code shortens a folder name.
const maxMangled = 200

// projectDirs are the folders of <claude>/projects that hold the sessions of dirs (all
// of them when dirs is empty). A folder matches when its name, mangled again, is the
// directory mangled: the same name, or one an older Claude Code wrote when it kept more
// characters ('_' among them). A shortened name matches by its first 200 characters.
func projectDirs(claude string, dirs []string) ([]string, error) {
	root := filepath.Join(claude, "projects")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) || claude == "" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, d := range dirs {
		want[Mangle(d)] = true
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			// A link to a project folder (a moved ~/.claude) is one too.
			if st, err := os.Stat(filepath.Join(root, e.Name())); err != nil || !st.IsDir() {
				continue
			}
		}
		name := Mangle(e.Name())
		ok := len(dirs) == 0 || want[name]
		for m := range want {
			ok = ok || len(m) > maxMangled && strings.HasPrefix(name, m[:maxMangled]+"-")
		}
		if ok {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}

// claudeSessions lists the logs of the project folders of dirs: <uuid>.jsonl directly in
// each. Subagents' logs are not sessions: <session>/subagents/ is not read, and older
// versions' agent-*.jsonl beside the sessions are skipped.
func claudeSessions(claude string, dirs []string) ([]Session, error) {
	projects, err := projectDirs(claude, dirs)
	if err != nil {
		return nil, err
	}
	var found []Session
	for _, p := range projects {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue // a project folder we cannot read holds no session we can count
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "agent-") {
				continue
			}
			if s, ok := stat(filepath.Join(p, name)); ok {
				s.Agent, s.Dir = ClaudeCode, filepath.Base(p)
				found = append(found, s)
			}
		}
	}
	return found, nil
}

// stat is the session at path when it is a regular file (a link to one counts).
func stat(path string) (Session, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return Session{}, false
	}
	return Session{Path: path, Mod: st.ModTime(), Size: st.Size()}, true
}

// codexSessions lists the rollouts under <codex>/sessions whose session_meta names one of
// dirs (every one when dirs is empty), newest first, at most limit (0: all).
func codexSessions(codex string, dirs []string, limit int) ([]Session, error) {
	if codex == "" {
		return nil, nil
	}
	root := filepath.Join(codex, "sessions")
	var all []Session
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && path == root && errors.Is(err, fs.ErrNotExist):
			return fs.SkipAll
		case err != nil:
			return nil // an unreadable folder holds no session we can read
		case d.IsDir() || !strings.HasPrefix(d.Name(), "rollout-") || !strings.HasSuffix(d.Name(), ".jsonl"):
			return nil
		}
		if s, ok := stat(path); ok {
			s.Agent = Codex
			all = append(all, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	newest(all)
	var found []Session
	for _, s := range all {
		s.Dir = codexDir(s.Path)
		if len(dirs) > 0 && !slices.Contains(dirs, s.Dir) {
			continue
		}
		found = append(found, s)
		if limit > 0 && len(found) == limit {
			break
		}
	}
	return found, nil
}

// maxMeta bounds how much of a rollout's first line is read for its working directory:
// the session_meta record holds the agent's instructions, some KB long.
const maxMeta = 1 << 20

// codexDir is the working directory a rollout's session_meta records, or "".
func codexDir(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	// ReadBytes stops at the bound: a first line cut there has no cwd we can trust.
	line, err := bufio.NewReader(io.LimitReader(f, maxMeta)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if gjson.GetBytes(line, "type").String() != "session_meta" {
		return ""
	}
	return gjson.GetBytes(line, "payload.cwd").String()
}

// Here is the working directory in the spellings a session may have recorded it with:
// the one $PWD names (what a shell shows) and the physical one (what getcwd returns, and
// so what Node's process.cwd() gives Claude Code), once each.
func Here(pwd string) []string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	if pwd != "" && filepath.IsAbs(pwd) && !slices.Contains(dirs, pwd) {
		if a, err := os.Stat(pwd); err == nil && len(dirs) > 0 {
			if b, err := os.Stat(dirs[0]); err == nil && os.SameFile(a, b) {
				dirs = append(dirs, pwd)
			}
		}
	}
	for _, d := range slices.Clone(dirs) {
		if real, err := filepath.EvalSymlinks(d); err == nil && !slices.Contains(dirs, real) {
			dirs = append(dirs, real)
		}
	}
	return dirs
}
