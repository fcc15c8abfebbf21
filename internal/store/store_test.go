package store

import (
	"bytes"
	"encoding/json"
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

	"github.com/ctxkit/ctxkit/internal/safefile"
)

func mustCreate(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPutGet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	data := []byte("hello\nworld\n")
	h, created, err := s.Put(data)
	if err != nil || !created {
		t.Fatalf("Put: %v, created %v", err, created)
	}
	if h != Hash(data) || !ValidHash(h) {
		t.Fatalf("hash %q", h)
	}
	got, err := os.ReadFile(filepath.Join(dir, h[:2], h))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file holds %q, %v", got, err)
	}
	if s.Path(h) != filepath.Join(s.Dir(), h[:2], h) || !filepath.IsAbs(s.Dir()) {
		t.Errorf("Path %q, Dir %q", s.Path(h), s.Dir())
	}
	// The same bytes again are the same file, not a new one.
	if h2, created, err := s.Put(data); err != nil || created || h2 != h {
		t.Errorf("second Put: %q %v %v", h2, created, err)
	}
	if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
		t.Errorf("Get: %q %v", got, err)
	}
	// Empty content is content too.
	if h, _, err := s.Put(nil); err != nil {
		t.Error(err)
	} else if got, err := s.Get(h); err != nil || len(got) != 0 {
		t.Errorf("Get empty: %q %v", got, err)
	}
	// No temp files are left behind.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "store")
	s := mustCreate(t, dir)
	h, _, err := s.Put([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(Entry{Hash: h}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{
		dir:                              0o700 | fs.ModeDir,
		filepath.Join(dir, h[:2]):        0o700 | fs.ModeDir,
		filepath.Join(dir, h[:2], h):     0o600,
		filepath.Join(dir, IndexName):    0o600,
		filepath.Join(filepath.Dir(dir)): 0o700 | fs.ModeDir, // MkdirAll's parents too
	} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode(), want)
		}
	}
	if s.Perm() != 0o700 {
		t.Errorf("Perm %v", s.Perm())
	}
}

func TestGetRefuses(t *testing.T) {
	dir := t.TempDir()
	s := mustCreate(t, filepath.Join(dir, "store"))
	good, _, err := s.Put([]byte("inside"))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	os.WriteFile(outside, []byte("secret outside the store"), 0o600)
	outsideHash := Hash([]byte("secret outside the store"))

	// A symbolic link planted where a stored file would be, pointing outside.
	os.Mkdir(filepath.Join(s.Dir(), outsideHash[:2]), 0o700)
	if err := os.Symlink(outside, s.Path(outsideHash)); err != nil {
		t.Fatal(err)
	}
	// A symbolic link planted as a shard directory.
	linked := Hash([]byte("linked dir"))
	os.MkdirAll(filepath.Join(dir, "elsewhere", linked[:2]), 0o700)
	os.WriteFile(filepath.Join(dir, "elsewhere", linked[:2], linked), []byte("linked dir"), 0o600)
	if linked[:2] != outsideHash[:2] && linked[:2] != good[:2] {
		if err := os.Symlink(filepath.Join(dir, "elsewhere", linked[:2]), filepath.Join(s.Dir(), linked[:2])); err != nil {
			t.Fatal(err)
		}
	}
	// A link inside the store, to a stored file, is refused as well: only plain files.
	inner := Hash([]byte("inner link"))
	os.MkdirAll(filepath.Join(s.Dir(), inner[:2]), 0o700)
	if err := os.Symlink(s.Path(good), s.Path(inner)); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		hash string
		want error
	}{
		{"../../etc/passwd", ErrBadHash},
		{"/etc/passwd", ErrBadHash},
		{outside, ErrBadHash},
		{good[:63], ErrBadHash},
		{good + "0", ErrBadHash},
		{strings.ToUpper(good), ErrBadHash},
		{good[:2] + "/" + good[:61], ErrBadHash},
		{"", ErrBadHash},
		{outsideHash, ErrNotRegular},
		{linked, ErrNotRegular},
		{inner, ErrNotRegular},
		{Hash([]byte("never stored")), ErrNotFound},
	} {
		data, err := s.Get(c.hash)
		if !errors.Is(err, c.want) {
			t.Errorf("Get(%q) = %q, %v; want %v", c.hash, data, err, c.want)
		}
		if data != nil {
			t.Errorf("Get(%q) returned data", c.hash)
		}
	}
}

