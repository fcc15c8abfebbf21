// Package store owns ctxkit's offload store, where ctx-persist puts tool results that are
// too big to keep in a conversation, ctx-snip the results (and call inputs) it clears, and
// ctx-summarize --offload the document it summarized. The other
// packages that write files are cli (-o, --in-place, --stats-file), tokens (the count
// cache) and llm (the circuit breaker's state), all by safefile's rules; the tiers
// themselves write nothing.
//
// The store is plain files on purpose, so grep -r and ls work on it, cat on the texts
// stored a few at a time, and ctx-recall (Get) on every text:
//
//	DIR/                  mode 0700
//	DIR/index.jsonl       mode 0600, one JSON object a line per stored result (Entry)
//	DIR/ab/               mode 0700, named by the first two hex digits of the hash
//	DIR/ab/abcdef0123...  mode 0600, the stored bytes exactly, named by their SHA-256
//	DIR/packs/            mode 0700, texts a Batch stored many at a time (pack.go)
//	DIR/packs/H.pack      mode 0600, the texts one after the other, each and a newline
//	DIR/packs/H.idx       mode 0600, "ctxkit-pack 1", then "HASH OFFSET SIZE" a text;
//	                      H is the SHA-256 of the index (so of the pack too)
//
// A text has a file of its own (the path a placeholder names, DIR/ab/HASH, which a file
// tool or cat reads) when Put stored it, a LooseBatch did, or a Batch of at most packMin
// (8) new texts did; a Batch of more writes one pack, so that clearing a thousand results
// costs a few files, not a thousand: a packed text has no file at the placeholder's path,
// and is read by Get (ctx-recall --read PATH, ctx-persist --restore). So the placeholders
// of a tool whose Batch may pack (ctx-snip's) send the model to ctx-recall --read PATH,
// never to the file; those that promise a file (ctx-persist's "cat PATH", ctx-summarize
// --offload's) are written by LooseBatch and Put. Stores of loose files only, as earlier
// versions wrote them, read as before.
//
// Promises:
//
//   - Put makes a file durable (temp file, fsync, link or rename, fsync of the directory)
//     before it returns, so a caller that emits a reference after Put never points at a
//     partial file, whatever happens afterwards. A Batch does the same for many files,
//     their fsyncs in flight together, or for its pack: the pack and its index synced,
//     the pack named, then the index (texts are found through indexes only), then the
//     folder synced; never a sync of the whole file system, which would wait for other
//     processes' dirty pages. A store whose syncing is deferred (DeferSync: ctx-proxy, to
//     keep the disk off the request path) names files and packs at once and leaves their
//     durability to SyncWritten, run once the response has gone back.
//   - Has knows a stored text by its name and size, without reading it: a file or an
//     index is named only once complete, so a caller referring to text stored before
//     writes nothing. Pack indexes are read once per process.
//   - The same bytes are stored once (a file, or a place in a pack: Batch.Add of a text
//     stored either way writes nothing; Put and a LooseBatch's Add write a file for a text
//     that is only packed, since their callers promise one); several processes may Put,
//     commit Batches and Append into one store at the same time (a pack is named by its
//     content: two writers of the same pack write the same bytes). Index lines are
//     appended with O_APPEND, one write each, so they are never interleaved or torn on a
//     local file system.
//   - Get resolves nothing but a 64-digit lowercase hex hash, under the store root only
//     (os.Root), refuses symbolic links inside the store (a file, a shard, a pack, the
//     packs folder), and checks the SHA-256 of what it read. A reference in a document is
//     data from outside; it cannot name another file.
//   - Tool names and other metadata never become parts of a path.
//   - Nothing is written through a symbolic link or into another user's folder or index
//     (safefile's rules): a store named inside a cloned repository may be a link the
//     repository carries. Temp files (.tmp-<16 hex digits>) a killed run left in a shard
//     or in packs/, and a pack left without its index, are removed by the next run that
//     writes there, once stale (safefile.StaleAfter).
//   - The default store is outside the work tree (DefaultDir): one per working directory
//     in the user's state directory, so that nothing offloaded, and none of ctx-proxy's
//     memory of conversations, is committed with a project. A store Create makes inside a
//     git work tree gets a .gitignore of "*".
package store

