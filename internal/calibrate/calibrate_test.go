package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
)

// session is a Claude Code log of five requests: Sonnet 4.5 reads a file and answers;
// the user switches to Opus 4.7, whose thinking is stored empty; it loads a deferred
// tool and finishes.
var session = strings.Join([]string{
	`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"Fix the bug in main.go"}}`,
	`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"main.go"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":15000,"cache_creation_input_tokens":0,"output_tokens":20}}}`,
	`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"package main\n\nfunc main() {}\n"}]}}`,
	`{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Done: main.go is fine."}],"usage":{"input_tokens":3,"cache_read_input_tokens":15010,"cache_creation_input_tokens":97,"output_tokens":9}}}`,
	`{"type":"user","uuid":"u3","parentUuid":"a2","message":{"role":"user","content":"Now search the web for it."}}`,
	`{"type":"assistant","uuid":"a3","parentUuid":"u3","message":{"id":"m3","role":"assistant","model":"claude-opus-4-7","content":[{"type":"thinking","thinking":"","signature":"c2lnbmF0dXJl"},{"type":"tool_use","id":"toolu_02","name":"ToolSearch","input":{"query":"select:WebSearch"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":15200,"cache_creation_input_tokens":0,"output_tokens":300}}}`,
	`{"type":"user","uuid":"u4","parentUuid":"a3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"tool_reference","tool_name":"WebSearch"}]}]}}`,
	`{"type":"assistant","uuid":"a4","parentUuid":"u4","message":{"id":"m4","role":"assistant","model":"claude-opus-4-7","content":[{"type":"tool_use","id":"toolu_03","name":"WebSearch","input":{"query":"main.go bug"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":15600,"cache_creation_input_tokens":0,"output_tokens":40}}}`,
	`{"type":"user","uuid":"u5","parentUuid":"a4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_03","content":"No results."}]}}`,
	`{"type":"assistant","uuid":"a5","parentUuid":"u5","message":{"id":"m5","role":"assistant","model":"claude-opus-4-7","content":[{"type":"text","text":"Nothing found."}],"usage":{"input_tokens":5,"cache_read_input_tokens":17200,"cache_creation_input_tokens":0,"output_tokens":5}}}`,
}, "\n") + "\n"

func TestIntervals(t *testing.T) {
	ivs := Intervals([]byte(session), "s.jsonl")
	want := []struct {
		model                string
		truth                int
		msgs, calls, results int
		skip                 string
	}{
		{"claude-sonnet-4-5-20250929", 100, 2, 1, 1, ""},
		{"claude-opus-4-7", 95, 2, 0, 0, SkipModelChanged},
		{"claude-opus-4-7", 400, 2, 1, 1, SkipHiddenThinking},
		{"claude-opus-4-7", 1600, 2, 1, 1, ""},
	}
	if len(ivs) != len(want) {
		t.Fatalf("%d intervals, want %d", len(ivs), len(want))
	}
	for i, w := range want {
		iv := &ivs[i]
		if iv.Model != w.model || iv.Truth != w.truth || iv.Messages != w.msgs || iv.Calls != w.calls || iv.Results != w.results || iv.Skip != w.skip {
			t.Errorf("interval %d: %s truth %d, %d messages, %d calls, %d results, skip %q; want %+v",
				i, iv.Model, iv.Truth, iv.Messages, iv.Calls, iv.Results, iv.Skip, w)
		}
		if wantFam := tokens.ClaudeFamilyOf(w.model).Name; tokens.ClaudeFamilies()[iv.Family].Name != wantFam {
			t.Errorf("interval %d: family %d, want %s", i, iv.Family, wantFam)
		}
	}
	// With its thinking recorded, the third interval is left out for the tool schema its
	// result loads.
	ivs2 := Intervals([]byte(strings.Replace(session, `"thinking":""`, `"thinking":"Let me look."`, 1)), "s.jsonl")
	if got := ivs2[2].Skip; got != SkipDeferredTools {
		t.Errorf("a tool_reference result: skip %q, want %q", got, SkipDeferredTools)
	}

	// The first interval: Read's call and its result, counted as measure counts them.
	c := tokens.Claude("")
	iv := &ivs[0]
	fr := Framing{Message: 3, ToolCall: 40, ToolResult: 50}
	text := c.Count(`{"file_path":"main.go"}`) + c.Count("Read") + c.Count("package main\n\nfunc main() {}\n")
	if got, want := iv.Estimate(c, fr), 2*3+40+50+text; got != want {
		t.Errorf("Estimate = %d, want %d", got, want)
	}
	var n [tokens.NumClaudeClasses]int
	for _, s := range []string{`{"file_path":"main.go"}`, "Read", "package main\n\nfunc main() {}\n"} {
		tokens.ClaudeClasses(s, &n)
	}
	if iv.Classes != n {
		t.Errorf("Classes = %v, want %v", iv.Classes, n)
	}
	est, _ := tokens.New("estimate")
	if got, want := iv.Old(), 2*3+est.Count(`{"file_path":"main.go"}`)+est.Count("Read")+est.Count("package main\n\nfunc main() {}\n"); got != want {
		t.Errorf("Old = %d, want %d", got, want)
	}
}

