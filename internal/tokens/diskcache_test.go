package tokens

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	dir := t.TempDir()
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
	f.Write(appendRecord(nil, [16]byte(sum[:16]), 7))
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

// TestDiskCacheSkipsBadRecords: records that do not check out, and a torn last record,
// are ignored; the rest are read.
func TestDiskCacheSkipsBadRecords(t *testing.T) {
	d := NewDiskCache(t.TempDir(), "o200k")
	var good, bad [16]byte
	good[0], bad[0] = 1, 2
	data := appendRecord(nil, good, 42)
	broken := appendRecord(nil, bad, 43)
	broken[17] ^= 1 // the count, after its CRC was taken
	data = append(data, broken...)
	data = append(data, appendRecord(nil, [16]byte{3}, 44)[:10]...)
	if err := os.WriteFile(d.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d.load()
	if len(d.known) != 1 || d.known[good] != 42 {
		t.Fatalf("read %v, want only the good record", d.known)
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
	d.fresh = appendRecord(nil, [16]byte{0xff, 0xff, 0xff, 0xff}, 1)
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
	if again.known[[16]byte{0xff, 0xff, 0xff, 0xff}] != 1 || len(again.known) != int(st.Size())/diskRecord {
		t.Fatal("compacting lost the newest records or kept broken ones")
	}
}