func TestTampered(t *testing.T) {
	s := mustCreate(t, t.TempDir())
	h, _, _ := s.Put([]byte("original"))
	os.WriteFile(s.Path(h), []byte("0riginal"), 0o600)
	if _, err := s.Get(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tampered file: %v", err)
	}
	// Putting the content again repairs the file rather than trusting it.
	if _, created, err := s.Put([]byte("original")); err != nil || !created {
		t.Fatalf("repair: created %v, %v", created, err)
	}
	if got, err := s.Get(h); err != nil || string(got) != "original" {
		t.Errorf("after repair: %q %v", got, err)
	}
	// Also a symbolic link planted at the name is replaced, not written through.
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep me"), 0o600)
	os.Remove(s.Path(h))
	os.Symlink(target, s.Path(h))
	if _, _, err := s.Put([]byte("original")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "keep me" {
		t.Errorf("Put wrote through a symbolic link: %q", got)
	}
	if st, _ := os.Lstat(s.Path(h)); !st.Mode().IsRegular() {
		t.Errorf("the link is still there: %v", st.Mode())
	}
}

// A file of several of intact's pieces is compared to the end: a byte changed in its last
// piece is caught, through Put and through a Batch.
func TestTamperedLarge(t *testing.T) {
	s := mustCreate(t, t.TempDir())
	data := bytes.Repeat([]byte("0123456789abcdef"), 13_000) // 208,000 bytes: four pieces
	h, _, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Put(data); err != nil || created {
		t.Fatalf("stored again: created %v, %v", created, err)
	}
	for _, batch := range []bool{false, true} {
		bad := bytes.Clone(data)
		bad[len(bad)-1] = 'x'
		os.WriteFile(s.Path(h), bad, 0o600)
		if batch {
			b := s.Batch()
			if _, err := b.Add(data); err != nil {
				t.Fatal(err)
			}
			if created, err := b.Commit(); err != nil || !created[h] {
				t.Fatalf("batch repair: created %v, %v", created, err)
			}
		} else if _, created, err := s.Put(data); err != nil || !created {
			t.Fatalf("repair: created %v, %v", created, err)
		}
		if got, err := s.Get(h); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after repair (batch %v): %d bytes, %v", batch, len(got), err)
		}
	}
}

func TestOpenMissing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoStore) {
		t.Errorf("Open of a missing store: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file); err == nil {
		t.Error("Open of a file: no error")
	}
	// A store below a regular file cannot be created (ENOTDIR): the read-only case that
	// root cannot bypass.
	if _, err := Create(filepath.Join(file, "store")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Create below a file: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop writes")
	}
	dir := t.TempDir()
	s := mustCreate(t, dir)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if _, _, err := s.Put([]byte("x")); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Put into a read-only store: %v", err)
	}
	if err := s.Append(Entry{Hash: "x"}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Append to a read-only store: %v", err)
	}
}

