package calibrate

import (
	"math"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Claude Code 2.x stores some thinking empty: the block keeps only its signature, the
// encrypted thinking the API checks when the block is sent back, yet the model reads the
// thinking and the prompt bills it. measure prices such a block from its signature's size
// (tokens.SignatureRate): rate × (bytes - header), a rate per model family and a header
// (the bytes of a signature that carry no thinking) common to all. This file fits them on
// the sessions of the corpus and measures their error.
//
// The data is of two kinds:
//
//   - Blocks whose thinking is recorded with its signature (Sonnet 4 and 4.5, Opus 4.1
//     and 4.6, Claude Code 1.0 to 2.1.42): what measure counts for the text (the family's
//     estimate) against the signature's size. They fit the header and the main family's
//     rate: a block stored empty costs what its text would have counted.
//   - Intervals (consecutive requests, see Interval) whose reply's thinking is stored
//     empty (Opus 4.7, Claude Code 2.1.114): the prompt's growth the file records less our
//     count of the rest of the interval, against the bytes of its signatures beyond the
//     header. They fit the rate of a family that stores its thinking empty, and are the
//     only evidence there is of what such a block costs when it is sent back.

// SignatureSample is one data point of the fit: a thinking block recorded with its text,
// or an interval whose thinking is stored empty.
type SignatureSample struct {
	Source string // the session file, relative to the corpus folder
	Model  string
	Family int  // in tokens.ClaudeFamilies order
	Held   bool // the session is held out of the fit (Held)
	// Empty says the thinking is stored empty: Tokens is then the interval's truth less our
	// estimate of its other blocks, and may hold what the file does not (reminders).
	// Output marks a cross-check that is not fitted on: a reply whose thinking is stored
	// empty, its Tokens its recorded output_tokens less our count of its other blocks
	// (what the thinking cost when it was written, not when it was read back).
	Empty, Output bool
	// Signatures are the sizes, in bytes, of the thinking blocks' signatures.
	Signatures []int
	// Tokens is what the thinking costs: its text, as measure counts it, or, stored empty,
	// what the interval's truth leaves of it.
	Tokens float64
}

// Beyond is the bytes of the sample's signatures beyond header each.
func (s *SignatureSample) Beyond(header float64) float64 {
	n := 0.0
	for _, b := range s.Signatures {
		n += max(0, float64(b)-header)
	}
	return n
}

// SignatureSamples reads every Claude Code session (*.jsonl) under dir into samples, in
// file order.
func SignatureSamples(dir string) ([]SignatureSample, error) {
	var out []SignatureSample
	_, err := eachSession(dir, func(data []byte, name string) { out = append(out, signatureSamples(data, name)...) })
	return out, err
}

func signatureSamples(data []byte, name string) []SignatureSample {
	t, err := transcript.Parse(data, transcript.Options{})
	if err != nil || t.Format != transcript.ClaudeCode {
		return nil
	}
	var out []SignatureSample
	held := Held(name)
	// Blocks recorded with their text.
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Role != "assistant" {
			continue
		}
		model := gjson.Get(t.Slice(m.Lines[0]), "message.model").String()
		c := tokens.Claude(model)
		for _, l := range m.Lines {
			gjson.Get(t.Slice(l), "message.content").ForEach(func(_, b gjson.Result) bool {
				sig := b.Get("signature").String()
				if b.Get("type").String() == "thinking" && sig != "" && b.Get("thinking").String() != "" {
					out = append(out, SignatureSample{Source: name, Model: model, Family: familyIndex(model), Held: held,
						Signatures: []int{len(sig)}, Tokens: float64(c.Count(b.Get("thinking").String()))})
				}
				return true
			})
		}
	}
	// Replies whose thinking is stored empty: what it cost as output.
	for mi := range t.Messages {
		m := &t.Messages[mi]
		if m.Role != "assistant" {
			continue
		}
		last := t.Slice(m.Lines[len(m.Lines)-1])
		model := gjson.Get(last, "message.model").String()
		c := tokens.Claude(model)
		s := SignatureSample{Source: name, Model: model, Family: familyIndex(model), Held: held, Empty: true, Output: true,
			Tokens: float64(gjson.Get(last, "message.usage.output_tokens").Int())}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Kind == transcript.Thinking && t.BodyLen(b) == 0 {
				continue
			}
			s.Tokens -= float64(measure.BlockTokens(t, b, c))
		}
		for _, l := range m.Lines {
			gjson.Get(t.Slice(l), "message.content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").String() == "thinking" && b.Get("thinking").String() == "" && b.Get("signature").String() != "" {
					s.Signatures = append(s.Signatures, len(b.Get("signature").String()))
				}
				return true
			})
		}
		if len(s.Signatures) > 0 {
			out = append(out, s)
		}
	}
	// Intervals whose thinking is stored empty, and nothing else is known to be missing.
	for _, iv := range Intervals(data, name) {
		if iv.Skip != SkipHiddenThinking || iv.toolReference() {
			continue
		}
		s := SignatureSample{Source: name, Model: iv.Model, Family: iv.Family, Held: iv.Held, Empty: true}
		for mi := iv.from; mi < iv.to; mi++ {
			for _, l := range iv.t.Messages[mi].Lines {
				gjson.Get(iv.t.Slice(l), "message.content").ForEach(func(_, b gjson.Result) bool {
					if b.Get("type").String() == "thinking" {
						s.Signatures = append(s.Signatures, len(b.Get("signature").String()))
					}
					return true
				})
			}
		}
		// The interval's other blocks as measure counts them: its estimate less the
		// thinking stored empty, which measure prices from the signature,
		c := tokens.Claude(iv.Model)
		rest := iv.Estimate(c, Current())
		for mi := iv.from; mi < iv.to; mi++ {
			for bi := range iv.t.Messages[mi].Blocks {
				if b := &iv.t.Messages[mi].Blocks[bi]; b.Kind == transcript.Thinking && iv.t.BodyLen(b) == 0 {
					rest -= measure.BlockTokens(iv.t, b, c)
				}
			}
		}
		// and the attachments between the two requests, which the prompt carries too.
		for _, a := range measure.Of(iv.t, c, false).Attachments {
			if a.Before > iv.from && a.Before <= iv.to {
				rest += a.Tokens
			}
		}
		s.Tokens = float64(iv.Truth - rest)
		out = append(out, s)
	}
	return out
}

