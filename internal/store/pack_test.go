package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// files lists the store's files (relative paths), the recall index and .gitignore aside.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	return got
}

// packFiles is the names in the packs folder.
func packFiles(t *testing.T, dir string) (packs, idxs, other []string) {
	ents, _ := os.ReadDir(filepath.Join(dir, PacksDir))
	for _, e := range ents {
		switch n := e.Name(); {
		case strings.HasSuffix(n, ".pack"):
			packs = append(packs, n)
		case strings.HasSuffix(n, ".idx"):
			idxs = append(idxs, n)
		default:
			other = append(other, n)
		}
	}
	return packs, idxs, other
}

func texts(n int, tag string) [][]byte {
	var d [][]byte
	for i := range n {
		d = append(d, []byte(fmt.Sprintf("%s result %d\nline two of %d\n", tag, i, i)))
	}
	return d
}

// addAll adds datas to a new batch of s, from several goroutines, and commits it.
func addAll(t *testing.T, s *Store, datas [][]byte) map[string]bool {
	t.Helper()
	b := s.Batch()
	var wg sync.WaitGroup
	for _, d := range datas {
		wg.Go(func() {
			if h, err := b.Add(d); err != nil || h != Hash(d) {
				t.Errorf("Add: %s %v", h, err)
			}
		})
	}
	wg.Wait()
	created, err := b.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// TestPack: a batch of more than packMin new texts writes one pack and its index, not a
// file a text; each text reads back (Get, Has) in this process and in another, grep finds
// it in the pack, and a text stored before (loose) or twice in the batch is not written.
func TestPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	before := []byte("stored before by ctx-persist\n")
	hBefore, _, err := s.Put(before)
	if err != nil {
		t.Fatal(err)
	}
	datas := texts(50, "packed")
	created := addAll(t, s, append(slices.Clone(datas), datas[7], before))
	if len(created) != 50 || created[hBefore] {
		t.Errorf("created %d (the one stored before: %v), want 50", len(created), created[hBefore])
	}
	packs, idxs, other := packFiles(t, dir)
	if len(packs) != 1 || len(idxs) != 1 || len(other) != 0 {
		t.Fatalf("packs folder: %v %v %v, want one pack and its index", packs, idxs, other)
	}
	want := []string{hBefore[:2] + "/" + hBefore, PacksDir + "/" + idxs[0], PacksDir + "/" + packs[0]}
	sort.Strings(want)
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("store files %v, want %v", got, want)
	}
	pack, _ := os.ReadFile(filepath.Join(dir, PacksDir, packs[0]))
	other2, err := Open(dir) // another process: reads the index from disk
	if err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	for _, st := range []*Store{s, other2} {
		for _, d := range append(datas, before) {
			h := Hash(d)
			if got, err := st.Get(h); err != nil || !bytes.Equal(got, d) {
				t.Errorf("Get %s: %q %v", h[:8], got, err)
			}
			if !st.Has(h, len(d)) || st.Has(h, len(d)+1) {
				t.Errorf("Has %s: wrong", h[:8])
			}
		}
	}
	for _, d := range datas {
		if !bytes.Contains(pack, d) {
			t.Errorf("pack does not hold %q as it is", d)
		}
	}
	if got, err := other2.Hashes(""); err != nil || len(got) != 51 {
		t.Errorf("Hashes: %d %v, want 51", len(got), err)
	}
	h7 := Hash(datas[7])
	if got, err := other2.Hashes(h7[:6]); err != nil || !slices.Contains(got, h7) {
		t.Errorf("Hashes(%s): %v %v", h7[:6], got, err)
	}
}