import (
	"bufio"
	"bytes"
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
	"strings"
	"sync"
	"time"
	"unicode"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// IndexName is the index file inside the store directory.
const IndexName = "index.jsonl"

// Errors Get and Open report, wrapped with the file they concern.
var (
	// ErrNoStore: the store directory does not exist.
	ErrNoStore = errors.New("no store here")
	// ErrBadHash: the name is not a SHA-256 hash (64 lowercase hex digits).
	ErrBadHash = errors.New("not a SHA-256 hash")
	// ErrNotFound: no file is stored under the hash.
	ErrNotFound = errors.New("not in the store")
	// ErrNotRegular: the store holds something other than a plain file or directory
	// where a stored file or its folder should be (a symbolic link, a device...).
	ErrNotRegular = errors.New("not a regular file (symbolic links are refused)")
	// ErrCorrupt: the stored bytes do not have the SHA-256 of their name.
	ErrCorrupt = errors.New("content does not match its SHA-256 (altered or damaged)")
)

// Store is an open store directory. Its methods are safe for concurrent use.
type Store struct {
	dir  string // absolute
	root *os.Root
	perm fs.FileMode

	mu sync.Mutex
	// shards are the shard directories this run checked (and swept of stale temp files),
	// each open, so that a file is written, checked and named with one system call each
	// rather than a walk from the root every time.
	shards map[string]*os.Root
	// swept: the directories this run removed stale temp files from (the first time it
	// wrote there), or made.
	swept map[string]bool
	// packs: where the texts stored in packs are, read from their indexes (pack.go).
	packs *packSet

	// deferred: Commit and Append do not wait for the disk; SyncWritten does it later.
	deferred bool
}

// SyncEnv names the environment variable by which ctx-proxy asks the stages it runs to
// leave the store's syncing to it: "later" (see DeferSync).
const SyncEnv = "CTX_STORE_SYNC"

// DeferSync makes Commit and Append name their files without waiting for the disk: the
// files are there for every reader at once (the page cache), but a crash of the machine
// (not of a process) before SyncWritten runs may lose them. ctx-proxy defers so: a request's
// added latency must not wait for the disk, and it syncs what the request wrote once the
// response has gone back.
func (s *Store) DeferSync() { s.deferred = true }

// Deferred reports whether the store's syncing is deferred (DeferSync): the caller is on
// a request's path, where work that can wait should.
func (s *Store) Deferred() bool { return s.deferred }

// DeferSyncIf defers syncing when getenv(SyncEnv) says "later".
func (s *Store) DeferSyncIf(getenv func(string) string) {
	if getenv != nil && getenv(SyncEnv) == "later" {
		s.DeferSync()
	}
}

// Entry is one line of the index: a stored result and where it came from.
type Entry struct {
	Hash       string    `json:"hash"`
	Tool       string    `json:"tool"`
	ToolCallID string    `json:"tool_call_id"`
	Source     string    `json:"source"`
	Bytes      int       `json:"bytes"`
	Lines      int       `json:"lines"`
	Tokens     int       `json:"tokens"`
	Tokenizer  string    `json:"tokenizer,omitempty"`
	Time       time.Time `json:"time"`
	// Raw is the hash of a second stored file that holds the result's original JSON
	// string literal, kept when the document spelled the text with escapes a re-encoding
	// would not reproduce.
	Raw string `json:"raw,omitempty"`
	// Input marks the arguments of a tool call (ctx-snip --clear-inputs), not its result.
	Input bool `json:"input,omitempty"`

	// Line is the index line as read (Index only).
	Line []byte `json:"-"`
}

// Hash returns the lowercase hex SHA-256 of data: the name it is stored under.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// HashString is Hash of a text, read in place: []byte(text) would copy it, and the texts a
// run stores add up to most of its input.
func HashString(text string) string {
	return Hash(unsafe.Slice(unsafe.StringData(text), len(text)))
}

// ValidHash reports whether h is exactly 64 lowercase hex digits: the only names Get
// resolves.
func ValidHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Path is where a store at dir keeps the file of hash h: dir/h[:2]/h. It only joins
// names; h must be valid.
func Path(dir, h string) string { return filepath.Join(dir, h[:2], h) }

// name is the path of h relative to the root.
func name(h string) string { return h[:2] + "/" + h }

// Create opens the store at dir, creating the directory (mode 0700) when it does not
// exist. A store it creates inside a git work tree gets a .gitignore of "*" (GitIgnore), so
// that `git add -A` never commits what was offloaded.
func Create(dir string) (*Store, error) {
	if dir == "" {
		return nil, ErrNoDir
	}
	_, statErr := os.Lstat(dir)
	if err := safefile.MkdirAll(dir); err != nil {
		if errors.Is(err, safefile.ErrUnsafe) {
			return nil, fmt.Errorf("store %w", err)
		}
		return nil, fmt.Errorf("create store %q: %w", dir, reason(err))
	}
	if errors.Is(statErr, fs.ErrNotExist) && InWorkTree(dir) {
		if err := safefile.WriteFile(filepath.Join(dir, GitIgnore), []byte("*\n")); err != nil {
			return nil, fmt.Errorf("store %q: write its %s: %w", dir, GitIgnore, err)
		}
	}
	return Open(dir)
}

// GitIgnore is the file Create writes in a store it makes inside a git work tree.
const GitIgnore = ".gitignore"

// InWorkTree reports whether dir is inside a git work tree: whether it or a folder above
// it holds a .git (a folder, or the file of a linked work tree or submodule).
func InWorkTree(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; {
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			return true
		}
		up := filepath.Dir(p)
		if up == p {
			return false
		}
		p = up
	}
}