// toolReference reports whether a result of the interval loads tool schemas (a
// tool_reference part): its truth then holds them too (SkipDeferredTools, which the
// interval's first reason to be skipped hid).
func (iv *Interval) toolReference() bool {
	for mi := iv.from; mi < iv.to; mi++ {
		for _, b := range iv.t.Messages[mi].Blocks {
			for _, p := range b.Parts {
				if p.Type == "tool_reference" {
					return true
				}
			}
		}
	}
	return false
}

// SignatureFit is the fit of the prices of thinking stored empty.
type SignatureFit struct {
	Header float64
	Rate   []float64 // tokens a signature byte beyond the header, per family
	// N is how many samples each family's rate was fitted on; AllSamples says a family
	// with no training sample was fitted on all of its own (held out included).
	N          []int
	AllSamples []bool
}

// FitSignatures fits the header and the main family's rate on the training blocks
// recorded with their text (least squares of their count on their size: the slope is
// the rate, the size at zero tokens the header), and the rate of every family with
// samples stored empty on those, robustly (Robust: a few intervals carry text the file
// does not hold), through zero beyond the header. A family with no training sample of
// its kind is fitted on all its samples, held out included, and says so (AllSamples).
func FitSignatures(ss []SignatureSample) SignatureFit {
	nf := len(tokens.ClaudeFamilies())
	f := SignatureFit{Rate: make([]float64, nf), N: make([]int, nf), AllSamples: make([]bool, nf)}
	var sx, sy, sxx, sxy, n float64
	for i := range ss {
		s := &ss[i]
		if s.Empty || s.Held || s.Family != 0 {
			continue
		}
		x := float64(s.Signatures[0])
		sx, sy, sxx, sxy, n = sx+x, sy+s.Tokens, sxx+x*x, sxy+x*s.Tokens, n+1
	}
	if n >= 2 {
		slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		f.Header = (slope*sx - sy) / (n * slope)
		f.Rate[0], f.N[0] = slope, int(n)
	}
	for fam := range nf {
		pick := func(held bool) []*SignatureSample {
			var out []*SignatureSample
			for i := range ss {
				if s := &ss[i]; s.Empty && !s.Output && s.Family == fam && (held || !s.Held) {
					out = append(out, s)
				}
			}
			return out
		}
		use := pick(false)
		if len(use) == 0 {
			use = pick(true)
			f.AllSamples[fam] = len(use) > 0
		}
		if len(use) == 0 {
			continue
		}
		f.Rate[fam], f.N[fam] = emptyRate(use, f.Header), len(use)
	}
	return f
}

