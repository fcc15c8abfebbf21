package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// PacksDir is the folder of the packs inside the store.
const PacksDir = "packs"

// packMin is how many new texts a Batch writes as loose files at most: one that stores
// more writes them all as one pack. A loose file costs about eight system calls and two
// fsyncs (its own and its shard's, the shards of a few texts being all different); a pack
// costs about twice that whatever it holds. Past a few texts the pack is cheaper, and its
// cost no longer grows with the count (ctx-snip on 10 MB clears about a thousand); under
// it, loose files keep `cat DIR/ab/HASH` working for the few results a proxied request
// usually clears (issue 35's request stored 7). A LooseBatch (ctx-persist's) never packs.
const packMin = 8

// packMagic starts every pack index.
const packMagic = "ctxkit-pack 1\n"

// packLoc is where a packed text is: its pack (named by the SHA-256 of its index, without
// the extension), offset and size.
type packLoc struct {
	pack      string
	off, size int64
	// irregular: the pack is not a regular file (a link, a folder...). Get reports
	// ErrNotRegular; Has says the text is not stored, so that it is written again rather
	// than referred to where it cannot be read.
	irregular bool
}

// packSet is what a process knows of a store's packs: every index it read, and the place
// of each text they list. One is shared by every Store this process opens on the same
// folder (sharedPacks): ctx-proxy opens its store for each request, and reading every
// index again each time cost about 1.5 ms a request per 1,000 packed texts. Indexes are
// read once; a Store newly opened looks at the folder again before its first Has or Get
// (new indexes are read, and the texts of an index or pack that went away, or changed, are
// forgotten: as a fresh read would find them), Get again when a text is in none of them (a
// pack another process wrote since), Has does not (a text it misses is written again:
// nothing is lost).
type packSet struct {
	mu     sync.Mutex
	loaded bool
	read   map[string]packInfo // indexes read (or written by this process), by name
	at     map[[32]byte]packLoc
}

// packInfo is what an index read says of its pack: the texts it lists, where the last ends,
// and whether the pack was a regular file.
type packInfo struct {
	keys      [][32]byte
	end       int64
	irregular bool
}

// sharedPacks is the packSet of every store folder this process opened, by its path, with
// the folder's identity: a folder removed and made again gets a new set.
var sharedPacks = struct {
	sync.Mutex
	m map[string]sharedPackSet
}{m: map[string]sharedPackSet{}}

// indexReads counts the pack indexes this process has read (for tests: a store opened
// again does not read again what it knows).
var indexReads atomic.Int64

type sharedPackSet struct {
	folder os.FileInfo
	p      *packSet
}

// packSetOf returns the packSet of the store folder abs (folder its Lstat), marked to look
// at the folder again before it is next used.
func packSetOf(abs string, folder os.FileInfo) *packSet {
	sharedPacks.Lock()
	sh, ok := sharedPacks.m[abs]
	if !ok || !os.SameFile(sh.folder, folder) {
		sh = sharedPackSet{folder: folder, p: &packSet{}}
		sharedPacks.m[abs] = sh
	}
	sharedPacks.Unlock()
	sh.p.mu.Lock()
	sh.p.loaded = false
	sh.p.mu.Unlock()
	return sh.p
}

func key(h string) (k [32]byte) {
	hex.Decode(k[:], []byte(h))
	return k
}

// packed returns where h is packed, reading the indexes first if they were not yet, and
// again (the new ones) when rescan is set and h is in none of those read.
func (s *Store) packed(h string, rescan bool) (packLoc, bool) {
	k := key(h)
	p := s.packs
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded {
		s.loadPacks()
	} else if loc, ok := p.at[k]; ok || !rescan {
		return loc, ok
	} else {
		s.loadPacks()
	}
	loc, ok := p.at[k]
	return loc, ok
}

