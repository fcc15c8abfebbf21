package ctxkit_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/heldout"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Issue 18's measure of ctx-budget's cut: real command outputs with failures planted in
// them (testdata/outputs), each cut at --cap 8000 and --cap 2000 characters, by what its
// lines say and, as the baseline, at head and tail (the first release's cut, without
// normalizing). A planted line is kept when it is a whole line of the cut text, read as a
// terminal shows it (plainLines).

// cutResult runs ctx-budget's plan on a one-call conversation whose result is out, and
// returns the result's text after the cut.
func cutResult(t testing.TB, tool, cmd string, out []byte, o budget.Options) string {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "run it"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": tool, "input": map[string]any{"command": cmd}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": string(out)}}},
		map[string]any{"role": "assistant", "content": "I see."},
		map[string]any{"role": "user", "content": "go on"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Parse(doc, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	edits, _ := budget.Plan(tr, o)
	res, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(res, &back); err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(back.Messages[2].Content, &blocks); err != nil {
		t.Fatal(err)
	}
	return blocks[0].Content
}

// cuts are the two cuts compared: by what lines say (ctx-budget's default) and at head and
// tail without normalizing (the baseline).
func cuts(cap int) (byLines, headTail budget.Options) {
	byLines = budget.Defaults()
	byLines.Cap, byLines.Counter = budget.Chars(cap), tokens.Claude("")
	headTail = byLines
	headTail.HeadTail, headTail.Normalize = true, false
	return byLines, headTail
}

// keptShare is the share of want that are whole lines of text's plain view, and the lines
// missing.
func keptShare(text string, want []string) (kept int, missing []string) {
	have := map[string]bool{}
	for _, l := range plainLines([]byte(text)) {
		have[l] = true
	}
	for _, w := range want {
		if have[w] {
			kept++
		} else {
			missing = append(missing, w)
		}
	}
	return kept, missing
}

// TestCutKeepsWhatFailed holds the cut by lines to what it achieves on the set: every
// planted line kept at --cap 8000, and all but one at --cap 2000 (where a case's planted
// lines alone may be most of what head and tail keeps: pytest -v's 18 take 538 of the 720
// tokens head and tail keeps, and held to no more tokens than that, the cut leaves one
// out), against 65% and 40% at head and tail; and on no case more tokens than head and
// tail at the same cap.
func TestCutKeepsWhatFailed(t *testing.T) {
	cases := loadOutputs(t, outputsDir)
	counter := tokens.Claude("")
	// Normalizing alone on the set: the colour, spinners and redraws of real tools.
	norm := budget.Defaults()
	norm.Cap, norm.Counter = budget.Chars(0), counter
	raw, normalized := 0, 0
	for _, c := range cases {
		raw += counter.Count(string(c.Out))
		normalized += counter.Count(cutResult(t, "Bash", c.Cmd, c.Out, norm))
	}
	t.Logf("normalizing the set: %d of %d tokens saved (%.1f%%)", raw-normalized, raw, 100*(1-float64(normalized)/float64(raw)))
	if normalized >= raw {
		t.Errorf("normalizing saved nothing on the set: %d → %d tokens", raw, normalized)
	}
	floor := map[int]float64{8000: 1.0, 2000: 0.99}
	for _, cap := range []int{8000, 2000} {
		byLines, headTail := cuts(cap)
		wanted, keptLines, keptHT := 0, 0, 0
		tokLines, tokHT := 0, 0
		for _, c := range cases {
			a := cutResult(t, "Bash", c.Cmd, c.Out, byLines)
			b := cutResult(t, "Bash", c.Cmd, c.Out, headTail)
			if again := cutResult(t, "Bash", c.Cmd, []byte(a), byLines); again != a {
				t.Errorf("cap %d, %s: a second cut changes the first", cap, c.Name)
			}
			tighter, _ := cuts(cap / 2)
			if half := cutResult(t, "Bash", c.Cmd, []byte(a), tighter); !strings.Contains(half, "characters in ") && strings.Contains(a, "characters in ") {
				t.Errorf("cap %d, %s: cut again at half the cap, the cut by lines lost its form", cap, c.Name)
			} else if strings.Count(half, "[ctx-budget: cut ") != 1 {
				t.Errorf("cap %d, %s: cut again at half the cap, %d markers", cap, c.Name, strings.Count(half, "[ctx-budget: cut "))
			}
			ka, missing := keptShare(a, c.Keep)
			kb, _ := keptShare(b, c.Keep)
			wanted += len(c.Keep)
			keptLines += ka
			keptHT += kb
			ta, tb := counter.Count(a), counter.Count(b)
			tokLines += ta
			tokHT += tb
			lost := ""
			if len(missing) > 0 {
				lost = fmt.Sprintf("; lost %q", missing[0])
			}
			t.Logf("cap %d %-16s keeps %2d/%2d planted lines (head and tail %2d), %5d tokens (head and tail %5d)%s", cap, c.Name, ka, len(c.Keep), kb, ta, tb, lost)
			if ta > tb {
				t.Errorf("cap %d, %s: %d tokens, head and tail %d", cap, c.Name, ta, tb)
			}
		}
		share := float64(keptLines) / float64(wanted)
		t.Logf("cap %d: by lines %d of %d planted lines kept (%.1f%%), head and tail %d (%.1f%%); tokens %d, head and tail %d",
			cap, keptLines, wanted, 100*share, keptHT, 100*float64(keptHT)/float64(wanted), tokLines, tokHT)
		if share < floor[cap] || keptLines <= keptHT {
			t.Errorf("cap %d: %.1f%% of the planted lines kept, at least %.0f%% wanted (head and tail %d of %d)", cap, 100*share, 100*floor[cap], keptHT, wanted)
		}
		if tokLines > tokHT {
			t.Errorf("cap %d: %d tokens in all, head and tail %d", cap, tokLines, tokHT)
		}
	}
}

// corpusResults are the text of every tool result of the corpus (Claude Code, tau-bench
// and SWE-agent files), with the tool that gave it; it skips without the corpus.
func corpusResults(t *testing.T) (results []string, tools []string) {
	t.Helper()
	files := invariant.CorpusFiles(t)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{Name: f})
		if err != nil {
			continue // a file of the corpus that is not a conversation (SOURCES, a log of runs)
		}
		names := map[transcript.Ref]string{}
		for _, p := range tr.Pairs() {
			if p.Call != transcript.None && p.Result != transcript.None {
				names[p.Result] = tr.Block(p.Call).ToolName
			}
		}
		for mi := range tr.Messages {
			for bi := range tr.Messages[mi].Blocks {
				b := &tr.Messages[mi].Blocks[bi]
				if b.Kind != transcript.ToolResult || b.BodyJSON || b.Body.IsZero() {
					continue
				}
				results = append(results, tr.BodyText(b))
				tools = append(tools, names[transcript.Ref{Message: mi, Block: bi}])
			}
		}
	}
	if len(results) == 0 {
		t.Skip("no tool results in the corpus")
	}
	return results, tools
}