// TestPackDedup: a text stored already, packed or loose, by this process or another, is
// referenced and not written again by a Batch; a Put of a packed text writes its file (its
// caller promises one), once.
func TestPackDedup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	datas := texts(20, "first run")
	addAll(t, s, datas)
	before := files(t, dir)
	for _, st := range []*Store{s, mustOpen(t, dir)} {
		if created := addAll(t, st, datas); len(created) != 0 {
			t.Errorf("a batch of stored texts created %d", len(created))
		}
	}
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("stored texts written again: %v, was %v", got, before)
	}
	h3 := Hash(datas[3])
	for i, st := range []*Store{s, mustOpen(t, dir)} {
		if _, created, err := st.Put(datas[3]); err != nil || created != (i == 0) {
			t.Errorf("Put %d of a packed text: created %v %v, want %v", i, created, err, i == 0)
		}
		if !st.HasFile(h3, len(datas[3])) {
			t.Errorf("Put %d of a packed text: no file of its own", i)
		}
	}
	if got, want := files(t, dir), append(slices.Clone(before), h3[:2]+"/"+h3); len(got) != len(want) {
		t.Errorf("after Put: %v, want %v", got, want)
	}
	// Half stored, half new: only the new ones are written, in a pack of their own.
	more := append(slices.Clone(datas[:10]), texts(10, "second run")...)
	if created := addAll(t, mustOpen(t, dir), more); len(created) != 10 {
		t.Errorf("created %d, want the 10 new", len(created))
	}
	packs, _, _ := packFiles(t, dir)
	if len(packs) != 2 {
		t.Fatalf("%d packs, want 2", len(packs))
	}
	for _, p := range packs {
		data, _ := os.ReadFile(filepath.Join(dir, PacksDir, p))
		if n := bytes.Count(data, []byte("first run result 3\n")); n > 1 || n == 1 && bytes.Contains(data, []byte("second run")) {
			t.Errorf("a stored text packed again in %s", p)
		}
	}
}

func mustOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPackRefuses: a damaged pack byte is ErrCorrupt; a pack or packs folder replaced by a
// symbolic link is refused; an index that does not match its name, or whose pack is
// missing, lists nothing.
func TestPackRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	datas := texts(12, "refuse")
	addAll(t, s, datas)
	packs, idxs, _ := packFiles(t, dir)
	packPath := filepath.Join(dir, PacksDir, packs[0])
	good, _ := os.ReadFile(packPath)

	damaged := bytes.Replace(good, []byte("refuse result 5\n"), []byte("refuse resulT 5\n"), 1)
	os.WriteFile(packPath, damaged, 0o600)
	for _, st := range []*Store{s, mustOpen(t, dir)} {
		if got, err := st.Get(Hash(datas[5])); !errors.Is(err, ErrCorrupt) || got != nil {
			t.Errorf("Get of a damaged packed text: %q %v, want ErrCorrupt", got, err)
		}
		if got, err := st.Get(Hash(datas[6])); err != nil || !bytes.Equal(got, datas[6]) {
			t.Errorf("Get of an intact text beside it: %q %v", got, err)
		}
	}
	// A batch storing the damaged text again writes it anew, and Get finds the new copy.
	if created := addAll(t, s, [][]byte{datas[5]}); !created[Hash(datas[5])] {
		t.Errorf("a damaged text was not written again: %v", created)
	}
	if got, err := s.Get(Hash(datas[5])); err != nil || !bytes.Equal(got, datas[5]) {
		t.Errorf("Get after the rewrite: %q %v", got, err)
	}

	elsewhere := filepath.Join(t.TempDir(), "elsewhere.pack")
	os.WriteFile(elsewhere, good, 0o600)
	os.Remove(packPath)
	if err := os.Symlink(elsewhere, packPath); err != nil {
		t.Skip("no symlinks:", err)
	}
	if got, err := mustOpen(t, dir).Get(Hash(datas[1])); !errors.Is(err, ErrNotRegular) || got != nil {
		t.Errorf("Get through a linked pack: %q %v, want ErrNotRegular", got, err)
	}
	// Has does not count it: a text Get cannot read is written again, not referred to.
	if mustOpen(t, dir).Has(Hash(datas[1]), len(datas[1])) {
		t.Errorf("Has through a linked pack: true")
	}
	os.Remove(packPath)
	os.WriteFile(packPath, good, 0o600)

	// The packs folder a link to a copy of it.
	copyDir := filepath.Join(t.TempDir(), "packs")
	os.Rename(filepath.Join(dir, PacksDir), copyDir)
	os.Symlink(copyDir, filepath.Join(dir, PacksDir))
	st := mustOpen(t, dir)
	if got, err := st.Get(Hash(datas[1])); !errors.Is(err, ErrNotRegular) || got != nil {
		t.Errorf("Get through a linked packs folder: %q %v, want ErrNotRegular", got, err)
	}
	if st.Has(Hash(datas[1]), len(datas[1])) {
		t.Errorf("Has through a linked packs folder: true")
	}
	os.Remove(filepath.Join(dir, PacksDir))
	os.Rename(copyDir, filepath.Join(dir, PacksDir))

	// An index altered (its hash no longer its name) lists nothing, nor one without its pack.
	idxPath := filepath.Join(dir, PacksDir, idxs[0])
	idx, _ := os.ReadFile(idxPath)
	os.WriteFile(idxPath, append(idx, '\n'), 0o600)
	if st := mustOpen(t, dir); st.Has(Hash(datas[1]), len(datas[1])) {
		t.Errorf("Has through an altered index: true")
	}
	os.WriteFile(idxPath, idx, 0o600)
	os.Rename(packPath, packPath+".gone")
	if st := mustOpen(t, dir); st.Has(Hash(datas[1]), len(datas[1])) {
		t.Errorf("Has through an index without its pack: true")
	}
}

