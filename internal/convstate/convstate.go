// Package convstate owns ctx-proxy's memory of each conversation: the messages the client
// sent last time (as hashes, enough to tell that a new request extends them) and the
// messages the proxy sent instead (whole, to send them again byte for byte). It lives in a
// directory inside the offload store so that it survives a restart of the proxy, and it is
// kept bounded: conversations untouched for MaxAge are dropped, and beyond MaxCount
// conversations or MaxBytes bytes the least recently used go first.
//
// Every file is written with internal/safefile (owner-only, temp and rename, never through a
// symbolic link): the state holds conversation text.
//
// A state decides what the proxy sends in the client's name, so a file is trusted only if
// this user's ctx-proxy wrote it: each of its records carries an HMAC-SHA256, chained on
// the record before, under a per-user secret kept outside the store (LoadKey), and one
// whose first record does not match (a file planted in a store a repository carries, one
// written under another key) is ignored like a missing one, Get saying why
// (ErrNotAuthenticated). A file is a log a turn appends what it changed to (log.go). A file is read only
// if it is a regular file the user owns, opened without following a link and without
// waiting (a FIFO under its name is refused, never waited on).
package convstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// State is what is remembered of one conversation.
type State struct {
	Key     string    `json:"key"`
	Updated time.Time `json:"updated"`
	// Answered is when the response to the conversation's last request had gone back: the
	// provider's prompt cache was last written then.
	Answered time.Time `json:"answered,omitzero"`
	// Orig are the hashes (Hash of the canonical form, Options.Canonical) of the messages
	// the client sent last, in order; "" for one not hashed yet, which OrigRaw holds: a
	// message the next request repeats byte for byte, or that was sent as received (the
	// state file then says so), never needs its hash.
	Orig []string `json:"orig"`
	// Sent are the messages the proxy sent for them, each its raw JSON as a string: a
	// json.RawMessage would be re-encoded (HTML characters escaped), and the point is to
	// send the same bytes again.
	Sent []string `json:"sent"`
	// Totals since the conversation began, for the status page.
	Messages   int `json:"messages"`
	Requests   int `json:"requests"`
	TokensIn   int `json:"tokens_in"`
	TokensSent int `json:"tokens_sent"`
	Saved      int `json:"saved"`
	Fallback   int `json:"fallbacks"`
	// The last request as sent: its model, its tokens, and the effective window of the
	// model (its window less the reply's reserve), for the status page's utilization.
	Model    string `json:"model,omitempty"`
	LastSent int    `json:"last_sent,omitempty"`
	Window   int    `json:"window,omitempty"`

	// Valid is how many of the first Sent the proxy has found to be one JSON value each,
	// in this process: those it need not look at again. Never stored.
	Valid int `json:"-"`
	// OrigRaw are the messages Orig are the hashes of, as the client sent them, in this
	// process: a message the next request repeats byte for byte has its hash without
	// being read again. Never stored as such: read from a file, those that were sent as
	// received are known, the others "".
	OrigRaw []string `json:"-"`
	// Marks are the indices of the Sent messages that hold a "cache_control" (the
	// Messages API's markers), when Marked, in this process: the proxy caps the markers
	// of a request without reading every message for them. Never stored.
	Marks  []int `json:"-"`
	Marked bool  `json:"-"`
	// The request as sent around its messages: the bytes before its message array and
	// after it, the array holding Sent one after the other, a comma between; or, when it
	// did not (a client that indents its JSON), SentWhole, the request whole. All "": not
	// known. Written with the state, so that the request as sent is read from the state
	// file (SentDocument) and a turn writes the messages it added once.
	SentHead, SentTail, SentWhole string `json:"-"`
	// In and Out are the tokens of the messages of a request of the conversation as the
	// proxy counted them, received and sent: the next request's count reads only the
	// messages that are not among them. In this process; never stored; nil: none.
	In, Out *Counts `json:"-"`
}