// TestConcurrent has 8 writers, each with its own Store as separate processes would,
// putting overlapping contents and appending index lines at once.
func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	created := make([][]string, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Create(dir)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := 0; i < each; i++ {
				// Half the contents are shared by every writer.
				data := fmt.Sprintf("content %d %s", i, strings.Repeat("x", 5000*(i%3)))
				if i%2 == 1 {
					data += fmt.Sprintf(" of writer %d", w)
				}
				h, c, err := s.Put([]byte(data))
				if err != nil {
					t.Error(err)
					return
				}
				if c {
					created[w] = append(created[w], h)
				}
				long := strings.Repeat("ü", 2000) // a long line, several KB
				if err := s.Append(Entry{Hash: h, Tool: long, Source: fmt.Sprint(w), Time: time.Unix(0, 0)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, hs := range created {
		for _, h := range hs {
			seen[h]++
		}
	}
	distinct := each/2 + writers*each/2
	if len(seen) != distinct {
		t.Errorf("%d distinct files created, want %d", len(seen), distinct)
	}
	for h, n := range seen {
		if n != 1 {
			t.Errorf("%s created %d times", h, n)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d index lines, want %d", len(lines), writers*each)
	}
	for i, l := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || !ValidHash(e.Hash) {
			t.Fatalf("index line %d is torn: %v", i+1, err)
		}
	}
	s := mustCreate(t, dir)
	entries, bad, err := s.Index()
	if err != nil || bad != 0 || len(entries) != writers*each {
		t.Errorf("Index: %d entries, %d bad, %v", len(entries), bad, err)
	}
	for h := range seen {
		if _, err := s.Get(h); err != nil {
			t.Error(err)
		}
	}
}

func TestIndex(t *testing.T) {
	s := mustCreate(t, t.TempDir())
	if es, bad, err := s.Index(); err != nil || bad != 0 || len(es) != 0 {
		t.Fatalf("empty store: %v %d %v", es, bad, err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	e := Entry{Hash: Hash([]byte("a")), Tool: "Bash <&>", ToolCallID: "toolu_1", Source: "/x/s.jsonl", Bytes: 1, Lines: 1, Tokens: 1, Tokenizer: "estimate", Time: at}
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(s.Dir(), IndexName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"hash":"torn` + "\n[1]\n\n")
	f.Close()
	if err := s.Append(e); err != nil {
		t.Fatal(err)
	}
	es, bad, err := s.Index()
	if err != nil || bad != 2 || len(es) != 2 {
		t.Fatalf("Index: %d entries, %d bad, %v", len(es), bad, err)
	}
	want := `{"hash":"` + e.Hash + `","tool":"Bash <&>","tool_call_id":"toolu_1","source":"/x/s.jsonl","bytes":1,"lines":1,"tokens":1,"tokenizer":"estimate","time":"2026-03-04T04:06:07Z"}`
	if string(es[0].Line) != want {
		t.Errorf("index line\n got %s\nwant %s", es[0].Line, want)
	}
	if es[1].Tool != e.Tool || !es[1].Time.Equal(at) {
		t.Errorf("entry %+v", es[1])
	}
}

// TestIndexLineLengthIsNotTheTime: an index line's length does not depend on the time it
// was written at: ctx-recall's segments hold offsets into the index, so two stores of
// the same texts differed beyond their times when one time's fraction ended in a zero
// (RFC 3339 drops it).
func TestIndexLineLengthIsNotTheTime(t *testing.T) {
	at := time.Date(2026, 11, 29, 18, 47, 26, 286060170, time.UTC)
	var lengths []int
	for _, tm := range []time.Time{at, at.Add(9), at.Add(-at.Sub(at.Truncate(time.Second))), at.In(time.FixedZone("x", 3600))} {
		line, err := Entry{Hash: strings.Repeat("a", 64), Tool: "Bash", Time: tm}.marshal()
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, len(line))
	}
	for _, n := range lengths[1:] {
		if n != lengths[0] {
			t.Fatalf("index lines of one entry at four times: %v bytes", lengths)
		}
	}
}

// TestPlantedLinks: a store folder, shard or index that is a symbolic link is refused and
// nothing is written where it points.
func TestPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	link := filepath.Join(dir, "store")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if _, err := Create(link); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Create of a linked store: %v, want a refusal", err)
	}
	if _, err := Open(link); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Open of a linked store: %v, want a refusal", err)
	}
	if _, err := Create(filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}

	s := mustCreate(t, filepath.Join(dir, "real"))
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o600)
	os.Symlink(victim, filepath.Join(s.Dir(), IndexName))
	if err := s.Append(Entry{Hash: Hash(nil)}); err == nil {
		t.Errorf("Append through a linked index succeeded")
	}
	data := []byte("shard")
	h := Hash(data)
	os.Symlink(elsewhere, filepath.Join(s.Dir(), h[:2]))
	if _, _, err := s.Put(data); err == nil {
		t.Errorf("Put into a linked shard succeeded")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("written through the index link: %q", b)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the shard link: %v", ents)
	}
}

// TestStaleTemps: temp files of killed runs in a shard go once stale; a live run's stay.
func TestStaleTemps(t *testing.T) {
	s := mustCreate(t, filepath.Join(t.TempDir(), "store"))
	data := []byte("x")
	h := Hash(data)
	shard := filepath.Join(s.Dir(), h[:2])
	os.Mkdir(shard, 0o700)
	old := time.Now().Add(-time.Hour)
	for _, n := range []string{".tmp-0123456789abcdef", ".tmp-fedcba9876543210", ".tmp-notours", "keep"} {
		os.WriteFile(filepath.Join(shard, n), []byte("partial"), 0o600)
		if n != ".tmp-fedcba9876543210" {
			os.Chtimes(filepath.Join(shard, n), old, old)
		}
	}
	if _, _, err := s.Put(data); err != nil {
		t.Fatal(err)
	}
	var got []string
	ents, _ := os.ReadDir(shard)
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := ".tmp-fedcba9876543210 .tmp-notours " + h + " keep"; strings.Join(got, " ") != want {
		t.Errorf("shard holds %q, want %q", got, want)
	}
}

// TestSomeoneElsesIndex: an index another user owns is not appended to.
func TestSomeoneElsesIndex(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	s := mustCreate(t, filepath.Join(t.TempDir(), "store"))
	index := filepath.Join(s.Dir(), IndexName)
	os.WriteFile(index, nil, 0o666)
	os.Chown(index, 65534, 65534)
	if err := s.Append(Entry{Hash: Hash(nil)}); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Append to another user's index: %v", err)
	}
	os.Chown(s.Dir(), 65534, 65534)
	if _, err := Open(s.Dir()); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("Open of another user's store: %v", err)
	}
}

