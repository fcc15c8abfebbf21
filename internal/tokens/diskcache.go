package tokens

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// DiskCache keeps the exact counts of long texts in a file every run shares, so the tiers
// of a pipeline, one process each and each measuring the whole conversation, count a text
// once instead of once a tier. It only saves time: a count read back is the count the
// same counter made, and when the file cannot be read or written the counter simply
// counts.
//
// Small runs never touch the file: it is read only once a run has counted diskLoadAfter
// bytes of long texts itself, or, sooner, once it has counted diskProbeAfter bytes and
// the file is no bigger than diskLoadShare times that (reading a record costs about what
// counting a few bytes does, so the file costs a fraction of the counting it may save).
// Waiting for diskLoadAfter alone meant the later tiers of a pipeline over a 10 MB Codex
// rollout, which count 2-3 MB of long texts each, counted nearly all of it again with the
// counts of the tier before them in the file. The file is written only by a run that
// counted diskLoadAfter bytes or read it. It is a list of
// fixed-size records, appended to with one write per run, so runs may share it without
// locking. Past diskMaxBytes it is cut to its newer half.
//
// The counts decide whether a document is over its budget (ctx-count --fail-over,
// ctx-trim --max-tokens), so the file is not trusted blindly:
//
//   - A record is keyed by an HMAC of the text's SHA-256 under a per-user secret kept
//     beside the file (counts.key, 0600). Without the secret no one can write a record
//     that matches a text, so a planted file (valid CRCs, every count 1) matches nothing.
//   - The folder, the file and the key must be the user's, not links, not writable by
//     group or others (the key not readable by them either). A cache that fails a check
//     is ignored for the run, with one warning (Warn); it is never fatal.
//   - Each record starts with a marker and ends with a CRC, and the reader resynchronises
//     on the next marker after a bad byte: a torn write (a killed run) costs the records
//     it cut, not every record after it. A file with such damage is rewritten whole by
//     the next run that writes to it, instead of growing.
type DiskCache struct {
	path string
	// Warn, if set, is told (once) why the cache is ignored.
	Warn func(msg string)

	mu      sync.Mutex
	loaded  bool
	usable  bool   // the checks passed and the secret is at hand
	damaged bool   // the file holds bytes that are not records
	secret  []byte // the HMAC key
	known   map[[16]byte]uint32
	fresh   []freshCount // counts of this run, to append
	counted int64        // bytes of long texts this run counted itself
	probed  int64        // counted when the file's size was last looked at (0: never)
}

type freshCount struct {
	sum [32]byte
	n   uint32
}

const (
	// diskMinBytes: shorter texts are cheaper to count than to look up and store.
	diskMinBytes = 1 << 10
	// diskLoadAfter is how much counting a run does before the file is worth reading,
	// whatever its size.
	diskLoadAfter = 2 << 20
	// diskProbeAfter is how much counting a run does before it looks at the file's size,
	// and diskLoadShare how many times what it counted the file may hold to be read then.
	diskProbeAfter = 64 << 10
	diskLoadShare  = 4
	// diskMaxBytes bounds the file (about 1.2 million counts).
	diskMaxBytes = 32 << 20
	// diskRecord is a record's size: marker (4), tag (16), count (4), CRC of the rest (4).
	diskRecord = 28
	// diskVersion names the counting the records were made with and their layout: bump it
	// whenever a counter's result for some text changes, and old files are ignored.
	// 2: keyed tags, markers.
	diskVersion = 2
	// keyName is the secret's file in the cache folder, keySize its length.
	keyName = "counts.key"
	keySize = 32
)

// diskMarker starts every record; the version is in it so a record of another layout
// never resynchronises as one of this.
var diskMarker = [4]byte{0xC7, 'c', 'k', diskVersion}

// NewDiskCache returns the cache of the counter called name (as New takes it) in dir, or
// nil when dir is "" or the counter is not an exact one (estimates cost nothing).
func NewDiskCache(dir, name string) *DiskCache {
	// (Not New(name) to learn the counter's name: that makes a counter, whose caches are
	// megabytes.)
	exact := exactName(name)
	if exact == "" || dir == "" {
		return nil
	}
	return &DiskCache{path: filepath.Join(dir, fmt.Sprintf("counts-%s-v%d.bin", exact, diskVersion))}
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
		if d.counted < diskLoadAfter && !d.worthReading() {
			return 0, false
		}
		d.load()
	}
	if !d.usable {
		return 0, false
	}
	n, ok := d.known[d.tag(sum)]
	return int(n), ok
}

// worthReading reports whether the file is small next to what the run counted so far
// (diskProbeAfter, diskLoadShare). The size is looked at again each time the counting has
// doubled, so a long run pays a few stats at most.
func (d *DiskCache) worthReading() bool {
	if d.counted < diskProbeAfter || d.counted < 2*d.probed {
		return false
	}
	d.probed = d.counted
	st, err := os.Lstat(d.path) // load checks what it opens; this only weighs it
	return err == nil && st.Size() <= diskLoadShare*d.counted
}

// remember records a count this run made.
func (d *DiskCache) remember(sum [32]byte, size, n int) {
	if size < diskMinBytes || n < 0 || n > 1<<32-1 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counted += int64(size)
	d.fresh = append(d.fresh, freshCount{sum, uint32(n)})
}

