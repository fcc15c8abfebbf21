package tokens

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// longTexts makes n distinct texts of about size bytes each.
func longTexts(n, size int) []string {
	texts := make([]string, n)
	for i := range texts {
		line := fmt.Sprintf("line %d of text %d: the quick brown fox jumps over the lazy dog\n", i, i)
		texts[i] = strings.Repeat(line, size/len(line)+1)
	}
	return texts
}

func countWith(t *testing.T, d *DiskCache, texts []string) []int {
	t.Helper()
	c, err := NewCached("o200k", d)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(texts))
	for i, s := range texts {
		out[i] = c.Count(s)
	}
	return out
}

// TestDiskCacheSharesCounts: a run that counted enough leaves its counts in the file and
// the next run uses them (a record planted with a wrong count shows that it does), and the
// counts are the counter's own.
func TestDiskCacheSharesCounts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made", "yet")
	texts := longTexts(600, 8<<10) // 4.8 MB, past diskLoadAfter
	want := countWith(t, nil, texts)

	first := NewDiskCache(dir, "o200k")
	if got := countWith(t, first, texts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("counting with an empty cache changed the counts")
	}
	first.Flush()
	st, err := os.Stat(first.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(len(texts)*diskRecord) || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %d bytes, mode %v; want %d records, 0600", st.Size(), st.Mode().Perm(), len(texts))
	}

	// Plant a wrong count for the last text: a run that reads the file returns it.
	sum := sha256.Sum256([]byte(texts[len(texts)-1]))
	f, err := os.OpenFile(first.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(appendRecord(nil, first.tag(sum), 7))
	f.Close()
	second := NewDiskCache(dir, "o200k")
	got := countWith(t, second, texts)
	if got[len(got)-1] != 7 {
		t.Fatalf("the second run counted the last text itself (%d): it did not read the file", got[len(got)-1])
	}
	if fmt.Sprint(got[:len(got)-1]) != fmt.Sprint(want[:len(want)-1]) {
		t.Fatal("counts read from the file differ from the counter's")
	}
	// It counted only until it read the file, and writes back nothing the file holds.
	before, _ := os.Stat(first.path)
	second.Flush()
	after, _ := os.Stat(first.path)
	if after.Size() != before.Size() {
		t.Errorf("the second run appended %d bytes of counts the file already held", after.Size()-before.Size())
	}
}

// TestDiskCacheSmallRunsLeaveNoFile: a run that counts little neither reads nor writes.
func TestDiskCacheSmallRunsLeaveNoFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	d := NewDiskCache(dir, "cl100k")
	countWith(t, d, longTexts(50, 4<<10))
	d.Flush()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a small run made the cache directory: %v", err)
	}
	if NewDiskCache(dir, "estimate") != nil || NewDiskCache("", "o200k") != nil {
		t.Fatal("a cache for the estimate, or without a directory")
	}
	var none *DiskCache
	none.Flush() // no cache: nothing to do
}

// TestRecountLeavesTheDiskCache: the texts Recount counts (cuts tried, of any length) are
// not kept in the cache shared with other runs, and it does not look them up there: a
// count planted for one is not what it returns.
func TestRecountLeavesTheDiskCache(t *testing.T) {
	dir := t.TempDir()
	seed := NewDiskCache(dir, "o200k")
	texts := append(longTexts(300, 8<<10), longTexts(20, 2<<10)...) // past diskLoadAfter; some under chunkedMinBytes
	want := countWith(t, seed, texts)
	seed.Flush()
	// Plant a wrong count for one long and one short text.
	f, err := os.OpenFile(seed.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, len(texts) - 1} {
		f.Write(appendRecord(nil, seed.tag(sha256.Sum256([]byte(texts[i]))), 7))
	}
	f.Close()

	d := NewDiskCache(dir, "o200k")
	c, err := NewCached("o200k", d)
	if err != nil {
		t.Fatal(err)
	}
	r := c.(Recounter)
	for i, s := range texts {
		if got := r.Recount(s); got != want[i] {
			t.Fatalf("Recount of text %d (%d bytes) = %d, want %d: read from the shared cache", i, len(s), got, want[i])
		}
	}
	if len(d.fresh) != 0 {
		t.Errorf("Recount kept %d counts for the shared cache", len(d.fresh))
	}
}

