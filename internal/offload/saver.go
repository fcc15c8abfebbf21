package offload

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/store"
)

// Saver writes a plan's blobs into the store as they come, a few at a time, as one batch
// (store.Batch: synced all at once at the end), and at the end appends an index line for
// each blob that brought a new file. The store is created when the first blob comes: a run that stores nothing leaves
// no store behind.
type Saver struct {
	dir    string // the store as --store names it
	source string // the input, for the index
	now    func() time.Time
	warnf  func(format string, a ...any)
	getenv func(string) string // for store.SyncEnv; nil: sync as usual
	loose  bool                // Loose: a file a text, never a pack

	s       *store.Store
	batch   *store.Batch
	wg      sync.WaitGroup
	sem     chan struct{}
	files   map[string]*storedFile // one write per distinct file
	order   []*storedFile
	entries []pendingEntry
	// indexing: Finish brings ctx-recall's index up to date, from the terms of each text
	// counted as it is written (index.Count), not by reading the files back; up to
	// maxCounted bytes of text, whose counts are kept until Finish (about half their
	// size): past it, a text is read back as before, so memory stays bounded.
	indexing bool
	counted  atomic.Int64
}

// maxCounted is how much text a Saver counts the terms of as it writes it.
const maxCounted = 32 << 20

type storedFile struct {
	hash    string
	created bool
	err     error
	terms   *index.Counted // a text's terms, when indexing
}

// pendingEntry is an index line waiting for its files to be written.
type pendingEntry struct {
	meta      store.Entry
	text, raw *storedFile
}

// NewSaver returns a Saver into the store at dir (as --store names it) for the input called
// name ("-" for stdin), its index lines dated by now. warnf tells the user, once, when other
// users can read the store.
func NewSaver(dir, name string, now func() time.Time, warnf func(format string, a ...any)) *Saver {
	return &Saver{dir: dir, source: Source(name), now: now, warnf: warnf}
}

// Loose makes every text the Saver stores a file of its own, DIR/ab/HASH, however many
// there are (store.LooseBatch), and Stored count only such files: for a tool whose
// placeholder tells the model to open that file (ctx-persist's "cat PATH"). Without it a
// run that stores many texts packs them (store.Batch), and its placeholders must send the
// model to ctx-recall (ctx-snip's). Called before the first Put or Stored.
func (sv *Saver) Loose() { sv.loose = true }

// DeferSyncIf leaves the store's syncing to the caller's process when getenv says so
// (store.SyncEnv): ctx-proxy syncs once the response has gone back.
func (sv *Saver) DeferSyncIf(getenv func(string) string) { sv.getenv = getenv }