// Counts are the tokens of a request's messages as the proxy counted them: Tokens[i] for
// Raws[i] (the strings of the request's state, not copies), under the counter of Format
// and Model. Flags[i] are what the proxy needs to know of each message to tell which
// counts a later message can change (proxy's count.go); Final is how many of the first
// counts none can. Never changed once kept.
type Counts struct {
	Format, Model string
	Raws          []string
	Tokens        []int
	Flags         []uint8
	Final         int
}

// Hash names a message by its bytes.
func Hash(raw string) string {
	// The string's own bytes, read in place: []byte(raw) copied every message hashed
	// (the whole history when ctx-proxy writes a conversation's state whole).
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw)))
	return hex.EncodeToString(sum[:16])
}

// Options bound the directory.
type Options struct {
	MaxAge   time.Duration // 0: 24h
	MaxCount int           // 0: 1000
	MaxBytes int64         // 0: 256 MiB
	// Key authenticates the files (HMAC-SHA256): LoadKey's. nil: a random key of this
	// Dir's own, so that its files are read back by no other (nothing survives a restart).
	Key []byte
	// Canonical is the form a message received is hashed in (State.Orig), for the hashes
	// the proxy left to the write; nil: the message as it is.
	Canonical func(raw string) string
}

// KeyFile is the name of the secret LoadKey keeps in the user's state directory.
const KeyFile = "proxy-state.key"

// keySize is the secret's length in bytes.
const keySize = 32

// LoadKey returns the user's secret for state files, made on first use: KeyFile in
// stateDir (the user's state directory, $XDG_STATE_HOME/ctxkit), mode 0600, never inside
// a store, which a repository may carry. A stateDir of "" gives nil (Open then makes a key
// for the process alone).
func LoadKey(stateDir string) ([]byte, error) {
	if stateDir == "" {
		return nil, nil
	}
	return safefile.Secret(filepath.Join(stateDir, KeyFile), keySize)
}

// ErrNotAuthenticated is what Get wraps for a file whose MAC does not match its content
// under the key: not written by this user's ctx-proxy, so not trusted.
var ErrNotAuthenticated = errors.New("not authenticated (not written by this user's ctx-proxy): ignored")

// magic opens every state file, before the MAC of what follows the line.
const magic = "ctxkit-convstate-v1 "

// seal is the file of the state encoded as data: the magic, the MAC of data in hex, a
// line feed, data.
func seal(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	out := make([]byte, 0, len(magic)+2*sha256.Size+1+len(data))
	out = append(out, magic...)
	out = hex.AppendEncode(out, m.Sum(nil))
	out = append(out, '\n')
	return append(out, data...)
}

// unseal is the data of a sealed file, or ErrNotAuthenticated.
func unseal(key, file []byte) ([]byte, error) {
	head, data, ok := bytes.Cut(file, []byte{'\n'})
	if !ok || !bytes.HasPrefix(head, []byte(magic)) {
		return nil, ErrNotAuthenticated
	}
	got, err := hex.DecodeString(string(head[len(magic):]))
	if err != nil {
		return nil, ErrNotAuthenticated
	}
	m := hmac.New(sha256.New, key)
	m.Write(data)
	if !hmac.Equal(got, m.Sum(nil)) {
		return nil, ErrNotAuthenticated
	}
	return data, nil
}

// Dir is an open state directory. Its methods are safe for concurrent use; the caller
// serialises requests of one conversation (Lock).
type Dir struct {
	path string
	o    Options
	now  func() time.Time

	mu    sync.Mutex
	wmu   sync.Mutex        // one disk write at a time, so that a later one lands last
	seq   map[string]uint64 // by file name: the newest Prepare
	locks map[string]*keyLock
	sizes map[string]fileInfo // by file name: what prune needs without a directory scan
	// first: by the first message of the states kept (OrigRaw[0]), the file names of the
	// recentFirst last kept, newest first (Recent).
	first map[string][]string
}