// ErrNoDir: no store was named and the default one has no place (no state directory).
var ErrNoDir = errors.New("no store directory: name one with --store DIR or CTX_STORE, or set HOME or XDG_STATE_HOME for the default one")

// StoresDir is the folder of the default stores inside the user's state directory.
const StoresDir = "stores"

// DefaultDir is the store of the working directory wd when none is named:
// stateDir/stores/ProjectName(wd), outside every work tree. "" when stateDir is "".
func DefaultDir(stateDir, wd string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, StoresDir, ProjectName(wd))
}

// ProjectName names the working directory dir among the default stores, readably and
// uniquely: its path with every run of separators and other characters than letters,
// digits, '.' and '_' made one '-' (its last 48 characters, which name the project, when
// it is longer), then '-' and the first 12 hex digits of the SHA-256 of the path.
// "/home/me/src/app" gives "home-me-src-app-" and 12 hex digits.
func ProjectName(dir string) string {
	clean := filepath.Clean(dir)
	var b []rune
	for _, r := range clean {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' {
			b = append(b, r)
		} else if len(b) > 0 && b[len(b)-1] != '-' {
			b = append(b, '-')
		}
	}
	if len(b) > 48 {
		b = b[len(b)-48:]
	}
	name := strings.Trim(string(b), "-.")
	if name == "" {
		name = "root"
	}
	sum := sha256.Sum256([]byte(clean))
	return name + "-" + hex.EncodeToString(sum[:6])
}

// Open opens an existing store at dir. A missing directory is ErrNoStore. The directory
// itself may not be a symbolic link or another user's (safefile.ErrUnsafe): a store named
// by a relative path may be one a cloned repository planted.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, ErrNoDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", dir, err)
	}
	st, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("store %q: %w", dir, ErrNoStore)
	case err != nil:
		return nil, fmt.Errorf("store %q: %w", dir, reason(err))
	case st.Mode()&fs.ModeSymlink == 0 && !st.IsDir():
		return nil, fmt.Errorf("store %q: not a directory", dir)
	}
	if err := safefile.CheckDirInfo(dir, st); err != nil {
		return nil, fmt.Errorf("store %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", dir, reason(err))
	}
	// What was opened must be what was checked (not a link swapped in between).
	if got, err := root.Stat("."); err != nil || !os.SameFile(st, got) {
		root.Close()
		return nil, fmt.Errorf("store %q: changed while it was opened", dir)
	}
	return &Store{dir: abs, root: root, perm: st.Mode().Perm(), shards: map[string]*os.Root{}, swept: map[string]bool{}, packs: packSetOf(abs, st)}, nil
}

// Close releases the store's directory handles.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, r := range s.shards {
		r.Close()
	}
	s.shards = map[string]*os.Root{}
	s.mu.Unlock()
	return s.root.Close()
}

// Dir is the store's absolute path.
func (s *Store) Dir() string { return s.dir }

// Perm is the permission bits the store directory had when it was opened. Anything
// beyond 0700 lets other users read stored results, which often hold secrets.
func (s *Store) Perm() fs.FileMode { return s.perm }

// Path is the absolute path of the file stored under h.
func (s *Store) Path(h string) string { return Path(s.dir, h) }

