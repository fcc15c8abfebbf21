package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// generatedFile writes a generated document to a file in a temporary directory.
func generatedFile(t *testing.T, o testgen.Options, name string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testEnv is the environment of a replay run by a test: no count cache on disk.
func testEnv(k string) string {
	if k == "CTX_CACHE_DIR" {
		return "off"
	}
	return ""
}

// Six replays of one session give the same report and the same requests, byte for byte,
// wherever their temporary store is made. The stages' placeholders named the store's
// random path (ctx-replay-<digits>/store/...): its length changed the tokens of every
// request that held one, and a decision near a threshold with them (six runs of one
// session billed 0.6429, 0.6430 and 0.6507).
func TestReplayIsDeterministic(t *testing.T) {
	session := generatedFile(t, testgen.Options{Format: "claude-code", Size: 400_000, Seed: 1}, "session.jsonl")
	var first, firstSaved []byte
	for i := range 6 {
		tmp := filepath.Join(t.TempDir(), strings.Repeat("d", 1+9*i))
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", tmp)
		save := filepath.Join(t.TempDir(), "requests")
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"--json", "--window", "40k", "--save", save, session}, nil, &stdout, &stderr, testEnv); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i+1, code, stderr.String())
		}
		saved := savedRequests(t, save)
		if i == 0 {
			first, firstSaved = stdout.Bytes(), saved
			if !bytes.Contains(saved, []byte("/store/")) {
				t.Fatalf("no request names the store: the test needs a tier that offloads")
			}
			continue
		}
		if !bytes.Equal(stdout.Bytes(), first) {
			t.Errorf("run %d (TMPDIR %d bytes long) reports otherwise than run 1:\n%s\n%s", i+1, len(tmp), first, stdout.Bytes())
		}
		if !bytes.Equal(saved, firstSaved) {
			t.Errorf("run %d (TMPDIR %d bytes long) sent other requests than run 1", i+1, len(tmp))
		}
	}
}

// savedRequests is every request --save wrote to dir, one after another.
func savedRequests(t *testing.T, dir string) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no request saved in %s: %v", dir, err)
	}
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
