package convstate

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// a small description of it, so that ctx-count --latest can tell which project and which
// client session it belongs to without reading the body:
//
//	STORE/proxy/<state>.json            the conversation's state, and in it the request
//	STORE/proxy/sent/<state>.meta.json  what the last request was (Sent)
//
// The request is kept in the state file: its messages are the state's messages sent
// (State.Sent), which the file holds already, and what surrounds them in the body
// (SentHead, SentTail) is written with them when it changes. So a turn writes the messages
// it added once, appended to the state's log (log.go), and a reader gets the request the
// last whole record of the log makes (SentDocument): never part of a record cut short. The
// description takes the state file's name, so it is written, bounded and removed with it;
// it is in a folder of its own so that neither is taken for the other. A body of the
// previous version (sent/<state>.json, the request itself) is read as it is, and removed
// at the conversation's next write.

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
	// Document is the state file's name, which holds the request.
	Document string `json:"document"`

	// Path is the file the request is read from (SentDocument), filled in by ReadSent: the
	// state file.
	Path string `json:"-"`
}

// writeSent writes the description desc of the conversation name's last request, and
// removes the body a previous version kept beside it.
func (d *Dir) writeSent(name string, desc []byte) error {
	dir := filepath.Join(d.path, SentDir)
	if err := safefile.MkdirAll(dir); err != nil {
		return err
	}
	removeFile(filepath.Join(dir, name))
	return safefile.WriteFile(filepath.Join(dir, strings.TrimSuffix(name, ".json")+metaSuffix), desc)
}

// removeFile removes the file at p if it is a regular file the user owns.
func removeFile(p string) {
	if fi, err := os.Lstat(p); err == nil && safefile.CheckInfo(p, fi) == nil {
		os.Remove(p)
	}
}

// removeSent removes the sent files of the state file name.
func (d *Dir) removeSent(name string) {
	dir := filepath.Join(d.path, SentDir)
	for _, n := range []string{name, strings.TrimSuffix(name, ".json") + metaSuffix} {
		removeFile(filepath.Join(dir, n))
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
			removeFile(filepath.Join(dir, e.Name()))
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
		// The body a previous version kept, until the state is written again; else the
		// state file, which holds the request.
		for _, body := range []string{filepath.Join(sentDir, stem+".json"), filepath.Join(dir, stem+".json")} {
			if fi, err := os.Lstat(body); err == nil && safefile.CheckInfo(body, fi) == nil {
				s.Path = body
				out = append(out, s)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Answered.After(out[j].Answered) })
	return out
}

// SentDocument is the conversation's last request as sent, read from the state file at
// path (ReadSent's Path): the request the last whole record of its log makes, a record cut
// short or damaged left out. It is read, not authenticated (it is shown, never sent): the
// file must be a regular file the user owns, read without following a link. A body of the
// previous version (sent/<state>.json) is the request itself.
func SentDocument(path string) ([]byte, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	file, err := io.ReadAll(io.LimitReader(f, maxState+1))
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(file) > maxState {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxState)
	}
	switch {
	case bytes.HasPrefix(file, []byte(magicLog)):
	case bytes.HasPrefix(file, []byte(magicLog2)), bytes.HasPrefix(file, []byte(magic)):
		return nil, fmt.Errorf("%s: written by an older ctx-proxy, without its request as sent", path)
	default:
		return file, nil // a body of the previous version
	}
	s, _, err := decodeLog(nil, file, magicLog, nextRecord, readRecord3)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case s.SentWhole != "":
		return []byte(s.SentWhole), nil
	case s.SentHead == "":
		return nil, fmt.Errorf("%s: no request as sent in it", path)
	}
	n := len(s.SentHead) + len(s.SentTail) + 2 + len(s.Sent)
	for _, m := range s.Sent {
		n += len(m)
	}
	doc := make([]byte, 0, n)
	doc = append(doc, s.SentHead...)
	doc = append(doc, '[')
	for i, m := range s.Sent {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, m...)
	}
	doc = append(doc, ']')
	return append(doc, s.SentTail...), nil
}

// maxState bounds a state file read for its request: a MaxBytes far above the default.
const maxState = 1 << 30
