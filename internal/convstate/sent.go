package convstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
//	STORE/proxy/sent/<state>.log        its requests as sent, a log (SentDocument reads it)
//	STORE/proxy/sent/<state>.meta.json  what the last request was (Sent)
//
// The sent files take the state file's name, so they are written, bounded and removed with
// it: one conversation, one name. They are in a folder of their own so that neither is
// taken for the other, and the body stays byte for byte what went out (no field of ours
// added to it).
//
// The body is kept as a log, so that a turn writes what it changed, not the whole history
// again: a header line, then one record a request, each the request as an edit of the one
// before (keep its first D bytes and its last E, put X between):
//
//	ctxkit-sent-v1
//	<D> <E> <length of X>
//	<X>
//	<CRC-32C of the line and X, 8 hex digits>
//
// each line ending in a line feed. The last line is the record's commit: a record cut short
// (a write the proxy did not finish: killed, the machine stopped) or damaged does not end
// with a checksum of what it holds, and it and what follows are not read; the reader gets
// the request before it, whole. The first record is a whole request (D and E 0). Once the
// log has grown to twice the request, it is written again as that one record, to a temp
// file renamed over it. A request is read from the log whole in memory (SentDocument); the
// log is never a document itself. A body of the previous version (<state>.json, the request
// itself) is read as it is, and removed at the conversation's next write.

// SentDir is the folder, inside a state directory, of the requests as sent.
const SentDir = "sent"

// metaSuffix ends the name of a request's description; logSuffix of its log.
const (
	metaSuffix = ".meta.json"
	logSuffix  = ".log"
)

// magicSent is the header line of a log of requests as sent.
const magicSent = "ctxkit-sent-v1\n"

// crcTable is CRC-32C's (Castagnoli's), which the processors this runs on compute in
// hardware: the checksum of a first request costs a fraction of a millisecond.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// sentTail is where a log of requests as sent ends, as this process left it: the last
// request written (the next is written as an edit of it) and the file's size.
type sentTail struct {
	doc  []byte
	size int64
}

// appendEdit appends to out the record that makes next of prev (nil: next whole).
func appendEdit(out, prev, next []byte) []byte {
	d, e := 0, 0
	if prev != nil {
		n := min(len(prev), len(next))
		for d < n && prev[d] == next[d] {
			d++
		}
		for e < n-d && prev[len(prev)-1-e] == next[len(next)-1-e] {
			e++
		}
	}
	x := next[d : len(next)-e]
	start := len(out)
	out = strconv.AppendInt(out, int64(d), 10)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(e), 10)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(len(x)), 10)
	out = append(out, '\n')
	out = append(out, x...)
	sum := crc32.Checksum(out[start:], crcTable)
	out = append(out, '\n')
	out = fmt.Appendf(out, "%08x\n", sum)
	return out
}

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
	// Document is the state file's name (the body's log takes it, with .log for .json).
	Document string `json:"document"`

	// Path is the body's file, filled in by ReadSent: its log, read with SentDocument.
	Path string `json:"-"`
}

// writeSent writes the conversation name's last request body and its description desc:
// the body as an edit of the one this process last wrote there (end), appended to the log
// and synced, or, when there is none or the log has grown to twice the body, the log
// written whole. It returns where the log ends then (nil: written whole next time).
func (d *Dir) writeSent(name string, end *sentTail, body, desc []byte) (*sentTail, error) {
	dir := filepath.Join(d.path, SentDir)
	if err := safefile.MkdirAll(dir); err != nil {
		return nil, err
	}
	stem := strings.TrimSuffix(name, ".json")
	path := filepath.Join(dir, stem+logSuffix)
	var next *sentTail
	if end != nil {
		rec := appendEdit(nil, end.doc, body)
		if size := end.size + int64(len(rec)); size <= 2*int64(len(body))+4096 {
			appended, err := appendLine(path, rec, end.size)
			if err != nil {
				return nil, err
			}
			if appended {
				next = &sentTail{doc: body, size: size}
			}
		}
	}
	if next == nil {
		file := make([]byte, 0, len(magicSent)+len(body)+64)
		file = appendEdit(append(file, magicSent...), nil, body)
		if err := safefile.WriteFile(path, file); err != nil {
			return nil, err
		}
		next = &sentTail{doc: body, size: int64(len(file))}
		d.removeFile(filepath.Join(dir, name)) // the previous version's body
	}
	// The description last: one that is there names a body at least as new.
	return next, safefile.WriteFile(filepath.Join(dir, stem+metaSuffix), desc)
}