// Source names an input in the index: the absolute path of a file, or "-" for stdin.
func Source(name string) string {
	if name == "-" {
		return "-"
	}
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

// open creates the store, once.
func (sv *Saver) open() error {
	if sv.s != nil {
		return nil
	}
	s, err := store.Create(sv.dir)
	if err != nil {
		return err
	}
	s.DeferSyncIf(sv.getenv)
	sv.s, sv.batch, sv.sem, sv.files = s, s.Batch(), make(chan struct{}, 4), map[string]*storedFile{}
	if sv.loose {
		sv.batch = s.LooseBatch()
	}
	// (A temporary store whose placeholders name another path, ctx-replay's and ctx-count
	// --savings', is searched by no one; under ctx-proxy, syncs deferred, the index waits
	// for the next search.)
	sv.indexing = !s.Deferred() && !(sv.getenv != nil && sv.getenv(cli.StoreShownEnv) != "")
	if perm := s.Perm(); perm&0o077 != 0 {
		sv.warnf("store %q has mode %#o: other users can read the stored results (chmod 700 %s)", sv.dir, perm, ShellQuote(sv.dir))
	}
	return nil
}

// Stored reports whether the files a blob would write are in the store already (store.Has:
// by name and size): the texts a tier stored on an earlier turn, or that ctx-persist stored
// earlier in the pipeline. A caller that knows the hashes and sizes of its blob before
// making it (the plan computed them) then neither makes it nor writes it; it brings no index
// line, as a Put of a stored file brings none. rawHash "" is no second file. The error is
// the store's (it cannot be created).
func (sv *Saver) Stored(hash string, size int, rawHash string, rawSize int) (bool, error) {
	if err := sv.open(); err != nil {
		return false, err
	}
	has := sv.s.Has
	if sv.loose {
		has = sv.s.HasFile
	}
	return has(hash, size) && (rawHash == "" || has(rawHash, rawSize)), nil
}

// Put starts writing the files of blobs; a blob's data is not kept once written. The error
// is the store's (it cannot be created); a write's own comes from Finish.
func (sv *Saver) Put(blobs ...Blob) error {
	if len(blobs) == 0 {
		return nil
	}
	if err := sv.open(); err != nil {
		for _, b := range blobs {
			if b.Release != nil {
				b.Release()
			}
		}
		return err
	}
	// add starts writing data under h, unless it is written already; done is called
	// once the write no longer reads data.
	add := func(h, data string, text bool, started func(), done func()) *storedFile {
		if h == "" {
			return nil
		}
		if fl := sv.files[h]; fl != nil {
			return fl
		}
		fl := &storedFile{hash: h}
		sv.files[h] = fl
		sv.order = append(sv.order, fl)
		sv.wg.Add(1)
		started()
		sv.sem <- struct{}{}
		go func() {
			defer sv.wg.Done()
			defer func() { <-sv.sem }()
			defer done()
			// Batch.Add only reads the bytes: no copy of them.
			b := unsafe.Slice(unsafe.StringData(data), len(data))
			got, err := sv.batch.Add(b)
			if err == nil && got != fl.hash {
				err = fmt.Errorf("store %q: internal: %s stored as %s", sv.dir, fl.hash, got)
			}
			if err == nil && text && sv.indexing && sv.counted.Add(int64(len(b))) <= maxCounted {
				fl.terms = index.Count(b)
			}
			fl.err = err // read only after wg.Wait
		}()
		return fl
	}
	for _, b := range blobs {
		// The blob is released when the last of its writes is done: pending counts them,
		// plus one held until both are started, so that the first to end does not
		// release the blob before the second has begun.
		pending := new(atomic.Int32)
		pending.Add(1)
		started := func() { pending.Add(1) }
		done := func() {
			if pending.Add(-1) == 0 && b.Release != nil {
				b.Release()
			}
		}
		sv.entries = append(sv.entries, pendingEntry{meta: b.Meta, text: add(b.Hash, b.Data, true, started, done), raw: add(b.RawHash, b.RawData, false, started, done)})
		done()
	}
	return nil
}

// Finish waits for the files, then appends the index lines. It returns how many files were
// new. Every file is durable when it returns without error.
func (sv *Saver) Finish() (int, error) {
	if sv.s == nil {
		return 0, nil
	}
	sv.wg.Wait()
	for _, fl := range sv.order {
		if fl.err != nil {
			return 0, fl.err
		}
	}
	created, err := sv.batch.Commit()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, fl := range sv.order {
		if fl.created = created[fl.hash]; fl.created {
			n++
		}
	}
	now := sv.now().UTC().Truncate(time.Second)
	var entries []store.Entry
	for _, pe := range sv.entries {
		if pe.text.created || pe.raw != nil && pe.raw.created {
			pe.text.created = false // one line per new file, not per reference to it
			if pe.raw != nil {
				pe.raw.created = false
			}
			e := pe.meta
			e.Source, e.Time = sv.source, now
			entries = append(entries, e)
		}
	}
	if err := sv.s.Append(entries...); err != nil {
		return 0, err
	}
	// ctx-recall's index, beside the store, takes the new lines now rather than at the
	// next search; it is derived data, rebuilt when missing, so a failure only warns.
	// Under ctx-proxy (syncs deferred) it waits for that search: a segment is written and
	// synced, which a request's path must not wait for. A temporary store whose
	// placeholders name another path (ctx-replay's, ctx-count --savings') is searched by
	// no one: not indexed.
	if len(entries) > 0 && sv.indexing {
		counted := map[string]*index.Counted{}
		for _, fl := range sv.order {
			if fl.terms != nil {
				counted[fl.hash] = fl.terms
			}
		}
		if err := index.UpdateCounted(sv.s, counted); err != nil {
			sv.warnf("store %q: ctx-recall's index not updated (ctx-recall will rebuild it): %v", sv.dir, err)
		}
	}
	return n, nil
}

// Close waits for writes in flight, removes what was not committed, and closes the store.
func (sv *Saver) Close() {
	if sv.s != nil {
		sv.wg.Wait()
		sv.batch.Abort()
		sv.s.Close()
	}
}
