package calibrate

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/internal/tokens"
)

// The settings of the fit. They are fixed, not tuned on the held-out sessions.
const (
	// HuberK is Huber's constant, in robust standard deviations: the usual 1.345 (95%
	// efficiency when the errors are normal).
	HuberK = 1.345
	// MinScale: an interval's residual is measured in units of √max(truth, MinScale)
	// tokens, the spread of a count of that size, so that small intervals (a short reply
	// and its result: tens of tokens) neither dominate the fit nor vanish from it.
	MinScale = 50
	// MinTruth: the per-interval error figures are of intervals of at least this many
	// true tokens; below it, the few tokens of framing and reminders dominate the ratio.
	MinTruth = 500
	// CJKPrior is the price of a CJK character, in every family. The corpus holds no CJK
	// text, so it cannot be fitted; about one token a character is what BPE vocabularies
	// of this size give Chinese and Japanese text (o200k_base: 0.8-1.2), and public
	// count_tokens measurements of Opus 4.6 against 4.7 found CJK text unchanged by 4.7's
	// new tokenizer, so it is not scaled with the rest.
	CJKPrior = 1.0
)

// fitted lists the classes whose price the main family's fit measures (CJK is the prior).
var fitted = []tokens.ClaudeClass{tokens.ClassLetters, tokens.ClassDigits, tokens.ClassPunct, tokens.ClassSpaces, tokens.ClassNewlines, tokens.ClassOther, tokens.ClassAstral}

// Fit is a fit of the Claude estimate.
type Fit struct {
	Families []tokens.ClaudeFamily // the prices, main family first, in tokens.ClaudeFamilies order
	Framing  Framing
	// Tool is the fitted price of a tool call block and of a tool result block beyond
	// their text, unrounded, as each family's fit found it (measure adds the main
	// family's, Framing.ToolCall and Framing.ToolResult).
	Tool []float64
	// Scale is each family's prices over the main family's (1 for the main family):
	// families other than the main one are fitted as a scale of it.
	Scale []float64
	// Level is the level factor in each family's prices: the main family's, for every
	// family (see fitScale); OwnLevel is the one a family's own intervals would give.
	Level, OwnLevel []float64
	N               []int // the intervals each family was fitted on
	// Sensitivity is the fit of the tool blocks' price with the message framing fixed at
	// other values (the data cannot tell the two apart, see FitAll).
	Sensitivity []Sensitivity
	// Own is the main family's fit repeated on each other family's own intervals, per
	// class, over the main family's prices: how far a scale is from the family's own
	// prices (NaN for a class its data does not price).
	Own [][tokens.NumClaudeClasses]float64
}

// Sensitivity is the fit with the message framing fixed at Message.
type Sensitivity struct {
	Message int
	Tool    float64 // the fitted price of a tool call or result block
	MeanAbs float64 // the mean absolute error on the training intervals (≥ MinTruth)
}