func TestHeld(t *testing.T) {
	held := 0
	for i := range 3000 {
		name := fmt.Sprintf("dir/%08x-session.jsonl", i*7919)
		if Held(name) != Held("other/"+filepath.Base(name)) {
			t.Fatalf("Held(%q) depends on the folder", name)
		}
		if Held(name) {
			held++
		}
	}
	if held < 900 || held > 1100 {
		t.Errorf("%d of 3000 held out, want about a third", held)
	}
}

// TestRobust fits data with a known answer, a tenth of it spoiled by large positive
// errors (what Claude Code's unlogged reminders do to the truth): the robust fit finds
// the answer where least squares would not, and keeps a price that the data pushes below
// zero at zero.
func TestRobust(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	want := []float64{0.25, 1.0, 0.6, 40}
	var X [][]float64
	var y, scale []float64
	for i := range 400 {
		row := []float64{float64(rng.IntN(20000)), float64(rng.IntN(2000)), float64(rng.IntN(5000)), float64(1 + rng.IntN(3))}
		v := dot(row, want)
		v += rng.NormFloat64() * math.Sqrt(v)
		if i%10 == 0 {
			v += 2000 + float64(rng.IntN(5000))
		}
		X = append(X, row)
		y = append(y, v)
		scale = append(scale, math.Sqrt(max(v, 50)))
	}
	got := Robust(X, y, scale, HuberK)
	for j := range want {
		if math.Abs(got[j]-want[j]) > 0.05*want[j]+0.02 {
			t.Errorf("β[%d] = %.4f, want %.4f (all: %.4f)", j, got[j], want[j], got)
		}
	}
	if l := Level(X, y, got); l < 1.02 {
		t.Errorf("level %.3f: the spoiled rows should lift the sum above the robust fit", l)
	}

	// A column whose unconstrained price is negative stays at zero.
	for i := range y {
		X[i] = append(X[i], float64(rng.IntN(100)))
		y[i] -= 3 * X[i][4]
	}
	got = Robust(X, y, scale, HuberK)
	if got[4] != 0 {
		t.Errorf("a price the data wants negative: %.4f, want 0", got[4])
	}
}

// corpus is the shared corpus beside the repository (DESIGN §7), or skips.
func corpus(t *testing.T) []Interval {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus not found at %s", dir)
	}
	ivs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ivs
}

// TestTableIsTheFit checks that internal/tokens holds what scripts/calibrate prints for
// the corpus: prices and tool framing. Rerun the script when this fails after a change
// to the corpus, the classes or the fit.
func TestTableIsTheFit(t *testing.T) {
	ivs := corpus(t)
	fit, err := FitAll(ivs, tokens.MessageOverhead("anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	for i, fam := range tokens.ClaudeFamilies() {
		for k, v := range fam.Coef {
			if math.Abs(v-fit.Families[i].Coef[k]) > 1e-4 {
				t.Errorf("%s %s: table %.4f, fit %.4f: rerun go run ./scripts/calibrate", fam.Name, tokens.ClaudeClass(k), v, fit.Families[i].Coef[k])
			}
		}
	}
	if fit.Framing != Current() {
		t.Errorf("framing: tokens has %+v, the fit %+v", Current(), fit.Framing)
	}
}

// TestEstimateIsLinear checks that the intervals' classes are what Estimate counts: the
// linear price of the classes and Estimate agree but for rounding (a piece of text at a
// time). A walk of the blocks that missed or doubled a text would fail it.
func TestEstimateIsLinear(t *testing.T) {
	ivs := corpus(t)
	fam := tokens.ClaudeFamilies()[0]
	c := tokens.NewClaudeCounter(fam.Coef)
	fr := Current()
	for i := range ivs {
		iv := &ivs[i]
		lin := float64(iv.Known + fr.Message*iv.Messages + fr.ToolCall*iv.Calls + fr.ToolResult*iv.Results)
		for k, n := range iv.Classes {
			lin += fam.Coef[k] * float64(n)
		}
		pieces := 0
		for mi := iv.from; mi < iv.to; mi++ {
			for _, b := range iv.t.Messages[mi].Blocks {
				pieces += 2 + len(b.Parts) // the body, a call's name, the parts
			}
		}
		if d := math.Abs(float64(iv.Estimate(c, fr)) - lin); d > float64(pieces) {
			t.Errorf("%s interval at message %d: Estimate %d, linear %.1f, %d pieces", iv.Source, iv.from, iv.Estimate(c, fr), lin, pieces)
		}
	}
}
