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
	"strconv"
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
// sampled request points. Issue 15's measure, the 8 largest sessions at 10 request points
// each, is held to its goal: within 3% on the mean and 10% at worst. Every session of the
// corpus that records usage, subagents' logs included, is held to 3% on the mean and 20%
// at worst: some requests carry text that no file holds and nothing before them foretells
// (a subagent's second request is 2.5K tokens heavier than its visible growth; a hook that
// reformats a file makes Claude Code send the change), and a cut just before such a
// request misses it by up to 16%.
func TestHeadlineIsWhatTheModelSaw(t *testing.T) {
	sessions := recordedSessions(t)
	var names []string
	for name := range sessions {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return len(sessions[names[i]]) > len(sessions[names[j]]) })
	largest := map[string][]byte{}
	for _, name := range names[:min(8, len(names))] {
		largest[name] = sessions[name]
	}
	for _, c := range []struct {
		name           string
		sessions       map[string][]byte
		mean, worstMax float64
	}{
		{"the 8 largest sessions", largest, 0.03, 0.10},
		{"every session", sessions, 0.03, 0.20},
	} {
		points := requestPoints(t, c.sessions, 10)
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
		t.Logf("%s, %d request points: mean |error| %.2f%%, worst %+.2f%% (%s)", c.name, len(points), 100*mean, 100*worst, worstAt)
		if mean > c.mean || math.Abs(worst) > c.worstMax {
			t.Errorf("%s: headline off the recorded size: mean |error| %.2f%% (at most %.0f%%), worst %+.2f%% (at most %.0f%%): %s",
				c.name, 100*mean, 100*c.mean, 100*worst, 100*c.worstMax, worstAt)
		}
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
//
// The quick loop edits 16 sessions spread over their names, CTXKIT_LONG=1 every one.
func TestEditedCountsWhatItSaved(t *testing.T) {
	sessions := quickSessions(recordedSessions(t), 16)
	store := t.TempDir()
	tiers := []tierRun{
		{"ctx-persist", persist.Main, []string{"--threshold", "2000", "--store", store}},
		{"ctx-budget", budget.Main, []string{"--cap", "2000"}},
		{"ctx-snip", snip.Main, []string{"--window", "20k", "--idle", "0", "--repay", "0", "--clear-at-least", "0", "--store", store}},
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

// TestTiersActAtTheirTrigger: each tier that a utilization triggers acts on a session whose
// recorded prompt size fills its window halfway between its trigger and full (ctx-snip: 80%
// of the window, over its 60%), and leaves the session as it is when that size fills 30%.
// Acting is the trigger firing; most of those sessions must be edited too.
// Counted from the file alone, every session looked a third of its size: snip's trigger
// fired at a real 154K-312K tokens of a 200K window.
func TestTiersActAtTheirTrigger(t *testing.T) {
	sessions := recordedSessions(t)
	var names []string
	for name, data := range sessions {
		if tr, _ := transcript.Parse(data, transcript.Options{}); len(tr.Messages) >= 20 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	tiers := []struct {
		tierRun
		trigger float64
	}{
		// A single document: whether a clearing repays the prompt cache is the loop's test
		// (ctx-replay), not the trigger's.
		{tierRun{"ctx-snip", snip.Main, []string{"--idle", "0", "--repay", "0", "--clear-at-least", "0", "--store", t.TempDir()}}, 0.60},
		{tierRun{"ctx-summarize", summarize.Main, nil}, 0.80},
		{tierRun{"ctx-trim", trim.Main, nil}, 0.95},
	}
	for _, tier := range tiers {
		t.Run(tier.name, func(t *testing.T) {
			fires, edited := 0, 0
			for _, name := range names {
				in := sessions[name]
				tr, _ := transcript.Parse(in, transcript.Options{})
				recorded := tr.Usage[len(tr.Usage)-1].Input
				for _, fill := range []float64{(tier.trigger + 1) / 2, 0.30} {
					window := strconv.Itoa(int(math.Ceil(float64(recorded) / fill)))
					var stdout, stderr bytes.Buffer
					args := append(append([]string{"--stats", "--window", window, "--reserve", "0"}, tier.flags...), "-")
					if code := tier.main(args, bytes.NewReader(in), &stdout, &stderr, noEnv); code != 0 {
						t.Fatalf("%s %v on %s: exit %d: %s", tier.name, args, name, code, stderr.String())
					}
					var st struct {
						Trigger string `json:"trigger"`
						Items   int    `json:"items"`
					}
					if err := json.Unmarshal(lastLine(stderr.Bytes()), &st); err != nil {
						t.Fatalf("%s on %s: stats: %v: %s", tier.name, name, err, stderr.String())
					}
					fired := !strings.HasPrefix(st.Trigger, "below")
					switch {
					case fill > 0.5 && !fired:
						t.Errorf("%s on %s, recorded %d = %.1f%% of --window %s: did not act (trigger %q)",
							tier.name, filepath.Base(name), recorded, 100*fill, window, st.Trigger)
					case fill > 0.5:
						fires++
						if st.Items > 0 {
							edited++
						}
					case fired || !bytes.Equal(stdout.Bytes(), in):
						t.Errorf("%s on %s, recorded %d = 30%% of --window %s: acted (trigger %q)", tier.name, filepath.Base(name), recorded, window, st.Trigger)
					}
				}
			}
			// Acting is deciding to: a summary that would not be smaller than the few
			// messages outside --keep is not written (a session whose prompt is mostly
			// the hidden part), which the tier says.
			t.Logf("%s acted on %d of %d sessions at %.1f%% (edited %d), on none at 30%%", tier.name, fires, len(names), 50*(tier.trigger+1), edited)
			if edited < fires*3/4 {
				t.Errorf("%s edited %d of the %d sessions it acted on", tier.name, edited, fires)
			}
		})
	}
}
