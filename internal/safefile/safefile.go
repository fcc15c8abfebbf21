// Package safefile owns how ctxkit creates files and directories: so that a path planted
// by someone else (a symbolic link committed to a cloned repository, a file or folder
// another user owns in a shared directory) is refused, never followed.
//
// The rules, for every file ctxkit writes (store files, the count cache, the circuit
// breaker's state, -o and --in-place outputs, --stats-file):
//
//   - A target that exists must be a regular file owned by the user, not a symbolic link.
//     A symbolic link is refused, and the error names the file it points to, so the user
//     can name that file instead if it was meant.
//   - New files are created with O_EXCL and O_NOFOLLOW (mode 0600), written, synced, and
//     renamed over the target: a rename replaces a link, it never writes through it.
//   - Directories ctxkit creates are mode 0700, and one that already exists must be a
//     directory owned by the user, not a symbolic link.
//   - A file read back (Open) must be a regular file the user owns, checked on the open
//     file (fstat): opened without following a link and without waiting (O_NONBLOCK), so
//     that a FIFO or device planted under the name is refused instead of hanging the run.
//   - Temp files a killed run left behind, recognised by their exact names, owned by the
//     user and untouched for StaleAfter, are removed by the next run that finds them.
//
// Ownership means the effective user id on Unix; Windows has no such check here.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrUnsafe is what every refusal wraps (errors.Is(err, ErrUnsafe)).
var ErrUnsafe = errors.New("refused")

// UnsafeError says why a path was refused.
type UnsafeError struct {
	Path string // the path as given
	Why  string // "is a symbolic link", "is owned by another user"...
	Real string // for a symbolic link, the file it resolves to ("" when it resolves nowhere)
}

func (e *UnsafeError) Error() string { return fmt.Sprintf("%q %s", e.Path, e.Why) }

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// Hint is a line telling the user what to do about the refusal.
func (e *UnsafeError) Hint() string {
	switch {
	case e.Real != "":
		return fmt.Sprintf("ctxkit never writes through a symbolic link; it points to %q: name that file if it is the one meant, or remove the link", e.Real)
	case strings.Contains(e.Why, "symbolic link"):
		return "ctxkit never writes through a symbolic link; remove the link"
	case strings.Contains(e.Why, "owned by"):
		return "ctxkit only writes files and directories the user owns; remove it or choose another path"
	}
	return ""
}

// StaleAfter is how long a temp file of ours must have been left untouched before a later
// run takes it for the leftover of a killed run and removes it. Live runs write their temp
// files in seconds; a quarter of an hour leaves a wide margin.
const StaleAfter = 15 * time.Minute

// check refuses fi (the Lstat of path) when it is a link, someone else's, or not of the
// wanted kind.
func check(path string, fi fs.FileInfo, wantDir bool) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = ""
		}
		if real != "" {
			if abs, err := filepath.Abs(real); err == nil {
				real = abs
			}
		}
		return &UnsafeError{Path: path, Why: "is a symbolic link", Real: real}
	}
	if owner, ok := ownerOf(fi); ok && owner != os.Geteuid() {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("is owned by another user (uid %d)", owner)}
	}
	switch {
	case wantDir && !fi.IsDir():
		return &UnsafeError{Path: path, Why: "is not a directory"}
	case !wantDir && !fi.Mode().IsRegular():
		return &UnsafeError{Path: path, Why: "is not a regular file"}
	}
	return nil
}

// CheckTarget checks a file about to be replaced or appended to: it may not exist; if it
// does it must be a regular file the user owns, not a symbolic link. Errors that are not
// refusals (a folder that cannot be read) are returned as they are.
func CheckTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return check(path, fi, false)
}

// CheckDir checks an existing directory: a directory the user owns, not a symbolic link.
func CheckDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return check(path, fi, true)
}

// CheckPrivateDir is CheckDir for a cache whose entries are trusted: group and others
// may not write in it either, or they could plant entries.
func CheckPrivateDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if err := check(path, fi, true); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("is writable by group or others (mode %v)", fi.Mode().Perm())}
	}
	return nil
}

// CheckInfo applies the rules to what Stat of an open file said (fstat, so it cannot be
// swapped in between) or Lstat said of a name: a regular file the user owns.
func CheckInfo(path string, fi fs.FileInfo) error { return check(path, fi, false) }

// CheckDirInfo is CheckInfo for a directory.
func CheckDirInfo(path string, fi fs.FileInfo) error { return check(path, fi, true) }

// NoFollow is the open flag that makes opening a symbolic link fail (O_NOFOLLOW), for
// callers that open through an os.Root; 0 where there is none.
const NoFollow = oNoFollow

// MkdirAll makes the directory path and its missing parents, mode 0700, and checks path
// as CheckDir does (parents the user did not ask ctxkit to create are not checked: a home
// directory may well sit behind a link).
func MkdirAll(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		// MkdirAll fails on a link to a missing folder: say it is a link.
		if fi, lerr := os.Lstat(path); lerr == nil {
			if cerr := check(path, fi, true); cerr != nil {
				return cerr
			}
		}
		return err
	}
	return CheckDir(path)
}

