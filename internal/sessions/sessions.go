// Package sessions finds the session logs coding agents keep on disk: Claude Code's
// (<config>/projects/<mangled working directory>/<uuid>.jsonl, in each configuration
// folder) and Codex's
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, the working directory in the first
// record). It answers "the newest session of this directory" (--latest) and "the recent
// sessions" (ctx-count --sessions); it reads folders and the first line of Codex logs,
// nothing else.
package sessions

import (
	"bufio"
	"errors"
	"fmt"
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
	// ClaudeDirs are Claude Code's configuration folders, each with its projects/:
	// CLAUDE_CONFIG_DIR, else ~/.claude and $XDG_CONFIG_HOME/claude.
	ClaudeDirs []string
	CodexHome  string // CODEX_HOME, else ~/.codex
}

// Locate reads the locations from getenv. CLAUDE_CONFIG_DIR moves Claude Code's whole
// configuration folder, projects/ included; it may name several, separated by commas
// (one folder per account, or a copy from another machine), as ccusage reads it. Unset,
// both ~/.claude and $XDG_CONFIG_HOME/claude (~/.config/claude) are read: some Claude
// Code versions wrote there, and a user who ran one has sessions in both. CODEX_HOME
// moves ~/.codex. A location that cannot be known (no HOME) is left out, or "".
func Locate(getenv func(string) string) Where {
	home := getenv("HOME")
	var w Where
	if list := getenv("CLAUDE_CONFIG_DIR"); list != "" {
		for _, d := range strings.Split(list, ",") {
			if d = strings.TrimSpace(d); d != "" && !slices.Contains(w.ClaudeDirs, filepath.Clean(d)) {
				w.ClaudeDirs = append(w.ClaudeDirs, filepath.Clean(d))
			}
		}
	} else {
		config := getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(config) && home != "" { // (a relative one is ignored, as the XDG spec says)
			config = filepath.Join(home, ".config")
		}
		if home != "" {
			w.ClaudeDirs = append(w.ClaudeDirs, filepath.Join(home, ".claude"))
		}
		if filepath.IsAbs(config) {
			w.ClaudeDirs = append(w.ClaudeDirs, filepath.Join(config, "claude"))
		}
	}
	if w.CodexHome = getenv("CODEX_HOME"); w.CodexHome == "" && home != "" {
		w.CodexHome = filepath.Join(home, ".codex")
	}
	return w
}

// ClaudeProjects are the projects/ folders of w.ClaudeDirs, in order, each folder once:
// one reached again (~/.config/claude a link to ~/.claude, or named twice) is left out.
func (w Where) ClaudeProjects() []string {
	var roots []string
	var seen []os.FileInfo
	for _, d := range w.ClaudeDirs {
		root := filepath.Join(d, "projects")
		if d == "" || slices.Contains(roots, root) {
			continue
		}
		if st, err := os.Stat(root); err == nil {
			if slices.ContainsFunc(seen, func(o os.FileInfo) bool { return os.SameFile(o, st) }) {
				continue
			}
			seen = append(seen, st)
		}
		roots = append(roots, root)
	}
	return roots
}

// CodexSessions is the folder of Codex's rollouts, or "".
func (w Where) CodexSessions() string {
	if w.CodexHome == "" {
		return ""
	}
	return filepath.Join(w.CodexHome, "sessions")
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
// that do not exist hold no session; other errors reading them are returned. A session
// reached twice (through a linked folder) is listed once.
func Find(w Where, q Query) ([]Session, error) {
	var found []Session
	if q.Agent == "" || q.Agent == ClaudeCode {
		var seen once
		for _, root := range w.ClaudeProjects() {
			s, err := claudeSessions(root, q.Dirs, &seen)
			if err != nil {
				return nil, err
			}
			found = append(found, s...)
		}
	}
	newest(found)
	if q.Agent == "" || q.Agent == Codex {
		// Codex's logs name their directory inside: read newest first, only as far as the
		// bound needs.
		s, err := codexSessions(w.CodexSessions(), q.Dirs, q.Limit)
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

// once tells a session file seen before under another path: Claude Code names its logs
// by the session's uuid, so only those of the same name and size are compared.
type once map[string][]os.FileInfo

func (o *once) first(path string, st os.FileInfo) bool {
	if *o == nil {
		*o = once{}
	}
	key := fmt.Sprintf("%s\x00%d", filepath.Base(path), st.Size())
	if slices.ContainsFunc((*o)[key], func(b os.FileInfo) bool { return os.SameFile(st, b) }) {
		return false
	}
	(*o)[key] = append((*o)[key], st)
	return true
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

// projectDirs are the folders of root (a projects/ folder) that hold the sessions of dirs
// (all of them when dirs is empty). A folder matches when its name, mangled again, is the
// directory mangled: the same name, or one an older Claude Code wrote when it kept more
// characters ('_' among them). A shortened name matches by its first 200 characters.
func projectDirs(root string, dirs []string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
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

// claudeSessions lists the logs of the project folders of dirs under root (a projects/
// folder), but for those seen already: <uuid>.jsonl directly in each. Subagents' logs are
// not sessions: <session>/subagents/ is not read, and older versions' agent-*.jsonl
// beside the sessions are skipped.
func claudeSessions(root string, dirs []string, seen *once) ([]Session, error) {
	projects, err := projectDirs(root, dirs)
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
			path := filepath.Join(p, name)
			if st, ok := stat(path); ok && seen.first(path, st) {
				found = append(found, Session{Path: path, Agent: ClaudeCode, Dir: filepath.Base(p), Mod: st.ModTime(), Size: st.Size()})
			}
		}
	}
	return found, nil
}

// stat is the file at path when it is a regular one (a link to one counts).
func stat(path string) (os.FileInfo, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	return st, true
}

// codexSessions lists the rollouts under root (Codex's sessions/ folder) whose
// session_meta names one of dirs (every one when dirs is empty), newest first, at most
// limit (0: all).
func codexSessions(root string, dirs []string, limit int) ([]Session, error) {
	if root == "" {
		return nil, nil
	}
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
		if st, ok := stat(path); ok {
			all = append(all, Session{Path: path, Agent: Codex, Mod: st.ModTime(), Size: st.Size()})
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
