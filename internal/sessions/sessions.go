// Package sessions finds the session logs coding agents keep on disk: Claude Code's
// (<config>/projects/<mangled working directory>/<uuid>.jsonl, in each configuration
// folder) and Codex's ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, the working
// directory in the first record). It answers "the newest session of this directory"
// (--latest) and "the recent sessions" (ctx-count --sessions): newest by the time of their
// last record, read from the end of each log. It reads folders, the first line of Codex
// logs and the tail of the logs it may list, nothing else.
package sessions

import (
	"bufio"
	"bytes"
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
	Dir string
	// Mod is the file's modification time: what a copy or a sync of the folder sets, so
	// it may say nothing of when the session ran.
	Mod time.Time
	// Last is when the session last wrote: the timestamp of its last record that has one
	// (Claude Code's records and Codex's rollout lines carry one), never after Mod, or Mod
	// when none has. Sessions are ordered by it.
	Last time.Time
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
		if !filepath.IsAbs(config) { // (a relative one is ignored, as the XDG spec says)
			config = ""
			if home != "" {
				config = filepath.Join(home, ".config")
			}
		}
		if home != "" {
			w.ClaudeDirs = append(w.ClaudeDirs, filepath.Join(home, ".claude"))
		}
		if config != "" {
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

// Find lists the sessions of q, newest first: by the time of their last record (Last),
// then by modification time, then by path. Folders that do not exist hold no session;
// other errors reading them are returned. A session reached twice (through a linked
// folder) is listed once.
func Find(w Where, q Query) ([]Session, error) {
	var all []Session
	if q.Agent == "" || q.Agent == ClaudeCode {
		var seen once
		for _, root := range w.ClaudeProjects() {
			s, err := claudeSessions(root, q.Dirs, &seen)
			if err != nil {
				return nil, err
			}
			all = append(all, s...)
		}
	}
	if q.Agent == "" || q.Agent == Codex {
		s, err := codexSessions(w.CodexSessions())
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	// Codex's logs name their directory inside: read only as far as the bound needs.
	return newest(all, q.Limit, func(s *Session) bool {
		if s.Agent != Codex {
			return true
		}
		s.Dir = codexDir(s.Path)
		return len(q.Dirs) == 0 || slices.Contains(q.Dirs, s.Dir)
	}), nil
}

// Newest orders list newest first as Find does, at most limit (0: all), filling in Last:
// for the sessions of a folder named on the command line.
func Newest(list []Session, limit int) []Session {
	return newest(list, limit, nil)
}

// Stat is the session log at path (its Mod and Size) when it is a regular file (a link to
// one counts).
func Stat(path string) (Session, bool) {
	st, ok := stat(path)
	if !ok {
		return Session{}, false
	}
	return Session{Path: path, Mod: st.ModTime(), Size: st.Size()}, true
}

// newest is the sessions of list that keep accepts (nil: all; it may fill in fields),
// newest first, at most limit (0: all). A file is read (its tail for Last, and whatever
// keep reads) only while it could still be among them: Last is never after Mod, so once
// the bound is full and the next file by Mod was modified before the last one kept last
// wrote, neither it nor any after it can enter. A listing of 20 reads about 20 files
// however many there are, unless a copy gave them all one modification time.
func newest(list []Session, limit int, keep func(*Session) bool) []Session {
	slices.SortFunc(list, func(a, b Session) int {
		if c := b.Mod.Compare(a.Mod); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	var found []Session
	for _, s := range list {
		if limit > 0 && len(found) == limit && s.Mod.Before(found[limit-1].Last) {
			break
		}
		if keep != nil && !keep(&s) {
			continue
		}
		s.Last = lastTime(s.Path, s.Mod)
		if limit == 0 {
			found = append(found, s)
			continue
		}
		i, _ := slices.BinarySearchFunc(found, s, newer)
		if i < limit {
			if found = slices.Insert(found, i, s); len(found) > limit {
				found = found[:limit]
			}
		}
	}
	slices.SortFunc(found, newer)
	return found
}

// newer orders sessions newest first: by Last, then Mod (of two copies of one session,
// the one written later), then path.
func newer(a, b Session) int {
	if c := b.Last.Compare(a.Last); c != 0 {
		return c
	}
	if c := b.Mod.Compare(a.Mod); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}

// The tail of a log read for its last record's time: tailFirst bytes, doubled while no
// whole record in it has a timestamp, up to tailMax. A session whose last records are
// longer than that (a huge tool result) falls back to its modification time rather than
// be read whole.
const (
	tailFirst = 64 << 10
	tailMax   = 4 << 20
)

// lastTime is the timestamp of the last record of the log at path that has one, or mod
// when none does within tailMax of the end (or the file cannot be read). A time after mod
// is mod: the record was written before the file was last modified, unless the clock of
// whoever wrote it was wrong.
func lastTime(path string, mod time.Time) time.Time {
	t, ok := lastOf(path, mod, nil)
	if !ok || t.After(mod) {
		return mod
	}
	return t
}

// lastOf is the timestamp of the last record of the log at path that has one and that
// keep accepts (nil: any), reading its tail as lastTime does; mod and false when there is
// none within tailMax of the end (or the file cannot be read).
func lastOf(path string, mod time.Time, keep func(line []byte) bool) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return mod, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return mod, false
	}
	// Each step reads as much again before what was read, up to tailMax in all.
	size := st.Size()
	var tail []byte
	for n := int64(0); n < size && n < tailMax; {
		more := min(max(n, tailFirst), size-n)
		buf := make([]byte, more+n)
		if _, err := f.ReadAt(buf[:more], size-n-more); err != nil && !errors.Is(err, io.EOF) {
			return mod, false
		}
		copy(buf[more:], tail)
		tail, n = buf, n+more
		if t, ok := lastRecordTime(tail, n == size, keep); ok {
			return t, true
		}
	}
	return mod, false
}

// lastRecordTime is the timestamp of the last line of tail (the end of a JSONL file) that
// has a top-level "timestamp" string in RFC 3339 and that keep accepts (nil: any); whole
// says tail starts the file, else its first line may be cut and is not read.
func lastRecordTime(tail []byte, whole bool, keep func(line []byte) bool) (time.Time, bool) {
	if !whole {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return time.Time{}, false
		}
		tail = tail[i+1:]
	}
	for len(tail) > 0 {
		i := bytes.LastIndexByte(tail, '\n')
		line := tail[i+1:]
		if ts := gjson.GetBytes(line, "timestamp"); ts.Type == gjson.String && (keep == nil || keep(line)) {
			if t, err := time.Parse(time.RFC3339Nano, ts.Str); err == nil {
				return t, true
			}
		}
		if i < 0 {
			break
		}
		tail = tail[:i]
	}
	return time.Time{}, false
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

// codexSessions lists the rollouts under root (Codex's sessions/ folder), their Dir not
// read yet.
func codexSessions(root string) ([]Session, error) {
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
		if s, ok := Stat(path); ok {
			s.Agent = Codex
			all = append(all, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// maxMeta bounds how much of a rollout's first line is read for its working directory:
// the session_meta record holds the agent's instructions, some KB long.
const maxMeta = 1 << 20

// headLine is the first line of the file at path (nil when it cannot be read), at most
// maxMeta bytes of it: a line cut there is incomplete JSON, in which gjson finds nothing.
func headLine(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, maxMeta)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	return line
}

// codexDir is the working directory a rollout's session_meta records, or "".
func codexDir(path string) string {
	line := headLine(path)
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

// ID is the agent's own id of the session s: the name of a Claude Code log
// (<id>.jsonl, the X-Claude-Code-Session-Id it sends with each request), the uuid a Codex
// rollout's name ends with (rollout-<time>-<id>.jsonl, the session id and prompt_cache_key
// it sends); "" when the name is neither.
func ID(s Session) string {
	stem := strings.TrimSuffix(filepath.Base(s.Path), ".jsonl")
	switch s.Agent {
	case ClaudeCode:
		return stem
	case Codex:
		if len(stem) > 36 && strings.HasPrefix(stem, "rollout-") && strings.Count(stem[len(stem)-36:], "-") == 4 {
			return stem[len(stem)-36:]
		}
	}
	return ""
}

// LastReply is when the session at path last recorded a reply of the model: the
// timestamp of its last record that is one (Claude Code's assistant records of the main
// thread, Codex's token_count events and assistant items), zero when none is within the
// tail read for Last.
func LastReply(path string) time.Time {
	t, _ := lastOf(path, time.Time{}, isReply)
	return t
}

// isReply says whether a log line is a reply of the model in the main thread.
func isReply(line []byte) bool {
	switch gjson.GetBytes(line, "type").Str {
	case "assistant":
		return !gjson.GetBytes(line, "isSidechain").Bool()
	case "event_msg":
		return gjson.GetBytes(line, "payload.type").Str == "token_count"
	case "response_item":
		p := gjson.GetBytes(line, "payload")
		return p.Get("role").Str == "assistant" || strings.HasSuffix(p.Get("type").Str, "call")
	}
	return false
}

// Subagents lists the logs of the subagents of the Claude Code session whose log is at
// path, by path: those newer versions keep in a folder named after the session
// (<session id>/subagents/agent-*.jsonl) and those older versions keep beside the
// session (agent-*.jsonl) whose first record names the session (sessionId); none for a
// log that is itself a subagent's. A subagent's requests are its own, with a context of
// their own: ccusage and the bill count them with the session's. Files that cannot be read
// are left out.
func Subagents(path string) []string {
	base := filepath.Base(path)
	if !strings.HasSuffix(base, ".jsonl") || strings.HasPrefix(base, "agent-") {
		return nil
	}
	id := strings.TrimSuffix(base, ".jsonl")
	dir := filepath.Dir(path)
	var out []string
	if list, err := filepath.Glob(filepath.Join(dir, id, "subagents", "agent-*.jsonl")); err == nil {
		for _, p := range list {
			if _, ok := stat(p); ok {
				out = append(out, p)
			}
		}
	}
	if list, err := filepath.Glob(filepath.Join(dir, "agent-*.jsonl")); err == nil {
		for _, p := range list {
			if _, ok := stat(p); ok && sessionOf(p) == id {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// sessionOf is the session id the first record of a Claude Code log names, or "".
func sessionOf(path string) string {
	return gjson.GetBytes(headLine(path), "sessionId").String()
}
