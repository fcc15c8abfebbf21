package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// someoneElses makes path belong to another user, or skips: only root can give a file away.
func someoneElses(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Skip("chown:", err)
	}
}

func TestWriteFileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	link := filepath.Join(dir, "state.json")
	if err := os.Symlink(victim, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	err := WriteFile(link, []byte("overwritten"))
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("WriteFile through a link: %v, want a refusal", err)
	}
	if ue.Real != victim || !strings.Contains(ue.Hint(), victim) {
		t.Errorf("refusal names %q, hint %q; want the real file %q", ue.Real, ue.Hint(), victim)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target was written: %q", b)
	}
	if _, err := OpenAppend(link, 0o600); !errors.Is(err, ErrUnsafe) {
		t.Errorf("OpenAppend through a link: %v", err)
	}
	if _, err := Open(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Open through a link: %v", err)
	}
}

func TestWriteFileAtomic0600(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFile(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	b, _ := os.ReadFile(path)
	if string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Errorf("got %q mode %v", b, st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

// TestWriteFileMode: a file meant for others is written with their mode, whatever the
// umask, and still never through a link.
func TestWriteFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no permission bits")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFileMode(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Skip(err)
	}
	if err := WriteFileMode(link, []byte("x"), 0o644); !errors.Is(err, ErrUnsafe) {
		t.Errorf("through a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
}

func TestMkdirAllRefuses(t *testing.T) {
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	link := filepath.Join(dir, "store")
	os.Symlink(elsewhere, link)
	if err := MkdirAll(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("MkdirAll of a link to a folder: %v", err)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	if err := MkdirAll(dangling); !errors.Is(err, ErrUnsafe) {
		t.Errorf("MkdirAll of a dangling link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Errorf("MkdirAll created the link's target")
	}
	fresh := filepath.Join(dir, "a", "b")
	if err := MkdirAll(fresh); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o700 {
		t.Errorf("new directory mode %v, want 0700", st.Mode().Perm())
	}
}

func TestSomeoneElsesIsRefused(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("x"), 0o666)
	d := filepath.Join(dir, "d")
	os.Mkdir(d, 0o777)
	someoneElses(t, f)
	someoneElses(t, d)
	if err := WriteFile(f, []byte("y")); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "owned by another user") {
		t.Errorf("WriteFile over another user's file: %v", err)
	}
	if _, err := OpenAppend(f, 0o600); !errors.Is(err, ErrUnsafe) {
		t.Errorf("OpenAppend of another user's file: %v", err)
	}
	if err := MkdirAll(d); !errors.Is(err, ErrUnsafe) {
		t.Errorf("MkdirAll of another user's folder: %v", err)
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.json")
	old := time.Now().Add(-2 * StaleAfter)
	names := map[string]bool{ // name: removed
		".out.json.0123456789abcdef.tmp":   true,
		".out.json.0123456789abcdeg.tmp":   false, // not our pattern
		".out.json.fresh00000000000.tmp":   false,
		"out.json":                         false,
		".other.json.0123456789abcdef.tmp": false,
	}
	for n := range names {
		p := filepath.Join(dir, n)
		os.WriteFile(p, nil, 0o600)
		if n != ".out.json.fresh00000000000.tmp" {
			os.Chtimes(p, old, old)
		}
	}
	fresh := filepath.Join(dir, ".out.json.1111111111111111.tmp")
	os.WriteFile(fresh, nil, 0o600) // ours, but recent: a live run's
	names[filepath.Base(fresh)] = false
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Chtimes(victim, old, old)
	os.Symlink(victim, filepath.Join(dir, ".out.json.2222222222222222.tmp"))
	names[".out.json.2222222222222222.tmp"] = false
	names["victim"] = false

	got := RemoveStale(dir, func(n string) bool { return IsTemp(n, target) }, time.Now())
	if got != 1 {
		t.Errorf("removed %d files, want 1", got)
	}
	for n, removed := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); (err != nil) != removed {
			t.Errorf("%s: removed=%v, want %v", n, err != nil, removed)
		}
	}
}

func TestCheckPrivateDir(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	os.Mkdir(own, 0o700)
	if err := CheckPrivateDir(own); err != nil {
		t.Errorf("a 0700 folder of the user's: %v", err)
	}
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o700)
	os.Chmod(shared, 0o775) // not through Mkdir: the umask would clear the bits
	if err := CheckPrivateDir(shared); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("a group-writable folder: %v", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(own, link)
	if err := CheckPrivateDir(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a link to a folder: %v", err)
	}
}

// TestSecret: the secret is made once, 0600, the same for every later call; one that others
// may read, or a link, is refused.
func TestSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "some.key")
	a, err := Secret(path, 32)
	if err != nil || len(a) != 32 {
		t.Fatalf("Secret: %d bytes, %v", len(a), err)
	}
	b, err := Secret(path, 32)
	if err != nil || string(a) != string(b) {
		t.Fatalf("a second call gave another secret: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if _, err := Secret(path, 16); err == nil {
		t.Errorf("a secret of another size was taken")
	}
	os.Chmod(path, 0o644)
	if _, err := Secret(path, 32); err == nil {
		t.Errorf("a secret others can read was taken")
	}
	os.Remove(path)
	target := filepath.Join(t.TempDir(), "planted")
	os.WriteFile(target, make([]byte, 32), 0o600)
	if err := os.Symlink(target, path); err != nil {
		t.Skip(err)
	}
	if _, err := Secret(path, 32); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a link as the secret: %v", err)
	}
}