// FitAll fits every family on the training intervals of ivs (not held out, not skipped),
// with the framing of a message fixed at message tokens.
//
// The main family is fitted on its own: the truth, less what the interval's images and
// redacted thinking cost and the message framing, against the interval's characters of
// each class and its tool calls and results, robustly (Robust), then levelled (Level).
// A tool call block and a tool result block are fitted as one price, each: every
// interval holds each call with its result (the reply and the results that answer it),
// so only their sum is measured. The message framing is not fitted: nearly every
// interval is one reply and one result message per call, so messages move with the tool
// blocks and the data cannot tell their prices apart (see Sensitivity).
//
// Each other family is fitted as a scale of the main family's prices on its own intervals
// (see fitScale): one session's worth of Opus 4.7 is too little to price eight classes
// apart (Own shows how its own fit differs).
func FitAll(ivs []Interval, message int) (*Fit, error) {
	fams := tokens.ClaudeFamilies()
	by := make([][]*Interval, len(fams))
	for i := range fams {
		by[i] = Select(ivs, i, false)
	}
	for i, ivs := range by {
		if len(ivs) < 10 {
			return nil, fmt.Errorf("family %s: %d intervals to fit, want at least 10", fams[i].Name, len(ivs))
		}
	}
	f := &Fit{Families: make([]tokens.ClaudeFamily, len(fams)), Scale: make([]float64, len(fams)),
		Level: make([]float64, len(fams)), OwnLevel: make([]float64, len(fams)), N: make([]int, len(fams))}
	main, tool, level := fitMain(by[0], message)
	f.Families[0] = tokens.ClaudeFamily{Name: fams[0].Name, Coef: main}
	f.Scale[0], f.Level[0], f.OwnLevel[0], f.N[0] = 1, level, level, len(by[0])
	f.Tool = make([]float64, len(fams))
	f.Tool[0] = tool
	f.Framing = Framing{Message: message, ToolCall: int(math.Round(tool)), ToolResult: int(math.Round(tool))}
	for _, m := range []int{0, 3, 6, 10} {
		_, p, _ := fitMain(by[0], m)
		f.Sensitivity = append(f.Sensitivity, Sensitivity{Message: m, Tool: p, MeanAbs: sensitivityError(by[0], m)})
	}
	f.Own = make([][tokens.NumClaudeClasses]float64, len(fams))
	for i := 1; i < len(fams); i++ {
		s, tool, ownLevel := fitScale(by[i], main, f.Framing)
		f.Tool[i] = tool
		var coef tokens.ClaudeCoefficients
		for k := range coef {
			coef[k] = s * main[k]
		}
		coef[tokens.ClassCJK] = CJKPrior
		f.Families[i] = tokens.ClaudeFamily{Name: fams[i].Name, Coef: coef}
		f.Scale[i], f.Level[i], f.OwnLevel[i], f.N[i] = s, level, ownLevel, len(by[i])
		own, _, _ := fitMain(by[i], message)
		for k := range own {
			f.Own[i][k] = math.NaN()
			if k != int(tokens.ClassCJK) && classTotal(by[i], tokens.ClaudeClass(k)) > 0 {
				f.Own[i][k] = own[k] / main[k]
			}
		}
	}
	return f, nil
}

// Unlevelled is the families' prices without the level: the robust fit alone. (The CJK
// price, a prior, is not levelled.)
func (f *Fit) Unlevelled() []tokens.ClaudeFamily {
	out := make([]tokens.ClaudeFamily, len(f.Families))
	for i, fam := range f.Families {
		out[i] = fam
		for k := range fam.Coef {
			if tokens.ClaudeClass(k) != tokens.ClassCJK {
				out[i].Coef[k] /= f.Level[i]
			}
		}
	}
	return out
}

// fitMain fits a family's prices and the price of a tool block, levelled.
func fitMain(ivs []*Interval, message int) (coef tokens.ClaudeCoefficients, tool, level float64) {
	X, y, scale := make([][]float64, len(ivs)), make([]float64, len(ivs)), make([]float64, len(ivs))
	for i, iv := range ivs {
		row := make([]float64, 0, len(fitted)+1)
		for _, c := range fitted {
			row = append(row, float64(iv.Classes[c]))
		}
		X[i] = append(row, float64(iv.Calls+iv.Results))
		y[i] = float64(iv.Truth-iv.Known-message*iv.Messages) - CJKPrior*float64(iv.Classes[tokens.ClassCJK])
		scale[i] = math.Sqrt(max(float64(iv.Truth), MinScale))
	}
	beta := Robust(X, y, scale, HuberK)
	level = Level(X, y, beta)
	for j, c := range fitted {
		coef[c] = beta[j] * level
	}
	coef[tokens.ClassCJK] = CJKPrior
	return coef, beta[len(fitted)] * level, level
}

// sensitivityError is the mean relative error on ivs (≥ MinTruth) of the fit made with the
// message framing fixed at message, counting unrounded.
func sensitivityError(ivs []*Interval, message int) float64 {
	coef, tool, _ := fitMain(ivs, message)
	var rel []float64
	for _, iv := range ivs {
		if iv.Truth < MinTruth {
			continue
		}
		p := float64(iv.Known+message*iv.Messages) + tool*float64(iv.Calls+iv.Results)
		for k, n := range iv.Classes {
			p += coef[k] * float64(n)
		}
		rel = append(rel, math.Abs(p-float64(iv.Truth))/float64(iv.Truth))
	}
	return mean(rel)
}