// loadPacks reads the indexes in the packs folder not read yet. An index is used only when
// its content has the SHA-256 of its name and its pack is there, a regular file holding
// every text it lists (or something else, which Get refuses): anything else (damaged, the leftover of a crash between the pack's
// naming and the index's) is skipped. Called with s.packs.mu held.
func (s *Store) loadPacks() {
	p := s.packs
	p.loaded = true
	if p.at == nil {
		p.at, p.read = map[[32]byte]packLoc{}, map[string]packInfo{}
	}
	// No packs folder, or one that cannot be listed: no packed text (the store may have
	// been removed and made again at the same path since this set was made).
	forget := func() { p.at, p.read = map[[32]byte]packLoc{}, map[string]packInfo{} }
	dir, err := s.openDir(PacksDir, false, false)
	if err != nil || dir == nil {
		forget()
		return
	}
	f, err := dir.Open(".")
	if err != nil {
		forget()
		return
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		forget()
		return
	}
	sort.Strings(names)
	// What was read before and is not as it was (its index gone, its pack gone, shorter, or
	// of another kind) is forgotten, and its index read again below if it is there.
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	for stem, info := range p.read {
		if present[stem+".idx"] {
			pst, err := dir.Lstat(stem + ".pack")
			if err == nil && pst.Mode().IsRegular() != info.irregular && (info.irregular || pst.Size() >= info.end) {
				continue
			}
		}
		for _, k := range info.keys {
			if loc, ok := p.at[k]; ok && loc.pack == stem {
				delete(p.at, k)
			}
		}
		delete(p.read, stem)
	}
	var all []packed
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, ".idx")
		if _, seen := p.read[stem]; !ok || !ValidHash(stem) || seen {
			continue
		}
		st, err := dir.Lstat(n)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		indexReads.Add(1)
		data, err := read(dir, n, st)
		if err != nil || Hash(data) != stem {
			continue
		}
		locs, end, ok := parseIndex(stem, data)
		if !ok {
			continue
		}
		// (a pack that is not a regular file is listed, irregular: Get refuses it,
		// ErrNotRegular, and Has does not count it)
		pst, err := dir.Lstat(stem + ".pack")
		if err != nil || pst.Mode().IsRegular() && pst.Size() < end {
			continue
		}
		info := packInfo{keys: make([][32]byte, len(locs)), end: end, irregular: !pst.Mode().IsRegular()}
		for i := range locs {
			locs[i].loc.irregular = info.irregular
			info.keys[i] = locs[i].key
		}
		p.read[stem] = info
		all = append(all, locs...)
	}
	if len(p.at) == 0 {
		p.at = make(map[[32]byte]packLoc, len(all)) // sized once, not grown
	}
	for _, e := range all {
		p.at[e.key] = e.loc
	}
}

// parseIndex reads a pack index: packMagic, then a line "HASH OFFSET SIZE" per text, in
// the pack's order. end is where the last text ends.
func parseIndex(pack string, data []byte) (locs []packed, end int64, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(packMagic))
	if !ok {
		return nil, 0, false
	}
	locs = make([]packed, 0, len(rest)/90)
	for len(rest) > 0 {
		line, after, found := bytes.Cut(rest, []byte{'\n'})
		if !found || len(line) < 68 || line[64] != ' ' {
			return nil, 0, false
		}
		rest = after
		var e packed
		if _, err := hex.Decode(e.key[:], line[:64]); err != nil {
			return nil, 0, false
		}
		off, n := decimal(line[65:])
		if n == 0 || 65+n >= len(line) || line[65+n] != ' ' {
			return nil, 0, false
		}
		tail := line[66+n:]
		size, m := decimal(tail)
		if m == 0 || m != len(tail) {
			return nil, 0, false
		}
		e.loc.off, e.loc.size = off, size
		e.loc.pack = pack
		locs = append(locs, e)
		end = max(end, e.loc.off+e.loc.size)
	}
	return locs, end, true
}

// packed is a text's place, by the SHA-256 it is stored under.
type packed struct {
	key [32]byte
	loc packLoc
}

// decimal reads the digits b starts with (at most 18: no overflow), and how many.
func decimal(b []byte) (v int64, n int) {
	for n < len(b) && n < 18 && '0' <= b[n] && b[n] <= '9' {
		v = v*10 + int64(b[n]-'0')
		n++
	}
	return v, n
}