// removeFile removes the file at p if it is a regular file the user owns.
func (d *Dir) removeFile(p string) {
	if fi, err := os.Lstat(p); err == nil && safefile.CheckInfo(p, fi) == nil {
		os.Remove(p)
	}
}

// removeSent removes the sent files of the state file name.
func (d *Dir) removeSent(name string) {
	dir := filepath.Join(d.path, SentDir)
	stem := strings.TrimSuffix(name, ".json")
	for _, n := range []string{name, stem + logSuffix, stem + metaSuffix} {
		d.removeFile(filepath.Join(dir, n))
	}
}

// stateOf is the state file name a file of the sent folder belongs to, "" for another.
func stateOf(name string) string {
	if stem, ok := strings.CutSuffix(name, metaSuffix); ok {
		return stem + ".json"
	}
	if stem, ok := strings.CutSuffix(name, logSuffix); ok && !strings.HasPrefix(name, ".") {
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
		for _, body := range []string{stem + logSuffix, stem + ".json"} {
			body = filepath.Join(sentDir, body)
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

// maxSent bounds a log of requests read: twice the largest body ctx-proxy takes by default
// and then some.
const maxSent = 1 << 30

// SentDocument is the last request written whole to the log at path (ReadSent's Path): the
// records that are whole applied in turn, a last one cut short or damaged left out. The
// file must be a regular file the user owns, read without following a link. A body of the
// previous version (a .json file) is the request itself.
func SentDocument(path string) ([]byte, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	file, err := io.ReadAll(io.LimitReader(f, maxSent+1))
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(file) > maxSent {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSent)
	}
	if !bytes.HasPrefix(file, []byte(magicSent)) {
		if strings.HasSuffix(path, ".json") {
			return file, nil
		}
		return nil, fmt.Errorf("%s: not a log of requests as sent (%q)", path, strings.TrimSuffix(magicSent, "\n"))
	}
	doc, ok := applyEdits(file[len(magicSent):])
	if !ok {
		return nil, fmt.Errorf("%s: no request written whole yet", path)
	}
	return doc, nil
}

// applyEdits applies the records of a log in turn, up to the first that is not whole; ok
// is false when none is.
func applyEdits(rest []byte) (doc []byte, ok bool) {
	for len(rest) > 0 {
		line, after, found := bytes.Cut(rest, []byte{'\n'})
		if !found || len(line) > 64 {
			break
		}
		var d, e, n int
		if c, err := fmt.Sscanf(string(line), "%d %d %d", &d, &e, &n); c != 3 || err != nil ||
			d < 0 || e < 0 || n < 0 || d+e > len(doc) || !ok && d+e > 0 || n+10 > len(after) {
			break
		}
		x, commit := after[:n], after[n:]
		if commit[0] != '\n' || commit[9] != '\n' {
			break
		}
		sum, err := strconv.ParseUint(string(commit[1:9]), 16, 32)
		if err != nil || uint32(sum) != crc32.Checksum(rest[:len(line)+1+n], crcTable) {
			break
		}
		// doc is this reading's own: edited in place, its end kept aside.
		end := append([]byte(nil), doc[len(doc)-e:]...)
		doc = append(append(doc[:d], x...), end...)
		rest, ok = commit[10:], true
	}
	return doc, ok
}
