package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/sessions"
)

// --latest names the document by where the user is, not by its path: the newest session
// an agent keeps for the current directory (package sessions finds it). A person watching
// stderr, or --stats, is told which file that was, as the report alone may not show it.

// FindSessions lists the agents' sessions (--agent), newest first, at most limit (0: no
// bound): those of the current directory, or with allProjects every project's.
func (c *Context) FindSessions(allProjects bool, limit int) ([]sessions.Session, error) {
	q := sessions.Query{Limit: limit}
	if c.Common.Agent != "any" {
		q.Agent = c.Common.Agent
	}
	if !allProjects {
		if q.Dirs = sessions.Here(c.Getenv("PWD")); len(q.Dirs) == 0 {
			return nil, RuntimeError(errors.New("cannot tell the current directory"))
		}
	}
	found, err := sessions.Find(sessions.Locate(c.Getenv), q)
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("find sessions: %w", err))
	}
	return found, nil
}

// LatestSession is the file --latest names (a tool that reads it more than once, ctx-count
// --follow, chooses it once).
func (c *Context) LatestSession() (string, error) {
	names, err := c.latest()
	if err != nil {
		return "", err
	}
	return names[0], nil
}

// latest is the input --latest names: the newest session of the current directory. None
// is exit 4, as a missing file or a folder with no session is: nothing was read, so the
// input was not a bad document (3).
func (c *Context) latest() ([]string, error) {
	if len(c.Common.Files) > 0 {
		return nil, WithHint(Usagef("--latest names the document; got file arguments too (%q)", c.Common.Files[0]),
			"drop --latest or the file arguments")
	}
	found, err := c.FindSessions(false, 1)
	if err != nil {
		return nil, err
	}
	if c.ChooseLatest != nil {
		var log *sessions.Session
		if len(found) > 0 {
			log = &found[0]
		}
		if name, err := c.ChooseLatest(log); err != nil || name != "" {
			return []string{name}, err
		}
	}
	if len(found) == 0 {
		return nil, c.NoSessions(false, "run from the folder the agent ran in, or name the file")
	}
	if c.StderrTTY || c.StatsOn() {
		c.Notef("--latest: %s", found[0].Path)
	}
	return []string{found[0].Path}, nil
}

// agentAlone refuses --agent where it picks nothing: it chooses among the sessions --latest
// (or ctx-count --sessions) finds, as a filter of what they list, and never names a
// document itself. Ignored, it would have a user who typed --agent codex read stdin or a
// file believing a Codex session was measured. A value CTX_AGENT gives is a standing
// preference for --latest and is not refused.
func (c *Context) agentAlone() error {
	if c.Common.Agent == "any" || c.Common.Latest || c.Getenv("CTX_AGENT") == c.Common.Agent {
		return nil
	}
	return WithHint(Usagef("--agent %s picks among the sessions --latest finds; without --latest it picks nothing", c.Common.Agent),
		fmt.Sprintf("add --latest to read the newest %s session of this directory", c.agentName()))
}

// agentName is the agent --agent names, for a message.
func (c *Context) agentName() string {
	switch c.Common.Agent {
	case sessions.ClaudeCode:
		return "Claude Code"
	case sessions.Codex:
		return "Codex"
	}
	return "Claude Code or Codex"
}

// NoSessions is the error of a search for sessions (of this directory, or with
// allProjects of every project) that found none: exit 4, as a missing file is (nothing
// was read, so no document was bad), naming every folder looked in. The hint says what
// the user can do: first what (the caller's) todo says, then where the folders are set.
func (c *Context) NoSessions(allProjects bool, todo string) *Error {
	w := sessions.Locate(c.Getenv)
	var places []string
	if c.Common.Agent != sessions.Codex {
		var mangled []string
		if !allProjects {
			for _, d := range sessions.Here(c.Getenv("PWD")) {
				if m := sessions.Mangle(d); !slices.Contains(mangled, m) {
					mangled = append(mangled, m)
				}
			}
		}
		for _, root := range w.ClaudeProjects() {
			if allProjects {
				places = append(places, c.tilde(root))
			}
			for _, m := range mangled {
				places = append(places, c.tilde(filepath.Join(root, m)))
			}
		}
	}
	if c.Common.Agent != sessions.ClaudeCode && w.CodexSessions() != "" {
		places = append(places, c.tilde(w.CodexSessions()))
	}
	what := fmt.Sprintf("no %s session", c.agentName())
	if !allProjects {
		what += " of this directory"
	}
	hint := "set CLAUDE_CONFIG_DIR (a comma-separated list) or CODEX_HOME if the agents keep their sessions elsewhere"
	if todo != "" {
		hint = todo + "; " + hint
	}
	if len(places) == 0 {
		return WithHint(RuntimeError(fmt.Errorf("%s: no folder to look in (HOME is not set)", what)), hint)
	}
	return WithHint(RuntimeError(fmt.Errorf("%s in %s", what, strings.Join(places, ", "))), hint)
}

// tilde writes a path under the home directory as ~/..., as a person names it.
func (c *Context) tilde(path string) string {
	home := c.Getenv("HOME")
	if rest, ok := strings.CutPrefix(path, strings.TrimSuffix(home, "/")+"/"); ok && filepath.IsAbs(home) && home != "/" {
		return "~/" + rest
	}
	return path
}