// readPacked reads the text at loc, from a regular file reached without symbolic links,
// and checks that it has the hash h.
func (s *Store) readPacked(h string, loc packLoc) ([]byte, error) {
	target := name(h)
	if st, err := s.root.Lstat(PacksDir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: %w", PacksDir, ErrNotRegular)
	}
	where := fmt.Sprintf("%s (in %s/%s.pack)", target, PacksDir, loc.pack)
	f, size, err := s.openPack(loc.pack)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if f == nil {
		return nil, fmt.Errorf("%s: %w", target, ErrNotFound)
	}
	defer f.Close()
	data, err := readText(f, size, loc, h, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return data, nil
}

// openPack opens the pack named pack in the packs folder, a regular file reached without
// symbolic links, and gives its size; no file and no error when there is no packs folder.
func (s *Store) openPack(pack string) (*os.File, int64, error) {
	dir, err := s.openDir(PacksDir, false, false)
	if err != nil || dir == nil {
		return nil, 0, err
	}
	f, err := openRegular(dir, pack+".pack")
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, reason(err)
	}
	return f, st.Size(), nil
}

// readText reads the text at loc from its pack f, of size bytes, into buf (made anew when
// it is too small), and checks that it has the hash h.
func readText(f *os.File, size int64, loc packLoc, h string, buf []byte) ([]byte, error) {
	if loc.off+loc.size > size {
		return nil, ErrCorrupt
	}
	if int64(cap(buf)) < loc.size {
		buf = make([]byte, loc.size)
	}
	data := buf[:loc.size]
	if _, err := f.ReadAt(data, loc.off); err != nil {
		return nil, reason(err)
	}
	if sha256.Sum256(data) != key(h) {
		return nil, ErrCorrupt
	}
	return data, nil
}

// openRegular opens the regular file n in r, refusing anything else (a symbolic link
// above all) and a file swapped in between the look and the open.
func openRegular(r *os.Root, n string) (*os.File, error) {
	st, err := r.Lstat(n)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNotFound
	case err != nil:
		return nil, reason(err)
	case !st.Mode().IsRegular():
		return nil, ErrNotRegular
	}
	f, err := r.Open(n)
	if err != nil {
		return nil, reason(err)
	}
	if got, err := f.Stat(); err != nil || !os.SameFile(st, got) {
		f.Close()
		return nil, ErrNotRegular
	}
	return f, nil
}

// packIntact reports whether h is packed, intact, holding exactly data (a Batch's Add of a
// text stored already: it is referenced, not written again).
func (s *Store) packIntact(h string, data []byte) bool {
	loc, ok := s.packed(h, false)
	if !ok || loc.size != int64(len(data)) {
		return false
	}
	got, err := s.readPacked(h, loc)
	return err == nil && bytes.Equal(got, data)
}

// packWriter is the pack a Batch writes once it has more than packMin new texts: one
// temp file the texts are appended to as they come, each followed by a newline (so that
// grep's lines end where the texts do).
type packWriter struct {
	mu      sync.Mutex
	dir     *os.Root // the packs folder
	f       *os.File
	tmp     string
	off     int64
	entries []packEntry
	err     error // of a write: the pack cannot be committed
}

type packEntry struct {
	hash      string
	off, size int64
}

// startPack opens the batch's pack temp file (the packs folder made, and swept of what
// killed runs left, the first time). Called with b.mu held.
func (b *Batch) startPack() error {
	if b.pack != nil {
		return nil
	}
	dir, err := b.s.mkdirShard(PacksDir, false)
	if err != nil {
		return err
	}
	f, tmp, err := b.s.createTemp(dir, PacksDir)
	if err != nil {
		return err
	}
	b.pack = &packWriter{dir: dir, f: f, tmp: tmp}
	return nil
}

// add appends a text, read from r (size bytes), to the pack.
func (w *packWriter) add(h string, r io.Reader, size int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := io.Copy(w.f, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: wrote %d bytes of %d", h, n, size)
	}
	if err == nil {
		_, err = w.f.Write([]byte{'\n'})
	}
	if err != nil {
		w.err = err // the offsets after it would be wrong: the pack is not committed
		return err
	}
	w.entries = append(w.entries, packEntry{hash: h, off: w.off, size: size})
	w.off += size + 1
	return nil
}

// index is the pack's index, and the name of both: the SHA-256 of the index, which the
// texts' hashes and sizes, in order, make a content hash of the pack too.
func (w *packWriter) index() (data []byte, name string) {
	var b bytes.Buffer
	b.WriteString(packMagic)
	for _, e := range w.entries {
		fmt.Fprintf(&b, "%s %d %d\n", e.hash, e.off, e.size)
	}
	return b.Bytes(), Hash(b.Bytes())
}

