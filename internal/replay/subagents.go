package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A Claude Code session's subagents keep logs of their own (sessions.Subagents): each
// with a context of its own, whose requests the session's bill counts with the main
// log's (ccusage folds them in: a session with 6 subagents made 2,856,814 prompt tokens
// where its main log holds 832,157). Each is replayed on its own through the same
// pipeline, and the report gives the main log alone and the session with its subagents.

// SubagentReport is one subagent's log replayed.
type SubagentReport struct {
	File      string       `json:"file"`
	Model     string       `json:"model,omitempty"`
	Effective int          `json:"effective_window"`
	Price     tokens.Price `json:"price"`
	Totals
}

// replaySubagents replays the logs of the subagents of the session read from name, each
// with the options of the main log's replay (o: the pipeline, its environment, the cache
// lifetime) but its own model, window and requests. A log that cannot be read or has no
// request to replay is named in a warning and left out of the figures.
func replaySubagents(ctx *cli.Context, name string, f *Flags, o Options) ([]SubagentReport, error) {
	if name == "-" {
		return nil, nil
	}
	var out []SubagentReport
	for _, path := range sessions.Subagents(name) {
		r, err := replaySubagent(ctx, path, f, o)
		if err != nil {
			var te *TurnError
			if errors.As(err, &te) {
				return nil, cli.RuntimeError(fmt.Errorf("%s: subagent %s: %w", cli.DisplayName(name), path, err))
			}
			ctx.Warnf("%s: subagent %s left out: %v", cli.DisplayName(name), path, err)
			continue
		}
		if left := r.Recorded - r.Requests; left > 0 {
			ctx.Warnf("%s: %d of the %d requests it records are not replayed (its first request is in the parent's log, or on a branch it left): the figures leave them out", path, left, r.Recorded)
		}
		if r.Requests > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

func replaySubagent(ctx *cli.Context, path string, f *Flags, o Options) (SubagentReport, error) {
	t, err := ctx.ReadConversation(path)
	if err != nil {
		return SubagentReport{}, err
	}
	if t.Format != transcript.ClaudeCode {
		return SubagentReport{}, fmt.Errorf("not a Claude Code log but %s", t.Format)
	}
	counter, err := ctx.Counter(t.Format, t.Model)
	if err != nil {
		return SubagentReport{}, err
	}
	window, err := ctx.Window(t.Model, t.Usage)
	if err != nil {
		return SubagentReport{}, err
	}
	price, err := priceOf(window, t, f.Price)
	if err != nil {
		return SubagentReport{}, err
	}
	opts := transcript.Options{Format: t.Format, Sidechains: ctx.Common.Sidechains}
	o.Parse = func(b []byte) (*transcript.Transcript, error) { return transcript.Parse(b, opts) }
	if o.Points, err = SessionPoints(t, o.Parse); err != nil {
		return SubagentReport{}, err
	}
	r := SubagentReport{File: path, Model: cmp.Or(window.Model, t.Model), Effective: window.Effective, Price: price}
	if len(o.Points) == 0 {
		r.Recorded = max(recordedRequests(t, nil), len(t.Usage))
		return r, nil
	}
	o.Counter, o.Effective, o.Price, o.Save, o.Detect = counter, window.Effective, price, nil, nil
	tot, err := Replay(context.Background(), t, o, func(Turn) error { return nil })
	if err != nil {
		return r, err
	}
	tot.Recorded = max(tot.Recorded, len(t.Usage))
	r.Totals = tot
	return r, nil
}

// priceOf is the price a replay bills a transcript at: the model's (the window's, else
// the one the transcript names), or --price over it.
func priceOf(window tokens.Budget, t *transcript.Transcript, given string) (tokens.Price, error) {
	provider := measure.ProviderOf(t.Format)
	price := tokens.PriceOf(window.Model, provider)
	if window.Model == "" {
		price = tokens.PriceOf(t.Model, provider)
	}
	if given != "" {
		p, err := tokens.ParsePrice(given, price)
		if err != nil {
			return price, cli.Usagef("--price: %v", err)
		}
		price = p
	}
	return price, nil
}

// merge adds the totals of another replay (a subagent's) to t, the ratios worked out
// again.
func (t *Totals) merge(o Totals) {
	t.Requests += o.Requests
	t.Recorded += o.Recorded
	t.ClientCompactions += o.ClientCompactions
	t.OverWindow += o.OverWindow
	t.OverUncompacted += o.OverUncompacted
	t.Unavoidable += o.Unavoidable
	t.CacheBreaks += o.CacheBreaks
	if t.Firings == nil {
		t.Firings, t.Saved = map[string]int{}, map[string]int{}
	}
	for k, v := range o.Firings {
		t.Firings[k] += v
	}
	for k, v := range o.Saved {
		t.Saved[k] += v
	}
	t.Tokens += o.Tokens
	t.Uncompacted += o.Uncompacted
	t.Cached += o.Cached
	t.CachedUncompacted += o.CachedUncompacted
	t.Cost += o.Cost
	t.CostUncompacted += o.CostUncompacted
	t.Repeats += o.Repeats
	t.RepeatsNeeded += o.RepeatsNeeded
	for k, v := range o.Unrepaid {
		if t.Unrepaid == nil {
			t.Unrepaid = map[string]int{}
		}
		t.Unrepaid[k] += v
	}
	t.Problems += o.Problems
	t.Oracle.Cost += o.Oracle.Cost
	t.Oracle.CacheBreaks += o.Oracle.CacheBreaks
	t.Oracle.FewestBreaks += o.Oracle.FewestBreaks
	t.BilledRatio = ratio(t.Cost, t.CostUncompacted)
	t.SentRatio = ratio(float64(t.Tokens), float64(t.Uncompacted))
	t.Oracle.BilledRatio = ratio(t.Oracle.Cost, t.CostUncompacted)
}