// TestCutOnCorpusResults: on the tool results of the corpus over 10,000 characters, the cut
// by lines at both caps is no more tokens than head and tail, on each result; and
// normalizing saves a share of all the corpus's tool-result tokens, reported.
func TestCutOnCorpusResults(t *testing.T) {
	results, tools := corpusResults(t)
	counter := tokens.Claude("")
	big := 0
	for _, cap := range []int{8000, 2000} {
		byLines, headTail := cuts(cap)
		tokLines, tokHT := 0, 0
		for i, r := range results {
			if len([]rune(r)) <= 10_000 {
				continue
			}
			if cap == 8000 {
				big++
			}
			a := cutResult(t, tools[i], "", []byte(r), byLines)
			b := cutResult(t, tools[i], "", []byte(r), headTail)
			ta, tb := counter.Count(a), counter.Count(b)
			tokLines += ta
			tokHT += tb
			if ta > tb {
				t.Errorf("cap %d, result %d (%s, %d characters): %d tokens, head and tail %d", cap, i, tools[i], len(r), ta, tb)
			}
		}
		t.Logf("cap %d: %d results over 10,000 characters: by lines %d tokens, head and tail %d", cap, big, tokLines, tokHT)
		if tokLines > tokHT {
			t.Errorf("cap %d: %d tokens in all, head and tail %d", cap, tokLines, tokHT)
		}
	}
	// Normalizing alone, on every result (no cap).
	o := budget.Defaults()
	o.Cap, o.Counter = budget.Chars(0), counter
	before, after, changed := 0, 0, 0
	for i, r := range results {
		n := cutResult(t, tools[i], "", []byte(r), o)
		tb, ta := counter.Count(r), counter.Count(n)
		before += tb
		after += ta
		if n != r {
			changed++
		}
	}
	share := 1 - float64(after)/float64(before)
	t.Logf("normalizing: %d of %d results changed, %d of %d tokens saved (%.2f%%)", changed, len(results), before-after, before, 100*share)
	if after > before || math.IsNaN(share) {
		t.Errorf("normalizing raised the tokens: %d → %d", before, after)
	}
	if changed == 0 {
		t.Error("normalizing changed no result of the corpus")
	}
}

