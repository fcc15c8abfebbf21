package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/sessions"
)

// A directory where a report expects a document (Filter.Sessions) is read as the agent
// sessions it holds: ~/.claude/projects/<project>/ holds one Claude Code log per session,
// ~/.codex/sessions/ Codex rollouts in dated folders. The newest session (by its last
// record's time, as --latest chooses) is the one a user means by "this project" (the one
// running now); Filter.AllSessions takes each of them, newest first.

// sessionsIn lists the session logs of dir: the *.jsonl files directly in it, or when it
// has none, those anywhere below it (Codex's YYYY/MM/DD folders), in no order (see
// sessions.Newest). Subagents' logs are not sessions: Claude Code keeps them in
// <session>/subagents/, or (older versions) beside the sessions as agent-*.jsonl.
func sessionsIn(dir string) ([]sessions.Session, error) {
	var found []sessions.Session
	add := func(path string, d fs.DirEntry) {
		name := d.Name()
		if !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "agent-") {
			return
		}
		if s, ok := sessions.Stat(path); ok { // a link to a log counts as the log
			found = append(found, s)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("read %q: %w", dir, pathReason(err)))
	}
	for _, e := range entries {
		add(filepath.Join(dir, e.Name()), e)
	}
	if len(found) == 0 {
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil // an unreadable folder holds no session we can read
			case d.IsDir() && d.Name() == "subagents":
				return fs.SkipDir
			case !d.IsDir():
				add(path, d)
			}
			return nil
		})
		if err != nil {
			return nil, RuntimeError(fmt.Errorf("read %q: %w", dir, pathReason(err)))
		}
	}
	return found, nil
}

// isDir reports whether name (not stdin) is a directory.
func isDir(name string) bool {
	if name == "-" {
		return false
	}
	st, err := os.Stat(name)
	return err == nil && st.IsDir()
}

// expand turns one input argument into the documents it names: itself, or, for a
// directory under Filter.Sessions, its newest session (saying which on stderr when a
// person watches it or --stats is on, as the report alone would not show it) or with
// AllSessions every one, newest first.
func (c *Context) expand(f *Filter, name string) ([]string, error) {
	if !f.Sessions || !isDir(name) {
		return []string{name}, nil
	}
	found, err := sessionsIn(name)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, WithHint(RuntimeError(fmt.Errorf("read %q: %w", name, errNoSessions)),
			"name a document, or a folder of Claude Code or Codex session logs")
	}
	if !f.AllSessions {
		newest := sessions.Newest(found, 1)[0]
		if len(found) > 1 && (c.StderrTTY || c.StatsOn()) {
			c.Notef("%s: the newest of %d sessions: %s (--all counts each)", name, len(found), newest.Path)
		}
		return []string{newest.Path}, nil
	}
	var paths []string
	for _, s := range sessions.Newest(found, 0) {
		paths = append(paths, s.Path)
	}
	return paths, nil
}

var errNoSessions = errors.New("a folder with no session logs (*.jsonl) in it")

// Notef prints "ctx-x: note: ..." to stderr: what a person should know of a run that
// succeeded, such as which file it chose (its name escaped, as Warnf's).
func (c *Context) Notef(format string, a ...any) {
	fmt.Fprintf(c.Stderr, "%s: note: %s\n", c.tool.Name, human.Safe(fmt.Sprintf(format, a...)))
}