// TestDiskCacheSkipsBadRecords: records that do not check out, and torn records, are
// ignored; the records after them are still read (the reader resynchronises).
func TestDiskCacheSkipsBadRecords(t *testing.T) {
	d := NewDiskCache(t.TempDir(), "o200k")
	var good, bad, after [16]byte
	good[0], bad[0], after[0] = 1, 2, 4
	data := appendRecord(nil, good, 42)
	broken := appendRecord(nil, bad, 43)
	broken[21] ^= 1 // the count, after its CRC was taken
	data = append(data, broken...)
	data = append(data, appendRecord(nil, [16]byte{3}, 44)[:10]...) // torn by a killed run
	data = append(data, appendRecord(nil, after, 45)...)            // the next run's append
	data = append(data, appendRecord(nil, [16]byte{5}, 46)[:27]...)
	if err := os.WriteFile(d.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d.load()
	if len(d.known) != 2 || d.known[good] != 42 || d.known[after] != 45 || !d.damaged {
		t.Fatalf("read %v (damaged %v), want the good records and the one after the torn one", d.known, d.damaged)
	}
}

// TestDiskCacheTornWriteHeals: after a torn write the next run that writes rewrites the
// file whole, so it holds only records and does not grow run after run.
func TestDiskCacheTornWriteHeals(t *testing.T) {
	dir := t.TempDir()
	texts := longTexts(300, 8<<10)
	first := NewDiskCache(dir, "o200k")
	countWith(t, first, texts)
	first.Flush()
	f, _ := os.OpenFile(first.path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(appendRecord(nil, [16]byte{9}, 9)[:13]) // a run killed mid-write
	f.Close()
	var sizes []int64
	for range 3 {
		more := append(longTexts(300, 8<<10), fmt.Sprintf("%0*d", 4<<10, len(sizes)))
		d := NewDiskCache(dir, "o200k")
		countWith(t, d, more)
		d.Flush()
		st, _ := os.Stat(d.path)
		sizes = append(sizes, st.Size())
	}
	if sizes[0]%diskRecord != 0 || sizes[0] != int64(301*diskRecord) || sizes[2] != int64(303*diskRecord) {
		t.Errorf("file sizes %v; want the torn bytes gone and one record added a run", sizes)
	}
	check := NewDiskCache(dir, "o200k")
	check.load()
	if check.damaged || len(check.known) != 303 {
		t.Errorf("after healing: damaged %v, %d records", check.damaged, len(check.known))
	}
}

// TestDiskCachePlanted: a cache file someone else wrote is not believed. Records with
// valid CRCs but keyed as the text's plain SHA-256 (all anyone without the secret can
// compute) match nothing; a link, a file open to others, a secret others can read make the
// cache ignored, with one warning, and nothing is written through a link.
func TestDiskCachePlanted(t *testing.T) {
	texts := longTexts(600, 8<<10)
	want := countWith(t, nil, texts)

	t.Run("forged records", func(t *testing.T) {
		dir := t.TempDir()
		var data []byte
		for _, s := range texts {
			sum := sha256.Sum256([]byte(s))
			data = appendRecord(data, [16]byte(sum[:16]), 1)
		}
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("counts-o200k-v%d.bin", diskVersion)), data, 0o600)
		if got := countWith(t, NewDiskCache(dir, "o200k"), texts); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Error("forged counts were believed")
		}
	})

	cases := map[string]func(t *testing.T, dir, path string){
		"linked file": func(t *testing.T, dir, path string) {
			os.WriteFile(filepath.Join(dir, "victim"), []byte("precious"), 0o600)
			os.Symlink(filepath.Join(dir, "victim"), path)
		},
		"group-writable file": func(t *testing.T, dir, path string) {
			os.WriteFile(path, nil, 0o600)
			os.Chmod(path, 0o620)
		},
		"readable secret": func(t *testing.T, dir, path string) {
			os.WriteFile(filepath.Join(dir, keyName), make([]byte, keySize), 0o600)
			os.Chmod(filepath.Join(dir, keyName), 0o644)
		},
		"short secret": func(t *testing.T, dir, path string) {
			os.WriteFile(filepath.Join(dir, keyName), []byte("x"), 0o600)
		},
		"world-writable folder": func(t *testing.T, dir, path string) {
			os.Chmod(dir, 0o777)
		},
		"someone else's file": func(t *testing.T, dir, path string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file away needs root")
			}
			os.WriteFile(path, nil, 0o600)
			os.Chown(path, 65534, 65534)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			os.Mkdir(dir, 0o700)
			path := filepath.Join(dir, fmt.Sprintf("counts-o200k-v%d.bin", diskVersion))
			plant(t, dir, path)
			before, _ := os.ReadFile(filepath.Join(dir, "victim"))
			var warnings []string
			d := NewDiskCache(dir, "o200k")
			d.Warn = func(msg string) { warnings = append(warnings, msg) }
			if got := countWith(t, d, texts); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Error("counts changed")
			}
			d.Flush()
			if len(warnings) != 1 || !strings.Contains(warnings[0], "count cache ignored") {
				t.Errorf("warnings %q, want one", warnings)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, "victim")); string(after) != string(before) {
				t.Errorf("written through the link: %q", after)
			}
		})
	}
}