// Put stores data under its hash and returns the hash. created is false when an intact
// copy was already there (from this run, an earlier one or a concurrent process). When Put
// returns without error the file is complete and synced to disk: a file of its own, the
// path Path names, even when the text was packed before (ctx-summarize --offload's
// placeholder promises a file). A run that stores many files uses a Batch, which syncs
// them all at once.
func (s *Store) Put(data []byte) (h string, created bool, err error) {
	h = Hash(data)
	sh, err := s.mkdirShard(h[:2], !s.deferred)
	if err != nil {
		return h, false, err
	}
	if s.intact(sh, h, data) {
		return h, false, nil
	}
	tmp, err := s.writeTemp(sh, h[:2], data, !s.deferred)
	if err != nil {
		return h, false, err
	}
	created, err = s.place(sh, tmp, h, len(data))
	if err != nil {
		return h, false, err
	}
	if !s.deferred {
		syncDir(sh, ".")
	}
	return h, created, nil
}

// Has reports whether a text of size bytes is stored under h, in a regular file of its
// own or in a pack: a reference to text stored before (by an earlier run, or ctx-persist
// earlier in the same pipeline) needs no write. It looks at the name and the size only,
// not at the bytes (Put and Batch.Add compare them): a file or a pack's index is named
// only once complete, so a named text of the right size is the one written, unless the
// disk or a person altered it, which Get detects (ErrCorrupt). The packs' indexes are read
// the first time, not again: a pack another process writes meanwhile is not seen, and its
// texts are written again if asked.
func (s *Store) Has(h string, size int) bool {
	if !ValidHash(h) {
		return false
	}
	if loc, ok := s.packed(h, false); ok && !loc.irregular {
		return loc.size == int64(size)
	}
	return s.hasFile(h, size)
}

// HasFile is Has for a text in a regular file of its own only (DIR/ab/HASH), not in a pack:
// what a caller whose placeholder promises a file (LooseBatch) may refer to without
// writing.
func (s *Store) HasFile(h string, size int) bool {
	return ValidHash(h) && s.hasFile(h, size)
}

func (s *Store) hasFile(h string, size int) bool {
	sh, err := s.openDir(h[:2], false, false)
	if err != nil || sh == nil {
		return false
	}
	st, err := sh.Lstat(h)
	return err == nil && st.Mode().IsRegular() && st.Size() == int64(size)
}

// place gives the complete temp file tmp its name, that of hash h (size bytes), and
// removes the temp name. created is false when another writer finished the same file
// first.
func (s *Store) place(sh *os.Root, tmp, h string, size int) (created bool, err error) {
	target := name(h)
	defer sh.Remove(tmp) // gone after a rename; after a link, the extra name
	switch err := sh.Link(tmp, h); {
	case err == nil:
		s.wrote(h[:2], h)
		return true, nil
	case errors.Is(err, fs.ErrExist) && s.intactHashed(sh, h, size):
		// Another writer finished the same file first.
		return false, nil
	}
	// No hard links on this file system, or a damaged copy to replace: rename, which
	// replaces the target atomically.
	if err := sh.Rename(tmp, h); err != nil {
		return false, fmt.Errorf("store %q: write %s: %w", s.dir, target, reason(err))
	}
	s.wrote(h[:2], h)
	return true, nil
}

// Batch stores many files with two syncs of the file system in all, where Put makes two
// fsyncs per file (a few hundred results cleared from a session took ctx-snip more system
// time in fsync than all its work): Add writes each file under a temp name without
// syncing it, and Commit syncs them all, names them, and syncs the names. A file is named
// only once its bytes are on disk, so a name never points at a partial file, whatever
// happens; a batch never committed leaves only temp files, which Abort removes (and a
// later run's sweep, after a crash). Add may be called from several goroutines.
//
// A batch that has more than packMin new texts writes them as one pack instead (pack.go):
// the texts one after the other in one file, PacksDir/<hash>.pack, and where each is in a
// second, PacksDir/<hash>.idx, both synced then named (the index last) by Commit: a few
// system calls and fsyncs in all, where a file a text cost ctx-snip more system time than
// the rest of its work.
//
// A batch that LooseBatch started never packs: each new text gets a file of its own, and a
// text stored only in a pack gets one too.
type Batch struct {
	s     *Store
	loose bool // LooseBatch: files only, never a pack
	mu    sync.Mutex
	files map[string]*batchFile
	order []*batchFile
	fresh int         // new texts added
	held  int         // bytes of them kept in memory (batchFile.data)
	pack  *packWriter // past packMin of them
}