// TestPackConcurrent: several processes (stores opened apart) writing overlapping batches
// into one store at once: every text reads back, in any of them, and no temp file is left.
func TestPackConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustCreate(t, dir)
	all := texts(60, "shared")
	// writer w: 30 texts others write too, and 12 of its own
	writes := func(w int) [][]byte {
		var own [][]byte
		for i := range 30 {
			own = append(own, all[(w*10+i)%len(all)])
		}
		return append(own, texts(12, fmt.Sprintf("writer %d", w))...)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			s, err := Open(dir)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			own := writes(w)
			b := s.Batch()
			for _, d := range own {
				if _, err := b.Add(d); err != nil {
					t.Error(err)
				}
			}
			if _, err := b.Commit(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s := mustOpen(t, dir)
	for w := range 6 {
		for _, d := range writes(w) {
			if got, err := s.Get(Hash(d)); err != nil || !bytes.Equal(got, d) {
				t.Errorf("Get %q: %q %v", d, got, err)
			}
		}
	}
	for _, f := range files(t, dir) {
		if strings.Contains(f, tempPrefix) {
			t.Errorf("temp file left: %s", f)
		}
	}
}

// TestPackLeftovers: what a killed run left in the packs folder (temp files, a pack named
// without its index) goes once stale, when a later batch writes a pack; a live run's
// temp stays. An aborted packing batch leaves nothing.
func TestPackLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	b := s.Batch()
	for _, d := range texts(20, "aborted") {
		if _, err := b.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	b.Abort()
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("an aborted batch left %v", got)
	}

	packs := filepath.Join(dir, PacksDir)
	old := time.Now().Add(-time.Hour)
	orphan := Hash([]byte("orphan")) + ".pack"
	fresh := ".tmp-fedcba9876543210"
	for _, n := range []string{".tmp-0123456789abcdef", fresh, orphan, "keep"} {
		os.WriteFile(filepath.Join(packs, n), []byte("partial"), 0o600)
		if n != fresh {
			os.Chtimes(filepath.Join(packs, n), old, old)
		}
	}
	addAll(t, mustOpen(t, dir), texts(20, "later"))
	p, idx, other := packFiles(t, dir)
	if len(p) != 1 || len(idx) != 1 || strings.Join(other, " ") != fresh+" keep" {
		t.Errorf("packs folder: %v %v %v, want the new pack and index, %s and keep", p, idx, other, fresh)
	}
}

