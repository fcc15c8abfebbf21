package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tiers"
)

// replayed is one replay's report (--turns: a line per request, then the totals) and the
// hash of every request it sent.
type replayed struct {
	code           int
	report, stderr []byte
	sent           [][sha256.Size]byte
}

func replayWith(t *testing.T, commands bool, args []string) replayed {
	t.Helper()
	var r replayed
	sent := func(_ int, req []byte) error { r.sent = append(r.sent, sha256.Sum256(req)); return nil }
	var stdout, stderr bytes.Buffer
	r.code = cli.Main(tool(sent, commands), args, nil, &stdout, &stderr, testEnv)
	if r.code != 0 && r.code != cli.ExitInput {
		t.Fatalf("ctx-replay %s (commands %v): exit %d: %s", strings.Join(args, " "), commands, r.code, stderr.String())
	}
	r.report, r.stderr = stdout.Bytes(), stderr.Bytes()
	return r
}

// The in-process pipeline (one parsed document, the tiers as values) sends every request
// the stages' commands send, byte for byte, and reports the same firings, savings and
// sizes, turn by turn: over every corpus session (six without CTXKIT_LONG=1, at 8k and
// 30k windows: 7 s; with it, every other session at one of the two windows, so that
// .ci/run stays well under its 15 minutes) and a generated one, at windows small enough
// that every tier fires somewhere.
func TestPipelineIsTheCommands(t *testing.T) {
	quick := invariant.Quick(invariant.CorpusFiles(t), 6)
	files := invariant.CorpusFiles(t)
	if !invariant.IsLong() {
		files = quick
	}
	files = append(files, generatedFile(t, testgen.Options{Format: "claude-code", Size: 1_000_000, Seed: 2}, "generated.jsonl"))
	quick = append(quick, files[len(files)-1])
	var mu sync.Mutex
	fired := map[string]int{}
	// The replays run two at a time (go test's -parallel, GOMAXPROCS): the largest
	// sessions would otherwise leave one core idle at the end of .ci/run's test run.
	t.Run("sessions", func(t *testing.T) {
		for i, f := range files {
			windows := []string{"8k", "30k"}
			if !slices.Contains(quick, f) {
				windows = windows[i%2 : i%2+1]
			}
			for _, window := range windows {
				name := fmt.Sprintf("%s at %s", filepath.Base(f), window)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					for tool, n := range samePipeline(t, name, []string{"--turns", "--window", window, f}) {
						mu.Lock()
						fired[tool] += n
						mu.Unlock()
					}
				})
			}
		}
	})
	t.Logf("firings: %v", fired)
	for _, name := range tiers.Names() {
		if fired[name] == 0 {
			t.Errorf("%s never fired: the test does not hold it to its command", name)
		}
	}
}

// samePipeline replays args with the stages' commands and in process, reports where the
// two differ, and returns the tiers' firings.
func samePipeline(t *testing.T, name string, args []string) map[string]int {
	old := replayWith(t, true, args)
	cur := replayWith(t, false, args)
	if old.code != 0 || cur.code != 0 {
		// a session with nothing to replay (no reply, an empty file)
		if old.code != cur.code || !bytes.Equal(old.stderr, cur.stderr) {
			t.Errorf("%s: exit %d: %s\nthe commands': exit %d: %s", name, cur.code, cur.stderr, old.code, old.stderr)
		}
		return nil
	}
	if len(old.sent) != len(cur.sent) {
		t.Errorf("%s: %d requests sent, the commands sent %d", name, len(cur.sent), len(old.sent))
		return nil
	}
	for i := range old.sent {
		if old.sent[i] != cur.sent[i] {
			t.Errorf("%s: request %d differs from the commands'", name, i+1)
			break
		}
	}
	oldLines, curLines := bytes.Split(old.report, []byte("\n")), bytes.Split(cur.report, []byte("\n"))
	for i := range min(len(oldLines), len(curLines)) {
		if !bytes.Equal(oldLines[i], curLines[i]) {
			t.Errorf("%s: report line %d\n got %s\nwant %s", name, i+1, curLines[i], oldLines[i])
			break
		}
	}
	if len(oldLines) != len(curLines) {
		t.Errorf("%s: %d report lines, the commands' %d", name, len(curLines), len(oldLines))
	}
	var tot struct {
		Firings map[string]int `json:"firings"`
	}
	if n := len(curLines); n >= 2 {
		json.Unmarshal(curLines[n-2], &tot)
	}
	return tot.Firings
}
