package convstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var testKey = []byte("0123456789abcdef0123456789abcdef")

func TestSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proxy")
	d, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// <, > and & are what a json.RawMessage would have re-encoded.
	in := &State{Key: "k", Orig: []string{Hash("a")}, Sent: []string{`{"role":"user","content":"a <b> & c"}`}}
	d.Keep(in)
	if got, _ := d.Get("k"); got != in {
		t.Fatalf("Keep is not seen by Get at once")
	}
	if err := d.Put(in); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d2.Get("k")
	if err != nil || got == nil || got.Sent[0] != in.Sent[0] || got.Orig[0] != in.Orig[0] {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
	fi, err := os.Stat(filepath.Join(dir, fileName("k")))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, %v", fi.Mode(), err)
	}
}

func TestBounds(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	d, err := Open(dir, Options{MaxCount: 3, MaxAge: time.Hour}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		c.t = c.t.Add(time.Minute)
		if err := d.Put(&State{Key: fmt.Sprint(i), Orig: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(d.All()); n != 3 {
		t.Errorf("%d conversations kept, want 3", n)
	}
	if s, _ := d.Get("0"); s != nil {
		t.Errorf("the oldest was not dropped")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 3 {
		t.Errorf("%d files on disk, want 3", len(files))
	}
	c.t = c.t.Add(2 * time.Hour)
	if s, _ := d.Get("4"); s != nil {
		t.Errorf("an expired conversation was returned")
	}
	d2, err := Open(dir, Options{MaxCount: 3, MaxAge: time.Hour}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d2.All()); n != 0 {
		t.Errorf("%d expired conversations kept", n)
	}
}

// TestBoundsCountMemory: the messages as the client sent them (OrigRaw), which the proxy
// keeps in memory only, count towards MaxBytes, where they are not the messages sent; so
// do both when the pipeline made the sent ones short.
func TestBoundsCountMemory(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	d, err := Open(t.TempDir(), Options{MaxBytes: 100_000, Key: testKey}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		c.t = c.t.Add(time.Minute)
		orig := fmt.Sprintf(`{"role":"user","content":"%d %s"}`, i, strings.Repeat("x", 40_000))
		d.Keep(&State{Key: fmt.Sprint(i), Orig: []string{Hash(orig)}, OrigRaw: []string{orig}, Sent: []string{`{"role":"user","content":"[cleared]"}`}})
	}
	if n := len(d.All()); n != 2 {
		t.Errorf("%d conversations of 40 KB kept in memory, want 2 within 100,000 bytes", n)
	}
	// The strings sent are the client's: counted once.
	for i := 4; i < 8; i++ {
		c.t = c.t.Add(time.Minute)
		msg := fmt.Sprintf(`{"role":"user","content":"%d %s"}`, i, strings.Repeat("x", 20_000))
		d.Keep(&State{Key: fmt.Sprint(i), Orig: []string{Hash(msg)}, OrigRaw: []string{msg}, Sent: []string{msg}})
	}
	if n := len(d.All()); n != 4 {
		t.Errorf("%d conversations of 20 KB sent as received kept, want 4", n)
	}
}

// TestRecent: the conversations kept that open with a first message are offered newest
// first, at most recentFirst of them, and no longer once dropped.
func TestRecent(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	d, err := Open(t.TempDir(), Options{MaxCount: 5, Key: testKey}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	first := `{"role":"developer","content":"same for all"}`
	for i := 0; i < 6; i++ {
		c.t = c.t.Add(time.Minute)
		second := fmt.Sprintf(`{"role":"user","content":"%d"}`, i)
		d.Keep(&State{Key: fmt.Sprint(i), Orig: []string{Hash(first), Hash(second)}, OrigRaw: []string{first, second}})
	}
	got := d.Recent(first)
	if len(got) != recentFirst || got[0][1] != `{"role":"user","content":"5"}` || got[3][1] != `{"role":"user","content":"2"}` {
		t.Errorf("Recent: %q", got)
	}
	if d.Recent(`{"role":"user","content":"other"}`) != nil {
		t.Errorf("Recent offers a conversation that opens otherwise")
	}
	c.t = c.t.Add(48 * time.Hour)
	d.Keep(&State{Key: "new", Orig: []string{Hash("x")}, OrigRaw: []string{"x"}}) // the others expire
	if got := d.Recent(first); len(got) != 0 || len(d.first) != 1 {
		t.Errorf("Recent offers %d expired conversations; index %d", len(got), len(d.first))
	}
}

func TestRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("{}"), 0o600)
	d, err := Open(dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, fileName("k"))); err != nil {
		t.Skip(err)
	}
	if err := d.Put(&State{Key: "k"}); err == nil {
		if b, _ := os.ReadFile(target); string(b) != "{}" {
			t.Errorf("wrote through a symbolic link")
		}
	}
}

// TestSentPrunedWithState: a conversation's request as sent is written beside its state
// (0600, under the state's name), read back by ReadSent, and goes when the state goes: by
// the bounds, and on opening when its state is gone.
func TestSentPrunedWithState(t *testing.T) {
	c := &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "proxy")
	d, err := Open(dir, Options{MaxCount: 2, MaxAge: time.Hour}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		c.t = c.t.Add(time.Minute)
		st := &State{Key: fmt.Sprint(i), Orig: []string{"x"}, Sent: []string{fmt.Sprintf(`{"role":"user","content":"%d"}`, i)},
			SentHead: `{"model":"m","messages":`, SentTail: `}`}
		meta := &Sent{Format: "anthropic", Cwd: "/w", Answered: c.t}
		if err := d.PrepareSent(st, meta)(); err != nil {
			t.Fatal(err)
		}
	}
	got := ReadSent(dir)
	if len(got) != 2 || got[0].Conversation != "2" || got[1].Conversation != "1" {
		t.Fatalf("ReadSent = %+v, want conversations 2 and 1", got)
	}
	data, err := SentDocument(got[0].Path)
	if err != nil || string(data) != `{"model":"m","messages":[{"role":"user","content":"2"}]}` {
		t.Fatalf("sent body %q, %v", data, err)
	}
	if got[0].Path != filepath.Join(dir, fileName("2")) || got[0].Cwd != "/w" {
		t.Errorf("sent %+v", got[0])
	}
	if fi, err := os.Stat(got[0].Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sent file mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, SentDir, strings.TrimSuffix(fileName("0"), ".json")+metaSuffix)); !os.IsNotExist(err) {
		t.Errorf("the pruned conversation's request is still there: %v", err)
	}
	// A state removed while no proxy ran: its request goes when the directory is opened.
	os.Remove(filepath.Join(dir, fileName("1")))
	if _, err := Open(dir, Options{MaxCount: 2, MaxAge: time.Hour}, c.now); err != nil {
		t.Fatal(err)
	}
	if got := ReadSent(dir); len(got) != 1 || got[0].Conversation != "2" {
		t.Errorf("after reopening: %+v", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, SentDir))
	if len(entries) != 1 {
		t.Errorf("sent folder holds %d files, want 1 (the description)", len(entries))
	}
}

