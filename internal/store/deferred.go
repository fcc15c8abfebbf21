package store

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"sync"
)

// What deferred stores (DeferSync) of this process named and have not synced yet, by
// store directory: SyncWritten makes exactly these durable, where a walk of the store's
// shards for what changed lately (its first version, SyncSince) cost ctx-proxy 0.4-0.75
// ms a request on a store of a few thousand files, and grew with the store.
var unsynced = struct {
	sync.Mutex
	dirs map[string]*written
}{dirs: map[string]*written{}}

// written is what a store's deferred writes left to sync: the files named in each shard
// (by shard), and the index.
type written struct {
	files map[string][]string
	index bool
}

// wrote records, when s defers its syncing, that it named file in shard (file "" for
// the shard directory alone, which it made) or appended to the index (shard "").
func (s *Store) wrote(shard, file string) {
	if !s.deferred {
		return
	}
	unsynced.Lock()
	defer unsynced.Unlock()
	w := unsynced.dirs[s.dir]
	if w == nil {
		w = &written{files: map[string][]string{}}
		unsynced.dirs[s.dir] = w
	}
	switch {
	case shard == "":
		w.index = true
	case file == "":
		if w.files[shard] == nil {
			w.files[shard] = []string{}
		}
	default:
		w.files[shard] = append(w.files[shard], file)
	}
}

// SyncWritten makes durable what this process's deferred stores named since the last
// SyncWritten, in every store: each file, the shards that hold them (their names), the
// index, and the store's root (the shards' names). A request's writes are all named
// before it returns, so the sync that follows a request covers them (and a concurrent
// request's writes so far, which its own sync then finds done).
func SyncWritten() error {
	unsynced.Lock()
	dirs := unsynced.dirs
	if len(dirs) > 0 {
		unsynced.dirs = map[string]*written{}
	}
	hook := syncHookForTest
	unsynced.Unlock()
	if hook != nil {
		if err := hook(count(dirs)); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(dirs))
	for dir := range dirs {
		names = append(names, dir)
	}
	sort.Strings(names)
	var first error
	for _, dir := range names {
		if err := syncWritten(dir, dirs[dir]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncWritten syncs what w says was written to the store at dir.
func syncWritten(dir string, w *written) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since: nothing to sync
	}
	if err != nil {
		return err
	}
	defer root.Close()
	s := &Store{dir: dir, root: root, packs: &packSet{}}
	dirs, files := w.paths()
	return s.syncFiles(s.under(dirs...), s.under(files...))
}

// paths is what w says to sync, as paths under the store's root: the directories (the
// shards, then the root) and the files (shard/name, then the index), in order.
func (w *written) paths() (dirs, files []string) {
	for shard := range w.files {
		dirs = append(dirs, shard)
	}
	sort.Strings(dirs)
	for _, shard := range dirs {
		for _, f := range w.files[shard] {
			files = append(files, shard+"/"+f)
		}
	}
	if w.index {
		files = append(files, IndexName)
	}
	return append(dirs, "."), files
}

// syncHookForTest, set by SetSyncHookForTest (tests only), runs at the start of each
// SyncWritten with the number of paths it is about to sync; its error is SyncWritten's.
var syncHookForTest func(paths int) error

// SetSyncHookForTest makes h run at the start of each SyncWritten (see syncHookForTest),
// for the tests of the callers that must sync after each request, and returns what puts
// the previous hook back. Not for use outside tests.
func SetSyncHookForTest(h func(paths int) error) (restore func()) {
	unsynced.Lock()
	defer unsynced.Unlock()
	prev := syncHookForTest
	syncHookForTest = h
	return func() {
		unsynced.Lock()
		defer unsynced.Unlock()
		syncHookForTest = prev
	}
}

// PendingForTest is the number of paths (files, then each store's index) this process's
// deferred stores named and SyncWritten has not synced yet, for tests.
func PendingForTest() int {
	unsynced.Lock()
	defer unsynced.Unlock()
	return count(unsynced.dirs)
}

// count is the number of files and indexes dirs holds to sync (not the directories).
func count(dirs map[string]*written) int {
	n := 0
	for _, w := range dirs {
		_, files := w.paths()
		n += len(files)
	}
	return n
}