type fileInfo struct {
	// size is the bytes the state takes: its file's, or in memory, when that is more
	// (memOf), so that MaxBytes bounds both.
	size    int64
	sent    int64 // the bytes of its request as sent's description (and an older version's body)
	updated time.Time
	state   *State // in memory once read or kept; nil: on disk only
	first   string // its key in Dir.first, "" for none
	// disk is the state as the file has it, end where the next record is chained (log.go);
	// either nil: the next write writes the file whole.
	disk *State
	end  *tail
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// Open opens (creating it, mode 0700) the state directory at path and drops what has
// expired.
func Open(path string, o Options, now func() time.Time) (*Dir, error) {
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.MaxCount <= 0 {
		o.MaxCount = 1000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if now == nil {
		now = time.Now
	}
	if o.Key == nil {
		o.Key = make([]byte, keySize)
		if _, err := rand.Read(o.Key); err != nil {
			return nil, err
		}
	}
	if err := safefile.MkdirAll(path); err != nil {
		return nil, err
	}
	d := &Dir{path: path, o: o, now: now, locks: map[string]*keyLock{}, sizes: map[string]fileInfo{}, seq: map[string]uint64{}, first: map[string][]string{}}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			d.sizes[e.Name()] = fileInfo{size: fi.Size(), updated: fi.ModTime()}
		}
	}
	d.openSent()
	d.mu.Lock()
	d.pruneLocked()
	d.mu.Unlock()
	safefile.RemoveStale(path, func(name string) bool { return strings.HasSuffix(name, safefile.TempSuffix) }, now())
	return d, nil
}

// Path is the directory.
func (d *Dir) Path() string { return d.path }

func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// Lock serialises the requests of one conversation; call the returned function to unlock.
// Two requests of a conversation at once would otherwise both extend the same history and
// one would overwrite the other's state.
func (d *Dir) Lock(key string) func() {
	d.mu.Lock()
	l := d.locks[key]
	if l == nil {
		l = &keyLock{}
		d.locks[key] = l
	}
	l.refs++
	d.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		d.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(d.locks, key)
		}
		d.mu.Unlock()
	}
}

// Get returns the state of the conversation key, nil when there is none or it expired.
// The state is shared: change it only while holding Lock(key), and Keep or Put it.
func (d *Dir) Get(key string) (*State, error) {
	name := fileName(key)
	d.mu.Lock()
	fi, ok := d.sizes[name]
	d.mu.Unlock()
	if ok && fi.state != nil {
		if fi.state.Key != key || d.now().Sub(fi.state.Updated) > d.o.MaxAge {
			return nil, nil
		}
		return fi.state, nil
	}
	s, end, err := d.read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Key != key {
		return nil, nil // a colliding file is no memory, not an error
	}
	if d.now().Sub(s.Updated) > d.o.MaxAge {
		return nil, nil
	}
	d.mu.Lock()
	if fi, ok := d.sizes[name]; ok && fi.state == nil {
		fi.state = s
		fi.size = max(fi.size, memOf(s))
		if fi.disk == nil {
			fi.disk, fi.end = s, end
		}
		d.sizes[name] = fi
	}
	d.mu.Unlock()
	return s, nil
}