// emptyRate fits tokens ≈ rate × bytes beyond the header on samples stored empty.
func emptyRate(ss []*SignatureSample, header float64) float64 {
	X := make([][]float64, len(ss))
	y := make([]float64, len(ss))
	scale := make([]float64, len(ss))
	for i, s := range ss {
		X[i] = []float64{s.Beyond(header)}
		y[i] = s.Tokens
		scale[i] = math.Sqrt(max(math.Abs(s.Tokens), MinScale))
	}
	return Robust(X, y, scale, HuberK)[0]
}

// SignatureError is how far a rate and header miss on a set of samples.
type SignatureError struct {
	N int
	// Bias is Σ estimate / Σ truth; MeanAbs the mean |estimate - truth| / truth over the
	// samples of at least MinSignatureTokens true tokens, of which there are N100.
	Bias    float64
	MeanAbs float64
	N100    int
	// Explained is, for samples stored empty, the share of their summed truth the estimate
	// accounts for (1 - Σ|residual| / Σ truth).
	Explained float64
}

// MinSignatureTokens: per-sample error figures are of samples of at least this many
// true tokens; below it the rounding and framing of a short thought dominate the ratio.
const MinSignatureTokens = 100

// MeasureSignatures is the error of rate and header on samples.
func MeasureSignatures(ss []*SignatureSample, rate, header float64) SignatureError {
	return signatureError(ss, func(int) float64 { return rate }, header)
}

// LeaveOneOut is the error of the rate of a family fitted stored empty, each sample
// estimated with the rate fitted on the others: the only held-out figure for a family
// whose samples all come from one session.
func LeaveOneOut(ss []*SignatureSample, header float64) SignatureError {
	var out []*SignatureSample
	var rates []float64
	for i := range ss {
		rest := append(append([]*SignatureSample{}, ss[:i]...), ss[i+1:]...)
		if len(rest) == 0 {
			continue
		}
		rates = append(rates, emptyRate(rest, header))
		out = append(out, ss[i])
	}
	return signatureError(out, func(i int) float64 { return rates[i] }, header)
}

// signatureError is the error of estimating each sample i with rateOf(i) a byte beyond
// header.
func signatureError(ss []*SignatureSample, rateOf func(i int) float64, header float64) SignatureError {
	var e SignatureError
	var st, se, sr float64
	var rel []float64
	for i, s := range ss {
		est := rateOf(i) * s.Beyond(header)
		e.N++
		st, se, sr = st+s.Tokens, se+est, sr+math.Abs(est-s.Tokens)
		if s.Tokens >= MinSignatureTokens {
			rel = append(rel, math.Abs(est-s.Tokens)/s.Tokens)
		}
	}
	if st > 0 {
		e.Bias, e.Explained = se/st, 1-sr/st
	}
	e.MeanAbs, e.N100 = mean(rel), len(rel)
	return e
}

// SelectSignatures picks the samples of a family: stored empty or recorded with their
// text, the output cross-check or not, held out or trained on (both when all is set).
func SelectSignatures(ss []SignatureSample, family int, empty, output, held, all bool) []*SignatureSample {
	var out []*SignatureSample
	for i := range ss {
		if s := &ss[i]; s.Family == family && s.Empty == empty && s.Output == output && (all || s.Held == held) {
			out = append(out, s)
		}
	}
	return out
}