// commitPack makes the batch's pack durable and names it: the texts added before the batch
// had more than packMin (kept in memory, or in temp files of their own) are moved into it, its index written beside it,
// both synced, the pack named, then its index (a reader finds a text through the index
// only: named last, it never lists a text whose pack is not there), then the folder synced.
// Called with b.mu held.
func (b *Batch) commitPack() (created map[string]bool, err error) {
	s, w := b.s, b.pack
	for _, f := range b.order {
		if f.data != nil {
			err := w.add(f.hash, bytes.NewReader(f.data), int64(f.size))
			f.data = nil
			if err != nil {
				return nil, fmt.Errorf("store %q: pack: %w", s.dir, reason(err))
			}
		}
		if f.tmp == "" {
			continue
		}
		t, err := f.sh.Open(f.tmp)
		if err != nil {
			return nil, fmt.Errorf("store %q: pack: %w", s.dir, reason(err))
		}
		err = w.add(f.hash, t, int64(f.size))
		t.Close()
		if err != nil {
			return nil, fmt.Errorf("store %q: pack: %w", s.dir, reason(err))
		}
		f.sh.Remove(f.tmp)
		f.tmp = ""
	}
	if w.err != nil {
		return nil, fmt.Errorf("store %q: pack: %w", s.dir, reason(w.err))
	}
	if err := w.f.Close(); err != nil {
		return nil, fmt.Errorf("store %q: pack: %w", s.dir, reason(err))
	}
	w.f = nil
	idx, packName := w.index()
	idxTmp, err := s.writeTemp(w.dir, PacksDir, idx, false)
	if err != nil {
		return nil, err
	}
	defer w.dir.Remove(idxTmp) // gone once renamed
	if !s.deferred {
		if err := s.syncFiles(nil, []rooted{{w.dir, w.tmp}, {w.dir, idxTmp}}); err != nil {
			return nil, fmt.Errorf("store %q: sync: %w", s.dir, reason(err))
		}
	}
	if err := w.dir.Rename(w.tmp, packName+".pack"); err != nil {
		return nil, fmt.Errorf("store %q: write %s/%s.pack: %w", s.dir, PacksDir, packName, reason(err))
	}
	w.tmp = ""
	s.wrote(PacksDir, packName+".pack")
	if err := w.dir.Rename(idxTmp, packName+".idx"); err != nil {
		return nil, fmt.Errorf("store %q: write %s/%s.idx: %w", s.dir, PacksDir, packName, reason(err))
	}
	s.wrote(PacksDir, packName+".idx")
	if !s.deferred {
		// (the root too: it holds the name of the packs folder when the batch made it)
		if err := s.syncFiles(s.under(PacksDir, "."), nil); err != nil {
			return nil, fmt.Errorf("store %q: sync: %w", s.dir, reason(err))
		}
	}
	p := s.packs
	p.mu.Lock()
	if p.at == nil {
		p.at, p.read = map[[32]byte]packLoc{}, map[string]packInfo{}
	}
	info := packInfo{keys: make([][32]byte, 0, len(w.entries))}
	created = map[string]bool{}
	for _, e := range w.entries {
		k := key(e.hash)
		p.at[k] = packLoc{pack: packName, off: e.off, size: e.size}
		info.keys = append(info.keys, k)
		info.end = max(info.end, e.off+e.size)
		created[e.hash] = true
	}
	p.read[packName] = info
	p.mu.Unlock()
	return created, nil
}

// abort removes the pack's temp file.
func (w *packWriter) abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.tmp != "" {
		w.dir.Remove(w.tmp)
		w.tmp = ""
	}
}