// TestDiskCacheCompacts: past its bound the file is cut to its newer half.
func TestDiskCacheCompacts(t *testing.T) {
	d := NewDiskCache(t.TempDir(), "o200k")
	n := diskMaxBytes/diskRecord + 10
	data := make([]byte, 0, n*diskRecord)
	for i := range n {
		var key [16]byte
		key[0], key[1], key[2], key[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		data = appendRecord(data, key, uint32(i))
	}
	if err := os.WriteFile(d.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d.counted = diskLoadAfter
	newest := sha256.Sum256([]byte("newest"))
	d.fresh = []freshCount{{newest, 1}}
	d.Flush()
	st, err := os.Stat(d.path)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64((n+1)/2) * diskRecord; st.Size() != want {
		t.Fatalf("after compacting the file is %d bytes", st.Size())
	}
	again := NewDiskCache(filepath.Dir(d.path), "o200k")
	again.load()
	if again.known[again.tag(newest)] != 1 || len(again.known) != int(st.Size())/diskRecord {
		t.Fatal("compacting lost the newest records or kept broken ones")
	}
}

// TestDiskCacheStaleTemps: temp files of a killed compaction are removed once stale.
func TestDiskCacheStaleTemps(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".counts-0123456789abcdef.tmp")
	os.WriteFile(stale, make([]byte, 1000), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	d := NewDiskCache(dir, "o200k")
	countWith(t, d, longTexts(300, 8<<10))
	d.Flush()
	if _, err := os.Stat(stale); err == nil {
		t.Error("a stale temp file was left")
	}
}

// TestDiskCacheReadSoonWhenSmall: a run that counts less than diskLoadAfter still reads a
// file that is small next to what it counted (the later tiers of a pipeline over a
// document of a few MB), and writes back what it counted that the file lacked.
func TestDiskCacheReadSoonWhenSmall(t *testing.T) {
	dir := t.TempDir()
	texts := longTexts(300, 4<<10) // 1.2 MB: under diskLoadAfter
	want := countWith(t, nil, texts)
	first := NewDiskCache(dir, "o200k")
	first.counted = diskLoadAfter // as if it had counted more: it writes
	countWith(t, first, texts)
	first.Flush()

	// Plant a wrong count for the last text: a run that reads the file returns it.
	f, err := os.OpenFile(first.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(appendRecord(nil, first.tag(sha256.Sum256([]byte(texts[len(texts)-1]))), 7))
	f.Close()
	second := NewDiskCache(dir, "o200k")
	more := longTexts(320, 4<<10)[300:] // not in the file
	got := countWith(t, second, append(texts[:len(texts):len(texts)], more...))
	if got[len(texts)-1] != 7 {
		t.Fatalf("the second run, %d KB counted, did not read a file of %d records", second.counted>>10, len(texts)+1)
	}
	if fmt.Sprint(got[:len(texts)-1]) != fmt.Sprint(want[:len(texts)-1]) {
		t.Fatal("counts read from the file differ from the counter's")
	}
	if second.counted >= 1<<20 {
		t.Errorf("the second run counted %d KB itself before reading the file", second.counted>>10)
	}
	before, _ := os.Stat(first.path)
	second.Flush()
	after, _ := os.Stat(first.path)
	if after.Size()-before.Size() != int64(len(more)*diskRecord) {
		t.Errorf("the second run appended %d bytes, want the %d texts the file lacked", after.Size()-before.Size(), len(more))
	}
}