// TestBatch: files added to a batch have no name before Commit (only temp files), and all
// of them after; the bytes stored before, or added twice, are not created again; an
// aborted batch leaves nothing.
func TestBatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := mustCreate(t, dir)
	before := []byte("stored before\n")
	hBefore, _, err := s.Put(before)
	if err != nil {
		t.Fatal(err)
	}
	temps := func() (n int) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				n++
			}
			return nil
		})
		return n
	}

	b := s.Batch()
	var datas [][]byte
	for i := range packMin { // loose files: no more than packMin (TestPack: more)
		datas = append(datas, []byte(fmt.Sprintf("result %d\n", i)))
	}
	datas = append(datas, datas[3], before)
	var wg sync.WaitGroup
	hashes := make([]string, len(datas))
	for i, d := range datas {
		wg.Go(func() {
			h, err := b.Add(d)
			if err != nil {
				t.Error(err)
			}
			hashes[i] = h
		})
	}
	wg.Wait()
	for i, d := range datas[:packMin] {
		if _, err := os.Lstat(s.Path(hashes[i])); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("result %d has its name before Commit: %v", i, err)
		}
		if hashes[i] != Hash(d) {
			t.Fatalf("result %d: hash %s", i, hashes[i])
		}
	}

	created, err := b.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != packMin || created[hBefore] {
		t.Errorf("created %d files (the one stored before: %v), want %d", len(created), created[hBefore], packMin)
	}
	for i := range packMin {
		if st, err := os.Lstat(s.Path(hashes[i])); err != nil || !st.Mode().IsRegular() {
			t.Errorf("result %d is not a file of its own: %v", i, err)
		}
	}
	for i, d := range datas {
		if got, err := s.Get(hashes[i]); err != nil || !bytes.Equal(got, d) {
			t.Errorf("Get %d: %q %v", i, got, err)
		}
	}
	if n := temps(); n != 0 {
		t.Errorf("%d temp files left after Commit", n)
	}

	b = s.Batch()
	h, err := b.Add([]byte("never committed"))
	if err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if _, err := s.Get(h); !errors.Is(err, ErrNotFound) {
		t.Errorf("an aborted file: %v", err)
	}
	if n := temps(); n != 0 {
		t.Errorf("%d temp files left after Abort", n)
	}
}

