package count

import (
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convstate"
	"github.com/ctxkit/ctxkit/internal/sessions"
	offstore "github.com/ctxkit/ctxkit/internal/store"
)

// What the model saw. Behind ctx-proxy the client's log is not what the model is sent: the
// proxy cleared, cut and summarized on the way, and the log still holds it all (172,526
// tokens in the log where the model was sent 30,500). The proxy keeps each conversation's
// last request as sent in STORE/proxy/sent/ (package convstate); --latest counts that
// instead of the log when it is the newest request of the same conversation, and says so.
//
// Which request is the log's: the one of the same client session (the proxy records the
// session id the client sends, which names its log), else of the same working directory
// (the one the client names in the request) when it is newer than the log. Of a session's
// requests, the newest of those that carried the most tools: the main thread carries them
// all, a subagent fewer, a title or summary request none. It stands for the log unless the
// log recorded a reply after it was answered: a request the proxy did not see (the agent
// run again without it).

// Sources --source takes.
const (
	sourceAuto  = "auto"
	sourceLog   = "log"
	sourceProxy = "proxy"
)

// replySlack is how long after the proxy answered a request the client may still record
// its reply: the client writes it as the answer streams in, the proxy once it has counted.
const replySlack = 5 * time.Second

// chooseSent is ctx-count's --latest: what ctx-proxy sent for the session log (nil when
// the directory has none), per --source.
func chooseSent(ctx *cli.Context, f *Flags) func(log *sessions.Session) (string, error) {
	return func(log *sessions.Session) (string, error) {
		if f.Source == sourceLog {
			return "", nil
		}
		if f.Store == "" { // none named, and no state directory for the default one
			if f.Source == sourceProxy {
				return "", cli.Usagef("%v", offstore.ErrNoDir)
			}
			return "", nil
		}
		store, err := filepath.Abs(f.Store)
		if err != nil {
			return "", cli.RuntimeError(err)
		}
		sent := pickSent(convstate.ReadSent(filepath.Join(store, "proxy")), log, f.Agent, sessions.Here(ctx.Getenv("PWD")), f.Source == sourceProxy)
		if sent == nil {
			if f.Source == sourceProxy {
				return "", cli.WithHint(cli.RuntimeError(errors.New("no request ctx-proxy sent for this directory in "+filepath.Join(store, "proxy", convstate.SentDir))),
					"run ctx-count in the directory ctx-proxy serves from, or give it the proxy's --store")
			}
			return "", nil
		}
		// The log of requests as sent is read as its last request, each time it is read
		// (--follow reads it again as it grows).
		path := sent.Path
		ctx.Documents = func(name string) ([]byte, bool, error) {
			if name != path {
				return nil, false, nil
			}
			doc, err := convstate.SentDocument(path)
			return doc, err == nil, err
		}
		if log != nil {
			ctx.Notef("showing what ctx-proxy sent (%s), not the client's log (%s); --source log for the log", sent.Path, log.Path)
		} else {
			ctx.Notef("showing what ctx-proxy sent (%s); no client log of this directory", sent.Path)
		}
		return sent.Path, nil
	}
}

// pickSent is the request of all that stands for log (nil: none found) in the directory
// named by here (its spellings), for agent (any, claude-code or codex); nil when none
// does. always takes one that is older than the log too (--source proxy).
func pickSent(all []convstate.Sent, log *sessions.Session, agent string, here []string, always bool) *convstate.Sent {
	var kept []convstate.Sent
	for _, s := range all {
		if fits(s, agent) && (log == nil || fits(s, log.Agent)) {
			kept = append(kept, s)
		}
	}
	if log != nil {
		if id := sessions.ID(*log); id != "" {
			var same []convstate.Sent
			for _, s := range kept {
				if s.Session == id {
					same = append(same, s)
				}
			}
			if p := mainThread(same); p != nil {
				if always || !sessions.LastReply(log.Path).After(p.Answered.Add(replySlack)) {
					return p
				}
				return nil
			}
		}
	}
	var mine []convstate.Sent
	for _, s := range kept {
		if s.Cwd != "" && slices.Contains(here, s.Cwd) {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	// The newest request's session (ReadSent lists the newest first), its main thread.
	var same []convstate.Sent
	for _, s := range mine {
		if s.Session == mine[0].Session {
			same = append(same, s)
		}
	}
	p := mainThread(same)
	if always || log == nil || p.Answered.After(log.Last) {
		return p
	}
	return nil
}

// fits says whether a request of s's format is one agent sends: Claude Code the Messages
// API's, Codex the Responses API's.
func fits(s convstate.Sent, agent string) bool {
	switch agent {
	case sessions.ClaudeCode:
		return s.Format == "anthropic"
	case sessions.Codex:
		return s.Format == "responses"
	}
	return true
}

// mainThread is the newest of list (newest first) of those that carried the most tools.
func mainThread(list []convstate.Sent) *convstate.Sent {
	var best *convstate.Sent
	for i := range list {
		if best == nil || list[i].Tools > best.Tools {
			best = &list[i]
		}
	}
	return best
}