// tag is the record key of a text's SHA-256: bound to the exact text and, without the
// secret, impossible to forge.
func (d *DiskCache) tag(sum [32]byte) [16]byte {
	m := hmac.New(sha256.New, d.secret)
	m.Write(sum[:])
	return [16]byte(m.Sum(nil))
}

func appendRecord(b []byte, tag [16]byte, n uint32) []byte {
	b = append(b, diskMarker[:]...)
	b = append(b, tag[:]...)
	b = binary.LittleEndian.AppendUint32(b, n)
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b[len(b)-24:]))
}

// parseRecords reads the records in data, resynchronising on the next marker after
// anything that is not one; damaged says whether any byte was skipped.
func parseRecords(data []byte, into map[[16]byte]uint32) (damaged bool) {
	for len(data) > 0 {
		if len(data) >= diskRecord && bytes.HasPrefix(data, diskMarker[:]) &&
			crc32.ChecksumIEEE(data[:24]) == binary.LittleEndian.Uint32(data[24:diskRecord]) {
			into[[16]byte(data[4:20])] = binary.LittleEndian.Uint32(data[20:24])
			data = data[diskRecord:]
			continue
		}
		damaged = true
		next := bytes.Index(data[1:], diskMarker[:])
		if next < 0 {
			break
		}
		data = data[1+next:]
	}
	return damaged
}

// load makes the folder if needed, checks it, the secret and the file, and reads the
// file's records (once). A failed check leaves the cache unusable for the run, with one
// warning; a file or secret that does not exist yet is no failure.
func (d *DiskCache) load() {
	d.loaded = true
	d.known = map[[16]byte]uint32{}
	// Only a run that counted enough to write gets here: the folder may be made now.
	dir := filepath.Dir(d.path)
	err := safefile.MkdirAll(dir)
	if err == nil {
		err = safefile.CheckPrivateDir(dir)
	}
	if err != nil {
		d.warn(err)
		return
	}
	secret, err := d.readSecret()
	if err != nil {
		d.warn(err)
		return
	}
	d.secret, d.usable = secret, true
	f, err := safefile.Open(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var data []byte
	if err == nil {
		err = privateFile(d.path, f, 0o022)
		if err == nil {
			data, err = io.ReadAll(io.LimitReader(f, 2*diskMaxBytes))
		}
		f.Close()
	}
	if err != nil {
		d.usable = false
		d.warn(err)
		return
	}
	d.damaged = parseRecords(data, d.known)
}

// readSecret returns the user's secret, made on first use (safefile.Secret: concurrent
// first runs agree on one, none reads a partial one).
func (d *DiskCache) readSecret() ([]byte, error) {
	return safefile.Secret(filepath.Join(filepath.Dir(d.path), keyName), keySize)
}

// privateFile checks an open file of the cache: no permission bits in forbid.
func privateFile(path string, f *os.File, forbid fs.FileMode) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&forbid != 0 {
		return fmt.Errorf("%q is open to group or others (mode %v)", path, fi.Mode().Perm())
	}
	return nil
}

func (d *DiskCache) warn(err error) {
	if d.Warn != nil {
		d.Warn(fmt.Sprintf("count cache ignored: %v", err))
	}
}

// Flush appends this run's counts to the file, when the run counted enough to read it or
// read it, and rewrites the file when it has grown past its bound (its newer half) or holds
// damage (every good record). Errors are ignored: the cache only saves time.
func (d *DiskCache) Flush() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.fresh) == 0 || d.counted < diskLoadAfter && !d.loaded {
		return
	}
	if !d.loaded {
		d.load()
	}
	if !d.usable {
		return
	}
	safefile.RemoveStale(filepath.Dir(d.path), func(name string) bool { return safefile.IsHexTemp(name, ".counts-", ".tmp") }, time.Now())
	var out []byte
	for _, c := range d.fresh {
		// What the file already holds need not be written again.
		if t := d.tag(c.sum); !d.has(t) {
			out = appendRecord(out, t, c.n)
		}
	}
	d.fresh = nil
	if d.damaged {
		d.rewrite(out)
		return
	}
	if len(out) == 0 {
		return
	}
	f, err := safefile.OpenAppend(d.path, 0o600)
	if err != nil {
		return
	}
	_, err = f.Write(out) // one write: appends of runs sharing the file do not mix
	st, serr := f.Stat()
	f.Close()
	if err == nil && serr == nil && st.Size() > diskMaxBytes {
		d.compact()
	}
}

func (d *DiskCache) has(t [16]byte) bool {
	_, ok := d.known[t]
	return ok
}

// compact rewrites the file with its newer half.
func (d *DiskCache) compact() {
	f, err := safefile.Open(d.path)
	if err != nil {
		return
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return
	}
	for r := data; len(r) > 0; r = r[min(diskRecord, len(r)):] {
		if len(r) < diskRecord || !bytes.HasPrefix(r, diskMarker[:]) {
			d.rewrite(nil) // damage appended since this run loaded the file
			return
		}
	}
	half := len(data) / diskRecord / 2 * diskRecord
	safefile.WriteFile(d.path, data[len(data)-half:]) // errors: the cache only saves time
}

// rewrite replaces the file with the good records it held when loaded plus more.
func (d *DiskCache) rewrite(more []byte) {
	var out []byte
	for t, n := range d.known {
		out = appendRecord(out, t, n)
	}
	out = append(out, more...)
	if len(out) > diskMaxBytes {
		out = out[len(out)-diskMaxBytes/2/diskRecord*diskRecord:]
	}
	safefile.WriteFile(d.path, out) // errors: the cache only saves time
}