// fitScale fits a family as a scale of the main family's prices, robustly, with a price
// of its own for a tool block (its tokenizer cuts the ids into more or fewer tokens;
// measure adds the main family's, the constants, but the scale must not absorb the
// difference); the message framing is fr's.
//
// The scale is not levelled again: the main family's prices carry the level already,
// which is a property of how Claude Code uses a model (what it adds without logging),
// learned from many sessions. A family fitted on one session would level on that
// session's events (Opus 4.7's: some 2,800 tokens at the second request of every
// subagent), and price its text by them. ownLevel is that level, for the report.
func fitScale(ivs []*Interval, main tokens.ClaudeCoefficients, fr Framing) (scale, tool, ownLevel float64) {
	X, y, sc := make([][]float64, len(ivs)), make([]float64, len(ivs)), make([]float64, len(ivs))
	for i, iv := range ivs {
		p := 0.0
		for k, n := range iv.Classes {
			p += main[k] * float64(n)
		}
		X[i] = []float64{p, float64(iv.Calls + iv.Results)}
		y[i] = float64(iv.Truth - iv.Known - fr.Message*iv.Messages)
		sc[i] = math.Sqrt(max(float64(iv.Truth), MinScale))
	}
	beta := Robust(X, y, sc, HuberK)
	return beta[0], beta[1], Level(X, y, beta)
}

func classTotal(ivs []*Interval, c tokens.ClaudeClass) int {
	n := 0
	for _, iv := range ivs {
		n += iv.Classes[c]
	}
	return n
}

// Stats are the errors of an estimate on a set of intervals.
type Stats struct {
	N    int // intervals
	N500 int // of them, intervals of at least MinTruth true tokens
	// MeanAbs, Median and P90 are of the relative error |estimate - truth| / truth of the
	// intervals of at least MinTruth tokens.
	MeanAbs, Median, P90 float64
	// Bias is Σ estimate / Σ truth over all the intervals: below 1, the estimate
	// undercounts the growth of the prompt.
	Bias float64
}