// TestUnauthenticatedIgnored: a file this user's key did not seal (planted, written under
// another key, an older version's, altered) is no memory: Get says why, All leaves it out.
func TestUnauthenticatedIgnored(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, Options{Key: testKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Key: "k", Updated: time.Now(), Orig: []string{Hash("a")}, Sent: []string{`{"role":"user","content":"planted"}`}}
	plain, _ := json.Marshal(st)
	other, _ := Open(t.TempDir(), Options{Key: []byte("another key, another user......")}, nil)
	good := seal(testKey, plain)
	altered := append([]byte{}, good...)
	altered[len(altered)-3] ^= 1
	for name, file := range map[string][]byte{
		"plain JSON":    plain,
		"another key":   seal(other.o.Key, plain),
		"altered":       altered,
		"no MAC at all": append([]byte(magic+"\n"), plain...),
	} {
		if err := os.WriteFile(filepath.Join(dir, fileName("k")), file, 0o600); err != nil {
			t.Fatal(err)
		}
		d2, err := Open(dir, Options{Key: testKey}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d2.Get("k")
		if got != nil || !errors.Is(err, ErrNotAuthenticated) {
			t.Errorf("%s: Get = %v, %v; want nothing, not authenticated", name, got, err)
		}
		if n := len(d2.All()); n != 0 {
			t.Errorf("%s: All lists %d conversations", name, n)
		}
	}
	os.WriteFile(filepath.Join(dir, fileName("k")), good, 0o600)
	if got, err := d.Get("k"); err != nil || got == nil || got.Sent[0] != st.Sent[0] {
		t.Errorf("a file sealed with the key: %v, %v", got, err)
	}
}

// TestLoadKey: the key is made once, 0600, and is the same for every later proxy.
func TestLoadKey(t *testing.T) {
	state := filepath.Join(t.TempDir(), "ctxkit")
	a, err := LoadKey(state)
	if err != nil || len(a) != keySize {
		t.Fatalf("LoadKey: %d bytes, %v", len(a), err)
	}
	if b, err := LoadKey(state); err != nil || string(a) != string(b) {
		t.Errorf("a second LoadKey gave another key: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(state, KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v", fi, err)
	}
	if k, err := LoadKey(""); k != nil || err != nil {
		t.Errorf("no state directory: %v, %v", k, err)
	}
}

// TestHashReadsInPlace: Hash is the first 16 bytes of the SHA-256 of the message, in hex,
// and reads the message where it is: its one allocation is the hex string, never a copy
// of the message (ctx-proxy hashes a whole history when it writes a state whole).
func TestHashReadsInPlace(t *testing.T) {
	msg := strings.Repeat(`{"role":"user","content":"a long message"}`, 1000)
	sum := sha256.Sum256([]byte(msg))
	if got, want := Hash(msg), hex.EncodeToString(sum[:16]); got != want {
		t.Fatalf("Hash = %s, want %s", got, want)
	}
	if n := testing.AllocsPerRun(20, func() { Hash(msg) }); n > 1 {
		t.Errorf("Hash allocates %v times a call, want 1 (the hex string)", n)
	}
}