// realGoal is what the cut by lines must keep of the test half of the real-outputs set
// (issue 38): the share of its .keep lines at each cap.
var realGoal = map[int]float64{8000: 0.95, 2000: 0.85}

// realBelowHeadTail are the test files on which the cut by lines keeps fewer lines than
// head and tail at a cap, "cap name": none since a JSON document is read as data and
// failing tests are named from both ends of their list (issue 38's goal). The test fails
// on any other file below head and tail, and on a file listed here that no longer is, so
// the list only shrinks. Nothing was tuned on them (they are test files).
var realBelowHeadTail = map[string]bool{}

// TestCutOnRealOutputs measures the cut on testdata/real-outputs: real programs run on real
// code, with faults planted and without (scripts/gen-real-outputs.sh), the lines a
// developer needs written by rules that never saw a cut (scripts/markkeep). The figures
// are the test half's (heldout.Test on the case's file name), per file and in total, at
// --cap 8000 and 2000, beside head and tail of the same cap; the training half's totals are
// logged for tuning. A case is measured at a cap only when its output is over it (under
// it nothing is cut). It fails below the goals of realGoal, and on any single test file
// where the cut keeps fewer lines than head and tail.
func TestCutOnRealOutputs(t *testing.T) {
	cases := loadOutputs(t, realOutputsDir)
	for _, cap := range []int{8000, 2000} {
		byLines, headTail := cuts(cap)
		var half [2]struct{ wanted, kept, keptHT, files int }
		for _, c := range cases {
			if len([]rune(string(c.Out))) <= cap {
				continue
			}
			test := heldout.Test(c.Name + ".out")
			a := cutResult(t, "Bash", c.Cmd, c.Out, byLines)
			b := cutResult(t, "Bash", c.Cmd, c.Out, headTail)
			ka, missing := keptShare(a, c.Keep)
			kb, _ := keptShare(b, c.Keep)
			h := &half[0]
			if test {
				h = &half[1]
			}
			h.wanted += len(c.Keep)
			h.kept += ka
			h.keptHT += kb
			h.files++
			lost := ""
			if len(missing) > 0 {
				lost = fmt.Sprintf("; lost %q", missing[0])
			}
			half := "training"
			if test {
				half = "test"
			}
			t.Logf("%s cap %d %-32s %2d/%2d (head and tail %2d)%s", half, cap, c.Name, ka, len(c.Keep), kb, lost)
			if known := realBelowHeadTail[fmt.Sprint(cap, " ", c.Name)]; test && ka < kb && !known {
				t.Errorf("cap %d, %s: %d of %d lines kept, head and tail %d", cap, c.Name, ka, len(c.Keep), kb)
			} else if test && known && ka >= kb {
				t.Errorf("cap %d, %s: %d of %d lines kept, head and tail %d: no longer below, take it off realBelowHeadTail", cap, c.Name, ka, len(c.Keep), kb)
			}
		}
		for k, name := range []string{"training", "test"} {
			h := half[k]
			t.Logf("%s half, cap %d: %d files, by lines %d of %d (%.1f%%), head and tail %d (%.1f%%)", name, cap, h.files,
				h.kept, h.wanted, 100*float64(h.kept)/float64(h.wanted), h.keptHT, 100*float64(h.keptHT)/float64(h.wanted))
		}
		if h := half[1]; float64(h.kept) < realGoal[cap]*float64(h.wanted) {
			t.Errorf("cap %d, test half: %d of %d lines kept (%.1f%%), goal %.0f%%", cap, h.kept, h.wanted, 100*float64(h.kept)/float64(h.wanted), 100*realGoal[cap])
		}
	}
}