type batchFile struct {
	hash   string
	sh     *os.Root // its shard
	tmp    string   // its temp name in the shard; "" when an intact copy was stored already
	size   int
	packed bool   // written into the batch's pack
	data   []byte // its bytes, kept until Commit (maxHeld)
}

// Batch starts a batch of files for the store.
func (s *Store) Batch() *Batch { return &Batch{s: s, files: map[string]*batchFile{}} }

// LooseBatch starts a batch whose texts each end as a file of their own, DIR/ab/HASH,
// however many there are: for a caller whose placeholder promises a file that a file tool
// or cat opens (ctx-persist's). A text stored before only in a pack is written as a file
// too.
func (s *Store) LooseBatch() *Batch {
	return &Batch{s: s, loose: true, files: map[string]*batchFile{}}
}

// Add writes data under a temp name, unless an intact copy is stored already or the
// batch has it, and returns its hash.
func (b *Batch) Add(data []byte) (h string, err error) {
	h = Hash(data)
	b.mu.Lock()
	_, dup := b.files[h]
	if !dup {
		b.files[h] = nil // taken: a concurrent Add of the same bytes writes nothing
	}
	b.mu.Unlock()
	if dup {
		return h, nil
	}
	f := &batchFile{hash: h, size: len(data)}
	defer func() {
		b.mu.Lock()
		if err == nil {
			b.files[h] = f
			b.order = append(b.order, f)
		} else {
			delete(b.files, h)
		}
		b.mu.Unlock()
	}()
	if !b.loose && b.s.packIntact(h, data) {
		return h, nil
	}
	if sh, err := b.s.openDir(h[:2], false, false); err == nil && sh != nil && b.s.intact(sh, h, data) {
		return h, nil
	}
	b.mu.Lock()
	b.fresh++
	packing := !b.loose && b.fresh > packMin
	if packing {
		err = b.startPack()
	}
	hold := !b.loose && !packing && b.held+len(data) <= maxHeld // (a LooseBatch's go to files at once)
	if hold {
		b.held += len(data)
	}
	w := b.pack
	b.mu.Unlock()
	switch {
	case err != nil:
		return h, err
	case packing:
		f.packed = true
		if err := w.add(h, bytes.NewReader(data), int64(len(data))); err != nil {
			return h, fmt.Errorf("store %q: write %s: %w", b.s.dir, PacksDir, reason(err))
		}
		return h, nil
	case hold:
		// Not known yet: a file of its own or a place in the pack (Commit decides).
		f.data = bytes.Clone(data)
		return h, nil
	}
	err = f.writeLoose(b.s, data)
	return h, err
}

// writeLoose writes f's bytes under a temp name in its shard, not synced (Commit does).
func (f *batchFile) writeLoose(s *Store, data []byte) (err error) {
	f.sh, err = s.mkdirShard(f.hash[:2], false)
	if err != nil {
		return err
	}
	f.tmp, err = s.writeTemp(f.sh, f.hash[:2], data, false)
	return err
}

// maxHeld is how many bytes of the first packMin new texts a Batch keeps in memory until
// Commit knows whether they go to a pack or to files of their own: past it a text is
// written at once to a temp file in its shard (and copied into the pack if there is one).
const maxHeld = 4 << 20

