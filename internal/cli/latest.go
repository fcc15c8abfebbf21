package cli

import (
	"errors"
	"fmt"

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
	if len(found) == 0 {
		return nil, WithHint(RuntimeError(fmt.Errorf("no %s session of this directory", c.agentName())),
			fmt.Sprintf("looked in %s; run from the folder the agent ran in, or name the file", c.sessionPlaces()))
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

// sessionPlaces says where the sessions were looked for.
func (c *Context) sessionPlaces() string {
	w := sessions.Locate(c.Getenv)
	var claude, codex string
	if w.ClaudeDir != "" {
		claude = w.ClaudeDir + "/projects/" + sessions.Mangle(firstOr(sessions.Here(c.Getenv("PWD")), "?")) + "/"
	}
	if w.CodexHome != "" {
		codex = w.CodexHome + "/sessions/"
	}
	switch c.Common.Agent {
	case sessions.ClaudeCode:
		return claude
	case sessions.Codex:
		return codex
	}
	return claude + " and " + codex
}

func firstOr(s []string, or string) string {
	if len(s) == 0 {
		return or
	}
	return s[0]
}
