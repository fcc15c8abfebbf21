package tokens

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
)

// DiskCache keeps the exact counts of long texts in a file every run shares, so the tiers
// of a pipeline, one process each and each measuring the whole conversation, count a text
// once instead of once a tier. It only saves time: a count read back is the count the
// same counter made, and when the file cannot be read or written the counter simply
// counts.
//
// Small runs never touch the file: it is read only once a run has counted diskLoadAfter
// bytes of long texts itself, and written only by such a run. The file is a list of
// fixed-size records (the first 16 bytes of the text's SHA-256, the count, a CRC of
// both), appended to with one write per run, so runs may share it without locking; a
// record that does not check out is skipped. Past diskMaxBytes it is cut to its newer
// half.
type DiskCache struct {
	path string

	mu      sync.Mutex
	loaded  bool
	known   map[[16]byte]uint32
	fresh   []byte // records of this run, to append
	counted int64  // bytes of long texts this run counted itself
}

const (
	// diskMinBytes: shorter texts are cheaper to count than to look up and store.
	diskMinBytes = 1 << 10
	// diskLoadAfter is how much counting a run does before the file is worth reading.
	diskLoadAfter = 2 << 20
	// diskMaxBytes bounds the file (about 1.4 million counts).
	diskMaxBytes = 32 << 20
	diskRecord   = 24
	// diskVersion names the counting the records were made with: bump it whenever a
	// counter's result for some text changes, and old files are ignored.
	diskVersion = 1
)

// NewDiskCache returns the cache of the counter called name (as New takes it) in dir, or
// nil when dir is "" or the counter is not an exact one (estimates cost nothing).
func NewDiskCache(dir, name string) *DiskCache {
	c, err := New(name)
	if err != nil || dir == "" {
		return nil
	}
	if _, exact := c.(*bpeCounter); !exact {
		return nil
	}
	return &DiskCache{path: filepath.Join(dir, fmt.Sprintf("counts-%s-v%d.bin", c.Name(), diskVersion))}
}

// NewCached is New with counts of long texts kept in d as well (d may be nil).
func NewCached(name string, d *DiskCache) (Counter, error) {
	c, err := New(name)
	if b, exact := c.(*bpeCounter); exact && d != nil {
		b.disk = d
	}
	return c, err
}

// lookup returns the count the file holds for a text of the given size and digest.
func (d *DiskCache) lookup(sum [32]byte, size int) (int, bool) {
	if size < diskMinBytes {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		if d.counted < diskLoadAfter {
			return 0, false
		}
		d.load()
	}
	n, ok := d.known[[16]byte(sum[:16])]
	return int(n), ok
}

// remember records a count this run made.
func (d *DiskCache) remember(sum [32]byte, size, n int) {
	if size < diskMinBytes || n < 0 || n > 1<<32-1 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counted += int64(size)
	d.fresh = appendRecord(d.fresh, [16]byte(sum[:16]), uint32(n))
}

func appendRecord(b []byte, key [16]byte, n uint32) []byte {
	b = append(b, key[:]...)
	b = binary.LittleEndian.AppendUint32(b, n)
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b[len(b)-20:]))
}

// load reads the file's records (once; errors leave the cache empty).
func (d *DiskCache) load() {
	d.loaded = true
	d.known = map[[16]byte]uint32{}
	data, err := os.ReadFile(d.path)
	if err != nil {
		return
	}
	for len(data) >= diskRecord {
		r := data[:diskRecord]
		data = data[diskRecord:]
		if crc32.ChecksumIEEE(r[:20]) == binary.LittleEndian.Uint32(r[20:]) {
			d.known[[16]byte(r[:16])] = binary.LittleEndian.Uint32(r[16:20])
		}
	}
}

// Flush appends this run's counts to the file, when the run counted enough to have read
// it, and cuts the file to its newer half when it has grown past its bound. Errors are
// ignored: the cache only saves time.
func (d *DiskCache) Flush() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.fresh) == 0 || d.counted < diskLoadAfter {
		return
	}
	if d.loaded {
		// What the file already holds need not be written again.
		kept := d.fresh[:0]
		for r := d.fresh; len(r) >= diskRecord; r = r[diskRecord:] {
			if _, ok := d.known[[16]byte(r[:16])]; !ok {
				kept = append(kept, r[:diskRecord]...)
			}
		}
		d.fresh = kept
	}
	if err := os.MkdirAll(filepath.Dir(d.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(d.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, err = f.Write(d.fresh) // one write: appends of runs sharing the file do not mix
	st, serr := f.Stat()
	f.Close()
	d.fresh = nil
	if err == nil && serr == nil && st.Size() > diskMaxBytes {
		d.compact()
	}
}

// compact rewrites the file with its newer half.
func (d *DiskCache) compact() {
	data, err := os.ReadFile(d.path)
	if err != nil {
		return
	}
	keep := data[len(data)-len(data)%diskRecord:] // a torn last record goes
	keep = data[:len(data)-len(keep)]
	if half := len(keep) / diskRecord / 2 * diskRecord; half > 0 {
		keep = keep[len(keep)-half:]
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.path), ".counts-*.tmp")
	if err != nil {
		return
	}
	_, err = tmp.Write(keep)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil || os.Rename(tmp.Name(), d.path) != nil {
		os.Remove(tmp.Name())
	}
}