// sweep removes from the store's folder shard the temp files killed runs left there
// (untouched for safefile.StaleAfter), and from the packs folder the packs a crash left
// without their index (named, the index not yet).
func (s *Store) sweep(shard string) {
	dir := filepath.Join(s.dir, shard)
	now := time.Now()
	safefile.RemoveStale(dir, isTemp, now)
	if shard != PacksDir {
		return
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	indexed := map[string]bool{}
	for _, e := range names {
		if stem, ok := strings.CutSuffix(e.Name(), ".idx"); ok {
			indexed[stem] = true
		}
	}
	safefile.RemoveStale(dir, func(n string) bool {
		stem, ok := strings.CutSuffix(n, ".pack")
		return ok && ValidHash(stem) && !indexed[stem]
	}, now)
}

// Hashes lists the hashes stored in the store (loose files and packed texts) that start
// with prefix (lowercase hex digits), sorted: ctx-recall resolves a hash's first digits
// with it. A name is listed, not read: Get checks the bytes.
func (s *Store) Hashes(prefix string) ([]string, error) {
	seen := map[string]bool{}
	var shards []string
	if len(prefix) >= 2 {
		shards = []string{prefix[:2]}
	} else {
		f, err := s.root.Open(".")
		if err != nil {
			return nil, fmt.Errorf("store %q: %w", s.dir, reason(err))
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("store %q: %w", s.dir, reason(err))
		}
		for _, n := range names {
			if len(n) == 2 && strings.HasPrefix(n, prefix) && strings.Trim(n, "0123456789abcdef") == "" {
				shards = append(shards, n)
			}
		}
	}
	for _, shard := range shards {
		if st, err := s.root.Lstat(shard); err != nil || !st.IsDir() {
			continue
		}
		f, err := s.root.Open(shard)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			if strings.HasPrefix(n, prefix) && ValidHash(n) && n[:2] == shard {
				seen[n] = true
			}
		}
	}
	p := s.packs
	p.mu.Lock()
	s.loadPacks()
	for k := range p.at {
		if h := hex.EncodeToString(k[:]); strings.HasPrefix(h, prefix) {
			seen[h] = true
		}
	}
	p.mu.Unlock()
	hashes := make([]string, 0, len(seen))
	for h := range seen {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	return hashes, nil
}

// Reader reads many stored texts one after the other, as Get does, for a caller that
// reads each once and lets it go (ctx-recall's index, catching up on what it lacks): a
// packed text is read from its pack kept open between reads, into a buffer reused from
// one read to the next, and checked against its hash as Get checks it. Get opened the
// pack, looked at the shard and the packs folder, and made a new buffer each time: on
// ctx-snip storing 90 MB that was a tenth of its work. Not safe for concurrent use.
type Reader struct {
	s    *Store
	pack string   // the pack open in f
	f    *os.File // nil: none open
	size int64
	buf  []byte
}

// Reader returns a Reader of the store; Close it after.
func (s *Store) Reader() *Reader { return &Reader{s: s} }

// Get returns the bytes stored under h, as Store.Get does; they are valid until the next
// Get or Close. A text in no pack read yet, or whose pack read does not give it back, is
// read by Store.Get (which reports why it cannot be). Unlike Store.Get it looks in the
// packs first: a text both packed and loose is read from its pack (SHA-256 checked, no
// link followed) even when the loose file would be refused.
func (r *Reader) Get(h string) ([]byte, error) {
	if !ValidHash(h) {
		return nil, fmt.Errorf("%q: %w", h, ErrBadHash)
	}
	loc, ok := r.s.packed(h, false)
	if !ok || loc.irregular {
		return r.s.Get(h)
	}
	if data, ok := r.readPacked(h, loc); ok {
		return data, nil
	}
	return r.s.Get(h)
}

// readPacked reads h from its pack; ok is false when it cannot (the pack went away, is
// not a regular file, or does not hold the text intact).
func (r *Reader) readPacked(h string, loc packLoc) (data []byte, ok bool) {
	if r.f == nil || r.pack != loc.pack {
		r.closePack()
		f, size, err := r.s.openPack(loc.pack)
		if err != nil || f == nil {
			return nil, false
		}
		r.f, r.pack, r.size = f, loc.pack, size
	}
	data, err := readText(r.f, r.size, loc, h, r.buf)
	if err != nil {
		return nil, false
	}
	r.buf = data
	return data, true
}

func (r *Reader) closePack() {
	if r.f != nil {
		r.f.Close()
		r.f, r.pack = nil, ""
	}
}

// Close closes the pack the Reader holds open.
func (r *Reader) Close() error {
	r.closePack()
	r.buf = nil
	return nil
}