// Commit makes every file added durable under its name and reports which of them this
// batch created (not stored before, nor by a concurrent writer first). On error, the files
// not yet named are removed.
func (b *Batch) Commit() (created map[string]bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pack != nil {
		defer b.abort()
		return b.commitPack()
	}
	for _, f := range b.order {
		if f.data != nil {
			err := f.writeLoose(b.s, f.data)
			f.data = nil
			if err != nil {
				b.abort()
				return nil, err
			}
		}
	}
	var shards []string
	seen := map[string]bool{}
	for _, f := range b.order {
		if f.tmp != "" && !seen[f.hash[:2]] {
			seen[f.hash[:2]] = true
			shards = append(shards, f.hash[:2])
		}
	}
	if len(shards) == 0 {
		return map[string]bool{}, nil
	}
	defer b.abort()
	var temps []rooted
	for _, f := range b.order {
		if f.tmp != "" {
			temps = append(temps, rooted{f.sh, f.tmp})
		}
	}
	if b.s.deferred {
		temps = nil // named now, synced later (SyncWritten)
	} else if err := b.s.syncFiles(b.s.under(shards...), temps); err != nil {
		return nil, fmt.Errorf("store %q: sync: %w", b.s.dir, reason(err))
	}
	created = map[string]bool{}
	for _, f := range b.order {
		if f.tmp == "" {
			continue
		}
		ok, err := b.s.place(f.sh, f.tmp, f.hash, f.size)
		f.tmp = ""
		if err != nil {
			return nil, err
		}
		created[f.hash] = ok
	}
	// (the root too: it holds the names of shards the batch made)
	if b.s.deferred {
		return created, nil
	}
	if err := b.s.syncFiles(b.s.under(append(shards, ".")...), nil); err != nil {
		return nil, fmt.Errorf("store %q: sync: %w", b.s.dir, reason(err))
	}
	return created, nil
}

// Abort removes the temp files of a batch not committed.
func (b *Batch) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.abort()
}

func (b *Batch) abort() {
	for _, f := range b.order {
		f.data = nil
		if f.tmp != "" {
			f.sh.Remove(f.tmp)
			f.tmp = ""
		}
	}
	if b.pack != nil {
		b.pack.abort()
	}
}

// mkdirShard makes the directory a file's name starts with, checks that it is one, the
// user's, and returns it open. The first time a run writes into an existing shard, it
// removes the temp files killed runs left there, so repeated crashes cannot fill the disk;
// later files of the run find the shard open, checked and swept. A new directory's name is
// synced at once when sync is set (a Batch syncs it with its files).
func (s *Store) mkdirShard(shard string, sync bool) (*os.Root, error) {
	sh, err := s.openDir(shard, true, sync)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	first := !s.swept[shard]
	s.swept[shard] = true
	s.mu.Unlock()
	if first {
		s.sweep(shard)
	}
	return sh, nil
}

// openDir is mkdirShard, or with create unset the same for a directory that exists
// already: nil, nil when it does not (nothing to read there, nothing made).
func (s *Store) openDir(shard string, create, sync bool) (*os.Root, error) {
	s.mu.Lock()
	sh := s.shards[shard]
	s.mu.Unlock()
	if sh != nil {
		return sh, nil
	}
	err := fs.ErrExist
	if create {
		err = s.root.Mkdir(shard, 0o700)
	}
	made := err == nil
	switch {
	case made && sync:
		s.syncDir(".")
	case made:
		s.wrote(shard, "") // its name, in the root
	case !made && !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("store %q: create %s: %w", s.dir, shard, reason(err))
	}
	st, err := s.root.Lstat(shard)
	if !create && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store %q: %s: %w", s.dir, shard, reason(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("store %q: %s: %w", s.dir, shard, ErrNotRegular)
	}
	if err := safefile.CheckDirInfo(filepath.Join(s.dir, shard), st); err != nil {
		return nil, fmt.Errorf("store %w", err)
	}
	sh, err = s.root.OpenRoot(shard)
	if err != nil {
		return nil, fmt.Errorf("store %q: %s: %w", s.dir, shard, reason(err))
	}
	// What was opened must be what was checked (not a link swapped in between).
	if got, err := sh.Stat("."); err != nil || !os.SameFile(st, got) {
		sh.Close()
		return nil, fmt.Errorf("store %q: %s: changed while it was opened", s.dir, shard)
	}
	s.mu.Lock()
	if first := s.shards[shard]; first != nil { // another goroutine's, first
		s.mu.Unlock()
		sh.Close()
		return first, nil
	}
	s.shards[shard] = sh
	s.mu.Unlock()
	if made {
		s.mu.Lock()
		s.swept[shard] = true // new: nothing to sweep
		s.mu.Unlock()
	}
	return sh, nil
}

// tempPrefix starts the names of files being written; isTemp recognises exactly them.
const tempPrefix = ".tmp-"

func isTemp(name string) bool { return safefile.IsHexTemp(name, tempPrefix, "") }