// Measure works out the errors of estimate on ivs.
func Measure(ivs []*Interval, estimate func(*Interval) int) Stats {
	var rel []float64
	se, st := 0, 0
	for _, iv := range ivs {
		e := estimate(iv)
		se += e
		st += iv.Truth
		if iv.Truth >= MinTruth {
			rel = append(rel, math.Abs(float64(e-iv.Truth))/float64(iv.Truth))
		}
	}
	s := Stats{N: len(ivs), N500: len(rel), MeanAbs: mean(rel), Median: quantile(rel, 0.5), P90: quantile(rel, 0.9)}
	if st > 0 {
		s.Bias = float64(se) / float64(st)
	}
	return s
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Select returns the intervals of a family (-1: every family) that are used (not
// skipped), held out or not.
func Select(ivs []Interval, family int, held bool) []*Interval {
	var out []*Interval
	for i := range ivs {
		iv := &ivs[i]
		if iv.Skip == "" && iv.Held == held && (family < 0 || iv.Family == family) {
			out = append(out, iv)
		}
	}
	return out
}

// Comparison is the old estimate and a fit's, side by side, on one family's intervals.
type Comparison struct {
	Family   string
	Old, New Stats
}

// Compare measures the old estimate and the prices and framing given on each family's
// intervals, held out or not.
func Compare(ivs []Interval, fams []tokens.ClaudeFamily, fr Framing, held bool) []Comparison {
	var out []Comparison
	for i, fam := range fams {
		sel := Select(ivs, i, held)
		c := tokens.NewClaudeCounter(fam.Coef)
		out = append(out, Comparison{
			Family: fam.Name,
			Old:    Measure(sel, (*Interval).Old),
			New:    Measure(sel, func(iv *Interval) int { return iv.Estimate(c, fr) }),
		})
	}
	return out
}

// ModelRatios is, per model, the median of truth / estimate over the used training
// intervals of at least MinTruth tokens, and over those of at least LargeTruth tokens: a
// model whose medians stray from its family's does not share its tokenizer. (Small
// intervals are mostly framing and unlogged reminders, which changed between Claude Code
// versions; large ones are mostly text.)
func ModelRatios(ivs []Interval, fams []tokens.ClaudeFamily, fr Framing) []ModelRatio {
	by := map[string]*ModelRatio{}
	var all, large = map[string][]float64{}, map[string][]float64{}
	for _, iv := range Select(ivs, -1, false) {
		if iv.Truth < MinTruth {
			continue
		}
		e := iv.Estimate(tokens.NewClaudeCounter(fams[iv.Family].Coef), fr)
		r := float64(iv.Truth) / float64(max(e, 1))
		all[iv.Model] = append(all[iv.Model], r)
		if iv.Truth >= LargeTruth {
			large[iv.Model] = append(large[iv.Model], r)
		}
		if by[iv.Model] == nil {
			by[iv.Model] = &ModelRatio{Model: iv.Model}
		}
	}
	var out []ModelRatio
	for m, mr := range by {
		mr.N, mr.Median = len(all[m]), quantile(all[m], 0.5)
		mr.NLarge, mr.MedianLarge = len(large[m]), quantile(large[m], 0.5)
		out = append(out, *mr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// LargeTruth is the least truth of a large interval (ModelRatios).
const LargeTruth = 4000

// ModelRatio is one line of ModelRatios.
type ModelRatio struct {
	Model               string
	N, NLarge           int
	Median, MedianLarge float64
}

// Skipped counts the intervals left out, by reason.
func Skipped(ivs []Interval) map[string]int {
	m := map[string]int{}
	for _, iv := range ivs {
		if iv.Skip != "" {
			m[iv.Skip]++
		}
	}
	return m
}

// GoSource renders the fit as internal/tokens/claude_table.go, with report (the error
// figures) as its comment.
func (f *Fit) GoSource(report string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./scripts/calibrate; DO NOT EDIT.\n\npackage tokens\n\n")
	b.WriteString("// claudeFamilies are the prices of the Claude estimate, fitted by scripts/calibrate on the\n")
	b.WriteString("// growth of the prompt between consecutive requests of real Claude Code sessions\n")
	b.WriteString("// (internal/calibrate says how). Tokens per character:\n//\n")
	for _, line := range strings.Split(strings.TrimRight(report, "\n"), "\n") {
		b.WriteString(strings.TrimRight("//\t"+line, " \t") + "\n")
	}
	b.WriteString("var claudeFamilies = [...]ClaudeFamily{\n")
	for i, fam := range f.Families {
		fmt.Fprintf(&b, "\t{Name: %q, Coef: ClaudeCoefficients{", fam.Name)
		for k, v := range fam.Coef {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "Class%s: %.4f", className(tokens.ClaudeClass(k)), v)
		}
		fmt.Fprintf(&b, "}}, // scale %.3f of the main family, level %.3f, %d intervals\n", f.Scale[i], f.Level[i], f.N[i])
	}
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, `// The tokens a tool_use block and a tool_result block each cost beyond their text (a
// call's input and tool name, a result's content), fitted as one price for both (%.1f):
// every recorded interval holds each call together with its result, so only their sum
// is measured. It pays for the id written in both, the wrapper the API renders each in,
// and, on average, the reminders Claude Code appends to some results without logging
// them. The prices are the main family's; Opus 4.7's tokenizer makes them larger (see
// above), which the constants do not follow.
const (
	AnthropicToolCallOverhead   = %d
	AnthropicToolResultOverhead = %d
)
`, f.Tool[0], f.Framing.ToolCall, f.Framing.ToolResult)
	return format.Source(b.Bytes())
}

func className(c tokens.ClaudeClass) string {
	switch c {
	case tokens.ClassCJK:
		return "CJK"
	}
	s := c.String()
	return strings.ToUpper(s[:1]) + s[1:]
}