// read reads, authenticates and decodes the file name (log.go), with where its log ends.
// Whatever is wrong with the file is an error that names it; a missing one is
// fs.ErrNotExist.
func (d *Dir) read(name string) (*State, *tail, error) {
	path := filepath.Join(d.path, name)
	f, err := safefile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	file, err := io.ReadAll(io.LimitReader(f, d.o.MaxBytes+1))
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	if int64(len(file)) > d.o.MaxBytes {
		return nil, nil, fmt.Errorf("state file %s: larger than %d bytes: ignored", path, d.o.MaxBytes)
	}
	s, end, err := decode(d.o.Key, file)
	if err != nil {
		return nil, nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return s, end, nil
}

// Keep makes s the state of s.Key in memory at once, for the conversation's next request;
// Put writes it to disk. The proxy keeps a state before it forwards a request and puts it
// once the response has gone back, so that no disk write adds to a request's latency.
func (d *Dir) Keep(s *State) {
	s.Updated = d.now()
	s.Messages = len(s.Orig)
	d.mu.Lock()
	name := fileName(s.Key)
	fi := d.sizes[name]
	fi.size, fi.updated, fi.state = memOf(s), s.Updated, s
	d.unindex(name, fi.first)
	fi.first = ""
	if len(s.OrigRaw) > 0 {
		fi.first = s.OrigRaw[0]
		names := append([]string{name}, d.first[fi.first]...)
		d.first[fi.first] = names[:min(len(names), recentFirst)]
	}
	d.sizes[name] = fi
	d.pruneLocked()
	d.mu.Unlock()
}

// recentFirst is how many conversations Recent offers for one first message: clients
// whose sessions all open alike (Codex's developer message) run several at once.
const recentFirst = 4

// Recent returns the messages of the last requests kept in memory (Keep) whose first
// message is first, byte for byte (their State.OrigRaw, not to be changed), newest first,
// none when there is none: what the proxy reads a request against before it knows the
// conversation.
func (d *Dir) Recent(first string) [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out [][]string
	for _, name := range d.first[first] {
		if st := d.sizes[name].state; st != nil && len(st.OrigRaw) > 0 && st.OrigRaw[0] == first {
			out = append(out, st.OrigRaw)
		}
	}
	return out
}

// unindex takes the file name out of Recent's index under its first message first.
func (d *Dir) unindex(name, first string) {
	if first == "" {
		return
	}
	names := d.first[first]
	for i, n := range names {
		if n == name {
			names = append(names[:i:i], names[i+1:]...)
			break
		}
	}
	if len(names) == 0 {
		delete(d.first, first)
	} else {
		d.first[first] = names
	}
}

// Put replaces the state of s.Key and drops what the bounds no longer allow.
func (d *Dir) Put(s *State) error { return d.Prepare(s)() }

// Prepare encodes s (the caller holds Lock(s.Key)) and returns the write of it to disk,
// which may run after Unlock: the conversation's next request need not wait for the disk.
// A write overtaken by a later Prepare of the same conversation writes nothing, so the file
// never goes back to an older state.
func (d *Dir) Prepare(s *State) func() error { return d.PrepareSent(s, nil) }

// PrepareSent is Prepare that also describes the conversation's last request as sent (its
// meta; sent.go: the request itself is s's SentHead, Sent and SentTail, written with the
// state), after the state, under the same rule: a write overtaken by a later one of the
// conversation writes nothing. s is not to change once prepared: the write encodes it
// then, as what it adds to the state the file has.
func (d *Dir) PrepareSent(s *State, meta *Sent) func() error {
	s.Updated = d.now()
	s.Messages = len(s.Orig)
	name := fileName(s.Key)
	var desc []byte
	if meta != nil {
		meta.Conversation, meta.Document = s.Key, name
		var err error
		if desc, err = json.Marshal(meta); err != nil {
			return func() error { return err }
		}
	}
	d.mu.Lock()
	d.seq[name]++
	seq := d.seq[name]
	fi := d.sizes[name]
	if desc != nil {
		fi.sent = int64(len(desc))
	}
	fi.size = memOf(s)
	if fi.end != nil {
		fi.size = max(fi.size, fi.end.size)
	}
	fi.updated, fi.state = s.Updated, s
	d.sizes[name] = fi
	d.mu.Unlock()
	return func() error {
		d.wmu.Lock()
		defer d.wmu.Unlock()
		d.mu.Lock()
		stale := d.seq[name] != seq
		fi := d.sizes[name]
		d.mu.Unlock()
		if stale {
			return nil
		}
		end, err := d.write(name, fi.disk, fi.end, s)
		d.mu.Lock()
		if fi, ok := d.sizes[name]; ok {
			fi.disk, fi.end = s, end
			if err != nil {
				fi.disk, fi.end = nil, nil
			} else {
				fi.size = max(end.size, memOf(s))
			}
			d.sizes[name] = fi
		}
		d.mu.Unlock()
		if err != nil {
			return err
		}
		if desc != nil {
			if err := d.writeSent(name, desc); err != nil {
				return err
			}
		}
		d.mu.Lock()
		d.pruneLocked()
		d.mu.Unlock()
		return nil
	}
}

// write makes the file name hold s: a record appended to the log when the file holds
// disk and ends at end, else (and when the log has grown to twice the state) the file
// written whole. It returns where the file ends then.
func (d *Dir) write(name string, disk *State, end *tail, s *State) (*tail, error) {
	path := filepath.Join(d.path, name)
	if disk != nil && end != nil {
		line, mac, err := appendRecord(nil, d.o.Key, end.mac, disk, s, d.o.Canonical)
		if err != nil {
			return nil, err
		}
		if size := end.size + int64(len(line)); size <= 2*int64(sizeOf(s))+4096 {
			appended, err := appendLine(path, line, end.size)
			if err != nil {
				return nil, err
			}
			if appended {
				return &tail{mac: mac, size: size}, nil
			}
		}
	}
	file, mac, err := snapshot(d.o.Key, s, d.o.Canonical)
	if err != nil {
		return nil, err
	}
	if err := safefile.WriteFile(path, file); err != nil {
		return nil, err
	}
	return &tail{mac: mac, size: int64(len(file))}, nil
}

// appendLine appends line to the file at path and syncs it, if the file is still the size
// at which this process left it: else (removed, replaced, written by another proxy on the
// same store) it appends nothing and says so, and the file is to be written whole.
func appendLine(path string, line []byte, size int64) (bool, error) {
	f, err := safefile.OpenAppend(path, 0o600)
	if err != nil {
		return false, err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		f.Close()
		return false, nil
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil, err
}

// All returns every conversation's state that has not expired, newest first.
func (d *Dir) All() []*State {
	d.mu.Lock()
	names := make([]string, 0, len(d.sizes))
	for n := range d.sizes {
		names = append(names, n)
	}
	d.mu.Unlock()
	var out []*State
	for _, n := range names {
		d.mu.Lock()
		mem := d.sizes[n].state
		var s State
		if mem != nil {
			s = *mem
		}
		d.mu.Unlock()
		if mem != nil {
			if d.now().Sub(s.Updated) <= d.o.MaxAge {
				s.Sent, s.Orig = nil, nil
				out = append(out, &s)
			}
			continue
		}
		st, _, err := d.read(n)
		if err == nil && d.now().Sub(st.Updated) <= d.o.MaxAge {
			st.Sent, st.Orig = nil, nil
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out
}

// pruneLocked removes expired files, then the oldest until the count and size bounds hold.
func (d *Dir) pruneLocked() {
	now := d.now()
	type named struct {
		name string
		fileInfo
	}
	var all []named
	var total int64
	for n, fi := range d.sizes {
		if now.Sub(fi.updated) > d.o.MaxAge {
			d.remove(n)
			continue
		}
		all = append(all, named{n, fi})
		total += fi.size + fi.sent
	}
	if len(all) <= d.o.MaxCount && total <= d.o.MaxBytes {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].updated.Before(all[j].updated) })
	for _, f := range all {
		if len(all) <= d.o.MaxCount && total <= d.o.MaxBytes {
			break
		}
		d.remove(f.name)
		all = all[1:]
		total -= f.size + f.sent
	}
}

func (d *Dir) remove(name string) {
	removeFile(filepath.Join(d.path, name))
	if d.sizes[name].sent > 0 {
		d.removeSent(name)
	}
	d.unindex(name, d.sizes[name].first)
	delete(d.sizes, name)
	delete(d.seq, name)
}