// intact reports whether the file h in shard sh is a regular file holding exactly data
// (whose hash is h). The file is compared a piece at a time, not read whole and hashed: a run that
// stores again what an earlier one stored (every turn of ctx-proxy, every run of a
// pipeline on a growing session) checks each file it would write.
func (s *Store) intact(sh *os.Root, h string, data []byte) bool {
	st, err := sh.Lstat(h)
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(data)) {
		return false
	}
	f, err := sh.Open(h)
	if err != nil {
		return false
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(st, got) {
		return false
	}
	bp := compareBuffers.Get().(*[]byte)
	defer compareBuffers.Put(bp)
	buf := *bp
	for {
		n, err := io.ReadFull(f, buf)
		if n > len(data) || !bytes.Equal(buf[:n], data[:n]) {
			return false
		}
		data = data[n:]
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return len(data) == 0
		case err != nil:
			return false
		}
	}
}

// intactHashed is intact for a caller that no longer has the data: the file is read whole
// and hashed (place, when another writer named the file first: rare).
func (s *Store) intactHashed(sh *os.Root, h string, size int) bool {
	st, err := sh.Lstat(h)
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(size) {
		return false
	}
	data, err := read(sh, h, st)
	return err == nil && Hash(data) == h
}

// compareBuffers hold intact's pieces of a file.
var compareBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// writeTemp writes data to a new file in shard sh (named dir) with a name no other writer
// uses, and syncs it when sync is set. It returns the name, in the shard.
func (s *Store) writeTemp(sh *os.Root, dir string, data []byte, sync bool) (string, error) {
	f, tmp, err := s.createTemp(sh, dir)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		sh.Remove(tmp)
		return "", fmt.Errorf("store %q: write %s: %w", s.dir, dir, reason(err))
	}
	return tmp, nil
}

// createTemp creates a new file in shard sh (named dir) with a name no other writer uses.
func (s *Store) createTemp(sh *os.Root, dir string) (*os.File, string, error) {
	for try := 0; ; try++ {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp := tempPrefix + hex.EncodeToString(rnd[:])
		f, err := sh.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrExist) || try == 3 {
			return nil, "", fmt.Errorf("store %q: write %s: %w", s.dir, dir, reason(err))
		}
	}
}

// syncDir makes a new name in dir durable; best effort, since not every file system can
// sync a directory.
func (s *Store) syncDir(dir string) { syncDir(s.root, dir) }

func syncDir(r *os.Root, dir string) {
	if d, err := r.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Get returns the bytes stored under h, in a file of its own or in a pack, after checking
// that they still have that hash. Only a valid hash resolves, only to a regular file under
// the store root reached without symbolic links: ErrBadHash, ErrNotFound, ErrNotRegular
// and ErrCorrupt say why not.
func (s *Store) Get(h string) ([]byte, error) {
	if !ValidHash(h) {
		return nil, fmt.Errorf("%q: %w", h, ErrBadHash)
	}
	target := name(h)
	for _, p := range []string{h[:2], target} {
		st, err := s.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if loc, ok := s.packed(h, true); ok {
				return s.readPacked(h, loc)
			}
			if st, err := s.root.Lstat(PacksDir); err == nil && !st.IsDir() {
				return nil, fmt.Errorf("%s: %w", PacksDir, ErrNotRegular)
			}
			return nil, fmt.Errorf("%s: %w", target, ErrNotFound)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", target, reason(err))
		case p == target && !st.Mode().IsRegular(), p != target && !st.IsDir():
			return nil, fmt.Errorf("%s: %w", p, ErrNotRegular)
		}
		if p == target {
			data, err := read(s.root, target, st)
			if err != nil {
				return nil, err
			}
			if Hash(data) != h {
				return nil, fmt.Errorf("%s: %w", target, ErrCorrupt)
			}
			return data, nil
		}
	}
	panic("unreachable")
}

// read reads the regular file target, which Lstat described as want, and refuses it if
// what was opened is not that file (replaced, by a link for instance, in between).
func read(r *os.Root, target string, want fs.FileInfo) ([]byte, error) {
	f, err := r.Open(target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, reason(err))
	}
	defer f.Close()
	got, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, reason(err))
	}
	if !os.SameFile(want, got) {
		return nil, fmt.Errorf("%s: %w", target, ErrNotRegular)
	}
	data := make([]byte, 0, got.Size()+1)
	data, err = readAll(f, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, reason(err))
	}
	return data, nil
}