// TestOldLooseStore: a store of loose files only, as earlier versions wrote, reads as
// before (Get, Has, Hashes), and a packing batch references its texts.
func TestOldLooseStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	os.MkdirAll(dir, 0o700)
	datas := texts(12, "old")
	for _, d := range datas {
		h := Hash(d)
		os.MkdirAll(filepath.Join(dir, h[:2]), 0o700)
		if err := os.WriteFile(filepath.Join(dir, h[:2], h), d, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpen(t, dir)
	for _, d := range datas {
		if got, err := s.Get(Hash(d)); err != nil || !bytes.Equal(got, d) || !s.Has(Hash(d), len(d)) {
			t.Errorf("Get %q: %q %v", d, got, err)
		}
	}
	if got, _ := s.Hashes(""); len(got) != len(datas) {
		t.Errorf("Hashes: %d, want %d", len(got), len(datas))
	}
	if created := addAll(t, s, append(slices.Clone(datas), texts(10, "new")...)); len(created) != 10 {
		t.Errorf("created %d, want the 10 new", len(created))
	}
	if got, err := mustOpen(t, dir).Hashes(""); err != nil || len(got) != 22 {
		t.Errorf("Hashes: %d %v, want 22", len(got), err)
	}
}

// TestPackDeferred: a deferred store's pack is named at once and left to SyncWritten: the
// pack, its index and the folders.
func TestPackDeferred(t *testing.T) {
	SyncWritten()
	dir := filepath.Join(t.TempDir(), "store")
	mustCreate(t, dir)
	s := mustOpen(t, dir)
	s.DeferSync()
	addAll(t, s, texts(10, "deferred"))
	p, idx, _ := packFiles(t, dir)
	if len(p) != 1 || len(idx) != 1 {
		t.Fatalf("packs %v %v", p, idx)
	}
	dirs, fs := pendingSync(s.dir)
	wantFiles := []string{PacksDir + "/" + p[0], PacksDir + "/" + idx[0]}
	if !slices.Equal(dirs, []string{PacksDir, "."}) || !slices.Equal(fs, wantFiles) {
		t.Errorf("to sync: %v %v, want %v and %v", dirs, fs, []string{PacksDir, "."}, wantFiles)
	}
	if err := SyncWritten(); err != nil {
		t.Error(err)
	}
}

// TestPackHeld: a text past what a batch keeps in memory (maxHeld), written to a temp file
// of its own at once, goes into the pack all the same when the batch comes to pack; and to
// a file of its own when it does not.
func TestPackHeld(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	big := bytes.Repeat([]byte("big line\n"), maxHeld/9+1)
	b := s.Batch()
	for _, d := range append([][]byte{big}, texts(10, "small")...) {
		if _, err := b.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	// (the big text's shard folder stays, empty: removing it could pull it from under a
	// concurrent writer)
	if got := files(t, dir); len(got) != 2 || !strings.HasPrefix(got[0], PacksDir+"/") || !strings.HasPrefix(got[1], PacksDir+"/") {
		t.Errorf("store holds %v, want only a pack and its index", got)
	}
	if got, err := mustOpen(t, dir).Get(Hash(big)); err != nil || !bytes.Equal(got, big) {
		t.Errorf("Get of the big text: %d bytes, %v", len(got), err)
	}
	big2 := append(big, 'x')
	if created := addAll(t, s, [][]byte{big2, []byte("one more")}); len(created) != 2 {
		t.Errorf("created %v", created)
	}
	if st, err := os.Lstat(s.Path(Hash(big2))); err != nil || !st.Mode().IsRegular() {
		t.Errorf("a small batch's big text is not a file of its own: %v", err)
	}
}

// TestParseIndex: an index's lines are read at their places, and anything else refused.
func TestParseIndex(t *testing.T) {
	h := Hash([]byte("x"))
	good := packMagic + h + " 0 1\n" + Hash([]byte("y")) + " 2 12345\n"
	locs, end, ok := parseIndex("p", []byte(good))
	if !ok || len(locs) != 2 || end != 12347 || locs[1].loc.off != 2 || locs[1].loc.size != 12345 || locs[0].loc.pack != "p" {
		t.Errorf("parseIndex(good) = %v %d %v", locs, end, ok)
	}
	for _, bad := range []string{
		"",
		h + " 0 1\n",                                // no magic
		packMagic + h + " 0 1",                      // no newline
		packMagic + h[:63] + "  0 1\n",              // short hash
		packMagic + "zz" + h[2:] + " 0 1\n",         // not hex
		packMagic + h + " -1 1\n",                   // negative
		packMagic + h + " 0 1 2\n",                  // a field more
		packMagic + h + " 0\n",                      // a field less
		packMagic + h + " 0 99999999999999999999\n", // overflow
	} {
		if _, _, ok := parseIndex("p", []byte(bad)); ok {
			t.Errorf("parseIndex(%q) accepted", bad)
		}
	}
}

// TestLooseBatch: a LooseBatch of more than packMin new texts writes a file a text, at the
// path a placeholder names, and no pack; a text stored before only in a pack gets its file
// too (HasFile tells the two apart), a text with a file of its own is not written again.
func TestLooseBatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	packed := texts(12, "packed first")
	addAll(t, s, packed)
	packs, _, _ := packFiles(t, dir)
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	for _, st := range []*Store{s, mustOpen(t, dir)} {
		if h := Hash(packed[0]); !st.Has(h, len(packed[0])) || st.HasFile(h, len(packed[0])) {
			t.Errorf("a packed text: Has %v, HasFile %v, want true, false", st.Has(h, len(packed[0])), st.HasFile(h, len(packed[0])))
		}
	}
	datas := append(texts(20, "loose"), packed[:3]...)
	b := mustOpen(t, dir).LooseBatch()
	for _, d := range datas {
		if _, err := b.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	created, err := b.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != len(datas) {
		t.Errorf("created %d, want %d", len(created), len(datas))
	}
	for _, d := range datas {
		h := Hash(d)
		got, err := os.ReadFile(Path(dir, h))
		if err != nil || !bytes.Equal(got, d) {
			t.Errorf("%s: no file of its own at its path: %v", h[:8], err)
		}
		if !s.HasFile(h, len(d)) {
			t.Errorf("HasFile %s: false", h[:8])
		}
	}
	if packs, _, _ := packFiles(t, dir); len(packs) != 1 {
		t.Errorf("%d packs after a LooseBatch, want the 1 from before", len(packs))
	}
	// Again: every text has its file, nothing is written.
	b = s.LooseBatch()
	for _, d := range datas {
		b.Add(d)
	}
	if created, err := b.Commit(); err != nil || len(created) != 0 {
		t.Errorf("a LooseBatch of stored files created %d %v", len(created), err)
	}
}

// A store opened again in the same process (ctx-proxy opens it for each request) does not
// read the indexes it knows again, and still sees what changed since, as a fresh read would:
// an index written by another writer, a pack removed, a pack made a link.
func TestPackSetShared(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	datas := texts(12, "shared")
	addAll(t, s, datas)
	reads := indexReads.Load()
	for range 3 {
		if st := mustOpen(t, dir); !st.Has(Hash(datas[2]), len(datas[2])) {
			t.Fatal("Has in a store opened again: false")
		}
	}
	if n := indexReads.Load() - reads; n != 0 {
		t.Errorf("opening the store again read %d indexes, want 0", n)
	}

	// Another writer's pack: copied in under its own name, as another process names it.
	other := filepath.Join(t.TempDir(), "other")
	more := texts(10, "another writer")
	addAll(t, mustCreate(t, other), more)
	_, idxs, _ := packFiles(t, other)
	for _, ext := range []string{".pack", ".idx"} {
		stem := strings.TrimSuffix(idxs[0], ".idx")
		b, err := os.ReadFile(filepath.Join(other, PacksDir, stem+ext))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, PacksDir, stem+ext), b, 0o600)
	}
	if st := mustOpen(t, dir); !st.Has(Hash(more[0]), len(more[0])) || !st.Has(Hash(datas[0]), len(datas[0])) {
		t.Error("a pack another writer named since is not seen by a store opened again")
	}

	// The first pack removed: its texts are no longer stored for a store opened again.
	packs, idxs, _ := packFiles(t, dir)
	var first string
	for _, n := range idxs {
		if data, _ := os.ReadFile(filepath.Join(dir, PacksDir, n)); bytes.Contains(data, []byte(Hash(datas[0]))) {
			first = strings.TrimSuffix(n, ".idx")
		}
	}
	if first == "" || len(packs) != 2 {
		t.Fatalf("packs %v, indexes %v", packs, idxs)
	}
	packPath := filepath.Join(dir, PacksDir, first+".pack")
	good, _ := os.ReadFile(packPath)
	os.Remove(packPath)
	if st := mustOpen(t, dir); st.Has(Hash(datas[0]), len(datas[0])) || !st.Has(Hash(more[0]), len(more[0])) {
		t.Error("after its pack was removed, a store opened again still has its texts (or lost the other pack's)")
	}
	// Back, then a link in its place: not counted (Get refuses it).
	os.WriteFile(packPath, good, 0o600)
	if st := mustOpen(t, dir); !st.Has(Hash(datas[0]), len(datas[0])) {
		t.Error("the pack put back is not seen")
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.pack")
	os.WriteFile(elsewhere, good, 0o600)
	os.Remove(packPath)
	if err := os.Symlink(elsewhere, packPath); err != nil {
		t.Skip("no symlinks:", err)
	}
	if st := mustOpen(t, dir); st.Has(Hash(datas[0]), len(datas[0])) {
		t.Error("a pack made a link is counted by a store opened again")
	}
}

// TestReader: a Reader gives what Get gives, text after text, from two packs and loose
// files alike, and refuses what Get refuses: a damaged packed text (ErrCorrupt), one in a
// pack that is a link (ErrNotRegular), a bad or unknown hash.
func TestReader(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	loose := []byte("stored loose\n")
	if _, _, err := s.Put(loose); err != nil {
		t.Fatal(err)
	}
	one, two := texts(12, "first"), texts(20, "second")
	addAll(t, s, one)
	addAll(t, s, two)
	all := append(append(slices.Clone(one), two...), loose)
	for _, st := range []*Store{s, mustOpen(t, dir)} {
		r := st.Reader()
		// interleaved, so that the reader goes from one pack to the other and back
		for i := range all {
			d := all[(i*7)%len(all)]
			got, err := r.Get(Hash(d))
			if err != nil || !bytes.Equal(got, d) {
				t.Errorf("Reader.Get %q: %q %v", d, got, err)
			}
		}
		if _, err := r.Get("nothex"); !errors.Is(err, ErrBadHash) {
			t.Errorf("Reader.Get of a bad hash: %v, want ErrBadHash", err)
		}
		if _, err := r.Get(Hash([]byte("never stored"))); !errors.Is(err, ErrNotFound) {
			t.Errorf("Reader.Get of a text not stored: %v, want ErrNotFound", err)
		}
		r.Close()
	}

	packs, _, _ := packFiles(t, dir)
	for _, p := range packs {
		path := filepath.Join(dir, PacksDir, p)
		good, _ := os.ReadFile(path)
		os.WriteFile(path, bytes.Replace(good, []byte("result 5\n"), []byte("resulT 5\n"), 1), 0o600)
	}
	r := mustOpen(t, dir).Reader()
	defer r.Close()
	for _, d := range [][]byte{one[5], two[5]} {
		if got, err := r.Get(Hash(d)); !errors.Is(err, ErrCorrupt) || got != nil {
			t.Errorf("Reader.Get of a damaged packed text: %q %v, want ErrCorrupt", got, err)
		}
	}
	if got, err := r.Get(Hash(two[6])); err != nil || !bytes.Equal(got, two[6]) {
		t.Errorf("Reader.Get of an intact text beside it: %q %v", got, err)
	}

	path := filepath.Join(dir, PacksDir, packs[0])
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.pack")
	good, _ := os.ReadFile(path)
	os.WriteFile(elsewhere, good, 0o600)
	os.Remove(path)
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Skip("no symlinks:", err)
	}
	r2 := mustOpen(t, dir).Reader()
	defer r2.Close()
	for _, d := range append(one, two...) {
		if got, err := r2.Get(Hash(d)); err == nil && !bytes.Equal(got, d) || err != nil && !errors.Is(err, ErrNotRegular) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("Reader.Get with a linked pack: %q %v", got, err)
		}
	}
	linked := 0
	for _, d := range append(one, two...) {
		if _, err := r2.Get(Hash(d)); errors.Is(err, ErrNotRegular) {
			linked++
		}
	}
	if linked == 0 {
		t.Errorf("Reader.Get read through a linked pack")
	}

}

// A pack swapped for a link (to a copy inside the store) after the store listed its
// packs as regular files: the Reader's own open refuses it, not only the listing.
func TestReaderRefusesPackLinkedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	one := texts(12, "first")
	addAll(t, mustCreate(t, dir), one)
	packs, _, _ := packFiles(t, dir)
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	s := mustOpen(t, dir)
	for _, d := range one {
		if !s.Has(Hash(d), len(d)) {
			t.Fatalf("%q is not listed", d)
		}
	}
	path := filepath.Join(dir, PacksDir, packs[0])
	good, _ := os.ReadFile(path)
	os.WriteFile(filepath.Join(dir, PacksDir, "copy.bin"), good, 0o600)
	os.Remove(path)
	if err := os.Symlink("copy.bin", path); err != nil {
		t.Skip("no symlinks:", err)
	}
	r := s.Reader()
	defer r.Close()
	for _, d := range one {
		if got, err := r.Get(Hash(d)); err == nil {
			t.Errorf("Reader.Get %q read through a pack linked after the listing: %q", d, got)
		}
	}
}