// TestDeferredSync: a store whose syncing is deferred names its files at once (readable by
// anyone) and SyncWritten syncs exactly what the deferred stores named: the new files,
// their shards, the index and the root; not what was there before, nor a file another
// writer had stored first, nor what a store that does not defer wrote. Then nothing is left.
func TestDeferredSync(t *testing.T) {
	SyncWritten() // what other tests left
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put([]byte("written long ago")); err != nil {
		t.Fatal(err)
	}
	deferred, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	deferred.DeferSyncIf(func(k string) string { return map[string]string{SyncEnv: "later"}[k] })
	b := deferred.Batch()
	h, err := b.Add([]byte("a result of this request"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add([]byte("written long ago")); err != nil { // stored already
		t.Fatal(err)
	}
	if _, err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	h2, _, err := deferred.Put([]byte("another result"))
	if err != nil {
		t.Fatal(err)
	}
	if err := deferred.Append(Entry{Hash: h, Tool: "Bash"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put([]byte("synced at once")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(h); err != nil || string(got) != "a result of this request" {
		t.Fatalf("deferred file not readable: %q %v", got, err)
	}
	dirs, files := pendingSync(deferred.dir)
	wantFiles := []string{h[:2] + "/" + h, h2[:2] + "/" + h2}
	sort.Strings(wantFiles)
	wantFiles = append(wantFiles, IndexName)
	wantDirs := []string{h[:2], h2[:2]}
	sort.Strings(wantDirs)
	wantDirs = slices.Compact(append(wantDirs, "."))
	if !slices.Equal(files, wantFiles) || !slices.Equal(dirs, wantDirs) {
		t.Errorf("to sync: dirs %v files %v, want %v and %v", dirs, files, wantDirs, wantFiles)
	}
	if err := SyncWritten(); err != nil {
		t.Errorf("SyncWritten: %v", err)
	}
	if dirs, files := pendingSync(deferred.dir); dirs != nil || files != nil {
		t.Errorf("left to sync after SyncWritten: %v %v", dirs, files)
	}
	// A store removed before its sync is nothing to sync.
	gone := filepath.Join(t.TempDir(), "gone")
	g, err := Create(gone)
	if err != nil {
		t.Fatal(err)
	}
	g.DeferSync()
	if _, _, err := g.Put([]byte("soon gone")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(gone)
	if err := SyncWritten(); err != nil {
		t.Errorf("SyncWritten of a removed store: %v", err)
	}
}

// TestProjectName: a working directory's store is named readably (its path) and uniquely
// (a hash of it), in one path element.
func TestProjectName(t *testing.T) {
	a := ProjectName("/home/me/src/app")
	if !strings.HasPrefix(a, "home-me-src-app-") || len(a) != len("home-me-src-app-")+12 {
		t.Errorf("ProjectName = %q", a)
	}
	seen := map[string]string{}
	for _, dir := range []string{"/home/me/src/app", "/home/me/src-app", "/home/me/src/app ", "/home/me/src/äpp", "/", "/" + strings.Repeat("long/", 40) + "project"} {
		n := ProjectName(dir)
		if other, ok := seen[n]; ok {
			t.Errorf("%q and %q share the store %q", dir, other, n)
		}
		seen[n] = dir
		if strings.ContainsAny(n, `/\ `) || strings.HasPrefix(n, ".") || len(n) > 120 {
			t.Errorf("%q: name %q", dir, n)
		}
	}
	if n := ProjectName("/" + strings.Repeat("long/", 40) + "project"); !strings.Contains(n, "long-project-") {
		t.Errorf("a long path keeps its end: %q", n)
	}
	if got := DefaultDir("/state/ctxkit", "/home/me/src/app"); got != filepath.Join("/state/ctxkit", "stores", a) {
		t.Errorf("DefaultDir = %q", got)
	}
	if DefaultDir("", "/x") != "" {
		t.Errorf("a default store without a state directory")
	}
}

// TestCreateIgnoredInWorkTree: a store made inside a git work tree gets a .gitignore of
// "*" (git add -A leaves it out); one made elsewhere, or one that already existed, not.
func TestCreateIgnoredInWorkTree(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want bool
	}{
		{filepath.Join(repo, ".ctx-store"), true},
		{filepath.Join(repo, "sub", "deeper", "store"), true},
		{filepath.Join(t.TempDir(), "store"), false},
	} {
		s, err := Create(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		data, err := os.ReadFile(filepath.Join(c.dir, GitIgnore))
		if got := err == nil && string(data) == "*\n"; got != c.want {
			t.Errorf("%s: .gitignore %q (%v), want one: %v", c.dir, data, err, c.want)
		}
	}
	existing := filepath.Join(repo, "existing")
	os.Mkdir(existing, 0o700)
	s, err := Create(existing)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(existing, GitIgnore)); err == nil {
		t.Errorf("a .gitignore was added to a store that existed")
	}
	// A linked work tree's .git is a file.
	linked := t.TempDir()
	os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: /elsewhere\n"), 0o600)
	if !InWorkTree(filepath.Join(linked, "a", "b")) {
		t.Errorf("a linked work tree is not seen")
	}
	if _, err := Create(""); !errors.Is(err, ErrNoDir) {
		t.Errorf("Create(\"\"): %v", err)
	}
}

// TestHas: a stored file is known by its name and size, without being read; a missing one,
// another size, a link where the file should be or a linked shard is not stored.
func TestHas(t *testing.T) {
	dir := t.TempDir()
	s := mustCreate(t, filepath.Join(dir, "store"))
	data := []byte("stored by ctx-persist\n")
	h, _, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(h, len(data)) {
		t.Errorf("Has of a stored file: false")
	}
	os.Chmod(s.Path(h), 0) // not read: a reference needs the name and the size only
	if !s.Has(h, len(data)) {
		t.Errorf("Has of a stored file it cannot read: false")
	}
	if s.Has(h, len(data)+1) {
		t.Errorf("Has of another size: true")
	}
	if other := Hash([]byte("other")); s.Has(other, 5) {
		t.Errorf("Has of a missing file: true")
	}
	if s.Has("../"+h[3:], len(data)) || s.Has(strings.ToUpper(h), len(data)) {
		t.Errorf("Has of a name that is not a hash: true")
	}

	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	linked := []byte("linked file")
	lh := Hash(linked)
	os.WriteFile(filepath.Join(elsewhere, lh), linked, 0o600)
	os.MkdirAll(filepath.Join(s.Dir(), lh[:2]), 0o700)
	if err := os.Symlink(filepath.Join(elsewhere, lh), s.Path(lh)); err != nil {
		t.Skip("no symlinks:", err)
	}
	if s.Has(lh, len(linked)) {
		t.Errorf("Has of a link: true")
	}
	shard := []byte("linked shard")
	sh := Hash(shard)
	os.WriteFile(filepath.Join(elsewhere, sh), shard, 0o600)
	os.Symlink(elsewhere, filepath.Join(s.Dir(), sh[:2]))
	if s.Has(sh, len(shard)) {
		t.Errorf("Has in a linked shard: true")
	}
}

// HashString names a text as Hash names its bytes.
func TestHashString(t *testing.T) {
	for _, s := range []string{"", "a", "ctx-snip stores this\n", strings.Repeat("é\x00", 5000)} {
		if got, want := HashString(s), Hash([]byte(s)); got != want {
			t.Errorf("HashString(%q) = %s, want %s", s[:min(len(s), 20)], got, want)
		}
	}
}

// pendingSync is what SyncWritten would sync in the store at dir now (for tests).
func pendingSync(dir string) (dirs, files []string) {
	unsynced.Lock()
	defer unsynced.Unlock()
	if w := unsynced.dirs[dir]; w != nil {
		return w.paths()
	}
	return nil, nil
}
