package convstate

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// What the proxy sent: for each conversation, the last request's body exactly as it was
// forwarded upstream (system, tools, messages: an API request every ctxkit tool reads), and
// a small description of it beside it, so that ctx-count --latest can tell which project
// and which client session it belongs to without reading the body:
//
//	STORE/proxy/<state>.json            the conversation's state
//	STORE/proxy/sent/<state>.json       its last request as sent
//	STORE/proxy/sent/<state>.meta.json  what that request was (Sent)
//
// The sent files take the state file's name, so they are written, bounded and removed with
// it: one conversation, one name. They are in a folder of their own so that neither is
// taken for the other, and the body stays byte for byte what went out (no field of ours
// added to it).

// SentDir is the folder, inside a state directory, of the requests as sent.
const SentDir = "sent"

// metaSuffix ends the name of a request's description.
const metaSuffix = ".meta.json"

// Sent describes a conversation's last request as the proxy sent it.
type Sent struct {
	Conversation string `json:"conversation"`
	// Format is the API the body is a request of: anthropic, openai or responses.
	Format string `json:"format"`
	Model  string `json:"model,omitempty"`
	// Session is the client's own id of the session the request belongs to, when it sent
	// one: Claude Code's X-Claude-Code-Session-Id (the name of its log), Codex's session
	// id or prompt_cache_key (the id its rollout's name ends with).
	Session string `json:"session,omitempty"`
	// Cwd is the working directory the client names in the request (Claude Code's
	// system prompt, Codex's environment_context), "" when it names none.
	Cwd string `json:"cwd,omitempty"`
	// Tools is how many tools the request carried: a session's main thread carries the
	// most, its subagents and side requests (titles, summaries) fewer.
	Tools    int `json:"tools"`
	Messages int `json:"messages"`
	// Tokens is the request as sent, counted by the proxy; Window the effective window of
	// its model.
	Tokens int `json:"tokens"`
	Window int `json:"window,omitempty"`
	// Received is when the request came in; Answered when its response had gone back.
	Received time.Time `json:"received"`
	Answered time.Time `json:"answered"`
	// Document is the body's file name, beside this description.
	Document string `json:"document"`

	// Path is the body's file, filled in by ReadSent.
	Path string `json:"-"`
}

// writeSent writes the conversation name's last request body and its description desc.
func (d *Dir) writeSent(name string, body, desc []byte) error {
	dir := filepath.Join(d.path, SentDir)
	if err := safefile.MkdirAll(dir); err != nil {
		return err
	}
	if err := safefile.WriteFile(filepath.Join(dir, name), body); err != nil {
		return err
	}
	// The description last: one that is there names a body at least as new.
	return safefile.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".json")+metaSuffix), desc)
}

// removeSent removes the sent files of the state file name.
func (d *Dir) removeSent(name string) {
	dir := filepath.Join(d.path, SentDir)
	for _, n := range []string{name, strings.TrimSuffix(name, ".json") + metaSuffix} {
		p := filepath.Join(dir, n)
		if fi, err := os.Lstat(p); err == nil && safefile.CheckInfo(p, fi) == nil {
			os.Remove(p)
		}
	}
}

// stateOf is the state file name a file of the sent folder belongs to, "" for another.
func stateOf(name string) string {
	if stem, ok := strings.CutSuffix(name, metaSuffix); ok {
		return stem + ".json"
	}
	if strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
		return name
	}
	return ""
}

// openSent counts the sent files of each state into its size, and removes those whose
// state is gone (dropped while the proxy was not running, or a write cut short).
func (d *Dir) openSent() {
	dir := filepath.Join(d.path, SentDir)
	fi, err := os.Lstat(dir)
	if err != nil || safefile.CheckDirInfo(dir, fi) != nil {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		state := stateOf(e.Name())
		if state == "" || !e.Type().IsRegular() {
			continue
		}
		info, ok := d.sizes[state]
		if !ok {
			p := filepath.Join(dir, e.Name())
			if fi, err := os.Lstat(p); err == nil && safefile.CheckInfo(p, fi) == nil {
				os.Remove(p)
			}
			continue
		}
		if fi, err := e.Info(); err == nil {
			info.sent += fi.Size()
			d.sizes[state] = info
		}
	}
	safefile.RemoveStale(dir, func(name string) bool { return strings.HasSuffix(name, safefile.TempSuffix) }, d.now())
}

// maxMeta bounds a description read: they are a few hundred bytes.
const maxMeta = 1 << 20

// ReadSent lists the requests as sent kept in the state directory dir (STORE/proxy), newest
// answered first: those whose description and body are both there, read without following
// a link or reading another user's file. A directory that does not exist holds none.
func ReadSent(dir string) []Sent {
	sentDir := filepath.Join(dir, SentDir)
	entries, err := os.ReadDir(sentDir)
	if err != nil {
		return nil
	}
	var out []Sent
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), metaSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		f, err := safefile.Open(filepath.Join(sentDir, e.Name()))
		if err != nil {
			continue
		}
		var s Sent
		err = json.NewDecoder(io.LimitReader(f, maxMeta)).Decode(&s)
		f.Close()
		if err != nil {
			continue
		}
		body := filepath.Join(sentDir, stem+".json")
		if fi, err := os.Lstat(body); err != nil || safefile.CheckInfo(body, fi) != nil {
			continue
		}
		s.Path = body
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Answered.After(out[j].Answered) })
	return out
}