func readAll(r io.Reader, b []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// Append adds entries to the index, one write per line with O_APPEND, so lines of
// concurrent writers never mix. The index is synced before Append returns.
func (s *Store) Append(entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if st, err := s.root.Lstat(IndexName); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("store %q: %s: %w", s.dir, IndexName, ErrNotRegular)
	}
	f, err := s.root.OpenFile(IndexName, os.O_WRONLY|os.O_APPEND|os.O_CREATE|safefile.NoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("store %q: write %s: %w", s.dir, IndexName, reason(err))
	}
	// Another user's index (planted in a shared folder) is not appended to.
	if st, err := f.Stat(); err != nil {
		f.Close()
		return fmt.Errorf("store %q: write %s: %w", s.dir, IndexName, reason(err))
	} else if err := safefile.CheckInfo(filepath.Join(s.dir, IndexName), st); err != nil {
		f.Close()
		return fmt.Errorf("store %w", err)
	}
	for _, e := range entries {
		line, merr := e.marshal()
		if merr != nil {
			err = merr
			break
		}
		if _, err = f.Write(line); err != nil {
			break
		}
	}
	if err == nil && !s.deferred {
		err = f.Sync()
	} else if err == nil {
		s.wrote("", "")
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store %q: write %s: %w", s.dir, IndexName, reason(err))
	}
	return nil
}

func (e Entry) marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// In whole seconds, so the line's length does not depend on when it was written
	// (RFC 3339's fraction drops its trailing zeros): ctx-recall's segments hold offsets
	// into this file, and two stores of the same texts made the same way then differ in
	// the times' digits only (scripts/differential.sh compares them so).
	e.Time = e.Time.UTC().Truncate(time.Second)
	if err := enc.Encode(e); err != nil { // Encode ends the line with "\n"
		return nil, err
	}
	return b.Bytes(), nil
}

// Index reads the index in order. Lines that are not a JSON object (cut short by a
// crash, edited by hand) are skipped and counted in bad. A store without an index yet
// has no entries.
func (s *Store) Index() (entries []Entry, bad int, err error) {
	if st, err := s.root.Lstat(IndexName); err == nil && !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("store %q: %s: %w", s.dir, IndexName, ErrNotRegular)
	}
	f, err := s.root.Open(IndexName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store %q: read %s: %w", s.dir, IndexName, reason(err))
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, rerr := r.ReadBytes('\n')
		if body := bytes.TrimSpace(line); len(body) > 0 {
			var e Entry
			if json.Unmarshal(body, &e) == nil && body[0] == '{' {
				e.Line = body
				entries = append(entries, e)
			} else {
				bad++
			}
		}
		if rerr == io.EOF {
			return entries, bad, nil
		}
		if rerr != nil {
			return entries, bad, fmt.Errorf("store %q: read %s: %w", s.dir, IndexName, reason(rerr))
		}
	}
}

// reason drops the op and path an *fs.PathError repeats: callers name the file themselves.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// syncFiles makes files, and the names in dirs (which hold the files), durable: an fsync
// of each file, then of each directory. Never syncfs, which waits for every dirty page of
// the file system: another process writing a gigabyte next to the store would stall the
// request a tier runs in (ctx-proxy's added latency reached 2 s so). The fsyncs run a few
// at a time, so that a file system that commits its journal once for several of them
// (ext4, xfs) flushes the batch in about the time of one.
func (s *Store) syncFiles(dirs, files []rooted) error {
	if err := s.syncAll(files, false); err != nil {
		return err
	}
	return s.syncAll(dirs, true)
}

// rooted is a path under a directory handle.
type rooted struct {
	r    *os.Root
	name string
}

// under is paths, each under the store's root.
func (s *Store) under(paths ...string) []rooted {
	rs := make([]rooted, len(paths))
	for i, p := range paths {
		rs[i] = rooted{s.root, p}
	}
	return rs
}

// syncParallel is how many fsyncs syncAll has in flight at once.
const syncParallel = 8

// syncAll fsyncs each of paths, syncParallel at a time, and returns the first error. A
// directory that cannot be synced (not every file system can) is no error.
func (s *Store) syncAll(paths []rooted, dirs bool) error {
	if len(paths) == 0 {
		return nil
	}
	errs := make([]error, len(paths))
	sem := make(chan struct{}, syncParallel)
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f, err := p.r.Open(p.name)
			if err != nil {
				errs[i] = err
				return
			}
			if err := f.Sync(); err != nil && !dirs {
				errs[i] = err
			}
			f.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