// CreateTemp creates a new file in dir named prefix+random+suffix, mode 0600, refusing to
// follow or reuse anything already there.
func CreateTemp(dir, prefix, suffix string) (*os.File, error) {
	for try := 0; ; try++ {
		var rnd [8]byte
		rand.Read(rnd[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(rnd[:])+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || try == 3 {
			return f, err
		}
	}
}

// TempPrefix and TempSuffix frame the names of WriteFile's and the cli's temp files
// beside a target: ".NAME.<16 hex digits>.tmp".
func TempPrefix(target string) string { return "." + filepath.Base(target) + "." }

// TempSuffix ends every temp file name beside a target.
const TempSuffix = ".tmp"

// IsTemp reports whether name is one of the temp names TempPrefix(target) makes.
func IsTemp(name, target string) bool { return IsHexTemp(name, TempPrefix(target), TempSuffix) }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// IsHexTemp reports whether name is prefix followed by the 16 hex digits CreateTemp adds
// and suffix.
func IsHexTemp(name, prefix, suffix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, suffix)
	return ok && isHex(rest, 16)
}

// WriteFile replaces path with data atomically: CheckTarget, a new temp file beside it
// (CreateTemp), fsync, rename. The file is mode 0600.
func WriteFile(path string, data []byte) error {
	return WriteFileMode(path, data, 0o600)
}

// WriteFileMode is WriteFile for a file others are meant to read (a shell completion
// script in a system-wide folder): the temp file is given mode perm before anything is
// written in it, whatever the umask, and renamed as WriteFile renames it.
func WriteFileMode(path string, data []byte, perm fs.FileMode) error {
	if err := CheckTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	RemoveStale(dir, func(name string) bool { return IsTemp(name, path) }, time.Now())
	f, err := CreateTemp(dir, TempPrefix(path), TempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	if perm != 0o600 {
		err = f.Chmod(perm)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Checked again just before: a link planted meanwhile is still replaced by the
		// rename, not followed, but the user hears of it.
		if err = CheckTarget(path); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// OpenAppend opens path for appending, creating it (mode perm) if needed, without
// following a symbolic link, and refuses a file that is not a regular file the user owns.
func OpenAppend(path string, perm fs.FileMode) (*os.File, error) {
	if err := CheckTarget(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|oNoFollow, perm)
	if err != nil {
		if cerr := CheckTarget(path); cerr != nil {
			return nil, cerr // O_NOFOLLOW's ELOOP: a link planted meanwhile
		}
		return nil, err
	}
	if err := checkOpen(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens path for reading with the same rules: not through a link, a regular file the
// user owns. The open does not wait (O_NONBLOCK): a FIFO under the name is refused as not a
// regular file, never waited on. (The flag changes nothing for reading a regular file.)
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		if cerr := CheckTarget(path); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if err := checkOpen(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenStream opens a stream the user named (a FIFO, a terminal, a character device) for
// reading, without waiting for a writer (O_NONBLOCK: reads then go through Go's poller, so
// closing the file wakes a read waiting for data). It creates nothing, so no file is made
// through a planted link, and it writes nothing; like any input the user names, it is
// read through a link and whoever owns it. A directory or a regular file is refused:
// Open reads those.
func OpenStream(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		err = fmt.Errorf("%q is not a stream (a FIFO or a device)", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkOpen(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return check(path, fi, false)
}

// RemoveStale removes the files in dir whose names match, that are regular files the user
// owns and were last modified more than StaleAfter before now: temp files of runs that
// were killed before they could remove them. It returns how many it removed; errors only
// mean fewer are removed.
func RemoveStale(dir string, match func(name string) bool, now time.Time) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !match(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || check(path, fi, false) != nil || now.Sub(fi.ModTime()) < StaleAfter {
			continue
		}
		if os.Remove(path) == nil {
			n++
		}
	}
	return n
}

// Secret returns the size-byte secret kept in the file path, made on first use (random,
// mode 0600): a temp file linked to its name, so that concurrent first runs agree on one
// secret and none reads a partial one. The file must be a regular file the user owns, not a
// link, readable by no one else; its folder is made (MkdirAll) and must be writable by no
// one else (CheckPrivateDir), or a secret another user could replace would be trusted.
func Secret(path string, size int) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return nil, err
	}
	if err := CheckPrivateDir(dir); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		f, err := Open(path)
		if err == nil {
			var key []byte
			fi, err := f.Stat()
			if err == nil && fi.Mode().Perm()&0o077 != 0 {
				err = fmt.Errorf("%q is open to group or others (mode %v)", path, fi.Mode().Perm())
			}
			if err == nil {
				key = make([]byte, size+1)
				var n int
				n, err = io.ReadFull(f, key)
				if errors.Is(err, io.ErrUnexpectedEOF) {
					err = nil
				}
				key = key[:n]
			}
			f.Close()
			if err == nil && len(key) != size {
				err = fmt.Errorf("%q is not a secret of %d bytes", path, size)
			}
			return key, err
		}
		if !errors.Is(err, fs.ErrNotExist) || try > 0 {
			return nil, err
		}
		if err := makeSecret(path, size); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
}

func makeSecret(path string, size int) error {
	key := make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := CreateTemp(filepath.Dir(path), TempPrefix(path), TempSuffix)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path) // never replaces a secret another run made
}
