package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// --tokenizer api: a document Claude reads is counted by Anthropic's count_tokens
// endpoint, once, as the request it would make (convert.CountRequest); the Claude
// estimate is then scaled so that its count of the document is that figure, and counts
// every block, and whatever a tier writes in place of one, at the document's own rate.
// Documents in an OpenAI format are counted with o200k, which is exact for them, and
// cost no request.

// apiKeyVar holds the key --tokenizer api sends; without it the run is refused.
const apiKeyVar = "ANTHROPIC_API_KEY"

// apiBaseVar names another server for count_tokens (a gateway; a fake one in tests),
// before ANTHROPIC_BASE_URL, which the client reads through APIRequest.Getenv.
const apiBaseVar = "CTX_COUNT_BASE_URL"

// APIRequest is a count --tokenizer api asks for: the tokens of the request that sends
// conversation T to Model, asked with Key of the server at BaseURL ("": the one
// ANTHROPIC_BASE_URL names, read with Getenv, else Anthropic's), its answer kept in the
// cache directory CacheDir ("" for none).
type APIRequest struct {
	T                             *transcript.Transcript
	Model, Key, BaseURL, CacheDir string
	Getenv                        func(string) string
	Warn                          func(msg string)
}

// apiCounter answers APIRequests (package apicount). cli cannot make the request itself:
// the request is package convert's, and convert imports cli (ctx-convert's command lives
// in it, and it is built on repair, which holds ctx-repair's).
var apiCounter func(ctx context.Context, r APIRequest) (n int, cached bool, err error)

// RegisterAPICounter sets what answers --tokenizer api: package apicount does, when a
// binary imports it (every cmd/ctx-* does).
func RegisterAPICounter(f func(ctx context.Context, r APIRequest) (n int, cached bool, err error)) {
	apiCounter = f
}

// APICount is what count_tokens said of a document (ctx-count reports it as "api").
type APICount struct {
	Tokens int     `json:"tokens"` // the endpoint's input_tokens: what the file holds, as the model reads it
	Model  string  `json:"model"`  // the model it was counted for
	Cached bool    `json:"cached"` // the answer came from the cache, not a request
	Scale  float64 `json:"scale"`  // the estimate's prices were multiplied by it
}

// APICount is the count_tokens figure the document was calibrated on, nil when none
// was asked (another tokenizer, an OpenAI format).
func (d *Doc) APICount() *APICount { return d.api }

// calibrate returns the counter of a document read whole under --tokenizer api: base,
// the Claude estimate, scaled to the endpoint's count of it.
func (d *Doc) calibrate(base tokens.Counter) (tokens.Counter, error) {
	claude, ok := base.(*tokens.ClaudeCounter)
	if !ok || d.T == nil || d.whole == nil {
		return base, nil
	}
	model := d.c.Common.Model
	if model == "" {
		model = d.T.Model
	}
	if !tokens.IsClaude(model) {
		what := "names no model"
		if model != "" {
			what = fmt.Sprintf("is for %s", model)
		}
		return nil, WithHint(Usagef("--tokenizer api: %s %s; count_tokens counts for a Claude model", d.Display(), what),
			"name one with --model (claude-sonnet-4-5, ...)")
	}
	if apiCounter == nil {
		return nil, RuntimeError(fmt.Errorf("internal: %s was built without the count_tokens client (import internal/apicount)", d.c.tool.Name))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	n, cached, err := apiCounter(ctx, APIRequest{
		T: d.T, Model: model, Key: d.c.Getenv(apiKeyVar), BaseURL: d.c.Getenv(apiBaseVar), Getenv: d.c.Getenv,
		CacheDir: d.c.cacheDir(), Warn: func(msg string) { d.c.Warnf("%s", msg) },
	})
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("%s: count_tokens: %w", d.Display(), err))
	}
	// The endpoint counts what the counter counts (text, tool schemas) and what it does
	// not (framing, images, encrypted reasoning); the scale is the first part's.
	tl := measure.Of(d.T, base, false)
	countered := tl.Countered()
	scale := 1.0
	if countered > 0 {
		scale = float64(n-(tl.Counted()-countered)) / float64(countered)
	}
	if math.IsNaN(scale) || scale <= 0.1 || scale > 10 {
		// A figure the estimate is that far from is not a calibration: a server that
		// is not Anthropic's, or a document the endpoint read otherwise.
		d.Warnf("count_tokens says %d tokens where the estimate counts %d; the estimate is kept", n, tl.Counted())
		scale = 1
	}
	d.api = &APICount{Tokens: n, Model: model, Cached: cached, Scale: scale}
	return claude.Scaled(scale, "api"), nil
}
