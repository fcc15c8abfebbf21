package tokens

import "math"

// Thinking stored empty.
//
// Claude Code 2.x (2.1.114 in the corpus, with Opus 4.7) writes a thinking block with an
// empty "thinking" and only its "signature": the thinking, encrypted, which the API
// decrypts when the block is sent back. The model reads that thinking and the prompt
// bills it, so a block stored empty is priced from its signature's size: the signature
// grows with the thinking it carries, by a rate a family's tokenizer sets, beyond a
// header of bytes that carry none.
//
// The figures are fitted by internal/calibrate (FitSignatures) on the corpus, and
// TestSignatureRatesAreTheFit holds these constants to that fit:
//
//   - The header (260 bytes) and the main family's rate (0.212 tokens a byte beyond it)
//     come from the 122 training blocks whose thinking Claude Code 1.0-2.1.42 recorded
//     with its signature (Sonnet 4 and 4.5, Opus 4.1 and 4.6): what the estimate counts
//     for their text against their signature's size (least squares). Held out, on 29
//     blocks of 2 other sessions: Σ estimate / Σ truth 0.964, mean |error| 8.5% on the 6
//     of at least 100 tokens. A block of the main family stored empty is priced at what
//     its text would have counted.
//   - Opus 4.7 stores every thinking block empty, so its rate (0.260) is fitted on what
//     its thinking cost when it was read back: the growth of the prompt Claude Code
//     recorded between consecutive requests, less our count of the rest (the other
//     blocks and the attachments), against the signatures' bytes beyond the header,
//     robustly, on the 11 such intervals of the one session that has them (ef958aa1,
//     2.1.114; none is left to hold out, and intervals that load tool schemas are left
//     out). Left out one at a time, Σ estimate / Σ truth is 0.76, the estimate accounts
//     for 68% of their summed truth, and the mean |error| on the 5 of at least 100 tokens
//     is 38%: two intervals carry text no line of the log holds (the first request of a
//     user turn, 1,600 tokens over its visible growth), which the robust fit does not
//     price into thinking. What the same thinking cost as output (output_tokens less the
//     rest of the reply, 14 replies) fits 0.313 beyond the header (0.282 through zero,
//     the output's own framing of thinking included); issue 37 measured 0.27-0.31 tokens
//     a signature byte on sessions outside the corpus. The rate is the least of these:
//     the one the prompts measure.
//
// Whether the thinking of earlier turns is sent again is the API's rule, and measure
// applies the one it applies to thinking recorded with its text (every block counts):
// Opus 4.7's prompt cache reads across a user turn over the earlier turns' thinking
// unchanged (ef958aa1: 47,359 cached tokens before and after), which it could not do had
// that thinking been stripped.

// SignatureHeader is the bytes of a thinking block's signature that carry no thinking.
const SignatureHeader = 260

// signatureRates are the tokens a signature byte beyond the header costs, by family
// (claudeFamilies' names).
var signatureRates = map[string]float64{
	"claude":          0.212,
	"claude-opus-4-7": 0.260,
}

// SignatureRate is the tokens a signature byte beyond SignatureHeader costs for a model
// (its family's, ClaudeFamilyOf; the main family's for "" and other names).
func SignatureRate(model string) float64 { return signatureRate(claudeFamilyIndex(model)) }

func signatureRate(family int) float64 {
	if r, ok := signatureRates[claudeFamilies[family].Name]; ok {
		return r
	}
	return signatureRates[claudeFamilies[0].Name]
}

// SignatureTokens is what the thinking of a block stored empty, with a signature of n
// bytes, costs a model of the family whose rate is given: rate × (n - SignatureHeader),
// rounded, at least 1 for a signature that is there. 0 for n <= 0.
func SignatureTokens(rate float64, n int) int {
	if n <= 0 {
		return 0
	}
	return max(1, int(math.Round(rate*float64(max(0, n-SignatureHeader)))))
}

// SignaturePricer is implemented by a counter that knows the model family it counts for
// (the Claude estimate), and so the rate of its thinking's signatures.
type SignaturePricer interface {
	SignatureTokens(n int) int
}

// SignatureTokens prices the thinking of a block stored empty with a signature of n
// bytes, at the rate of the counter's family.
func (c *ClaudeCounter) SignatureTokens(n int) int {
	return SignatureTokens(signatureRate(c.family), n)
}
