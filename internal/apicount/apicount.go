// Package apicount answers --tokenizer api: it counts a conversation with Anthropic's
// count_tokens endpoint, as the request convert writes for it, through llm's client and
// its cache. It registers itself with cli when imported (every cmd/ctx-* binary imports
// it), because cli cannot import convert.
package apicount

import (
	"context"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/convert"
	"github.com/ctxkit/ctxkit/internal/llm"
)

func init() { cli.RegisterAPICounter(Count) }

// Count asks count_tokens for the tokens of r's conversation sent to r.Model, once per
// request body: an answer kept in the cache is used instead of a request.
func Count(ctx context.Context, r cli.APIRequest) (n int, cached bool, err error) {
	body, err := convert.CountRequest(r.T, r.Model)
	if err != nil {
		return 0, false, err
	}
	client := &llm.Client{
		Backend: llm.Anthropic, BaseURL: r.BaseURL, APIKey: r.Key, Getenv: r.Getenv,
		Timeout: 60 * time.Second, Retries: 2, Backoff: time.Second, MaxBackoff: 10 * time.Second,
	}
	cache := llm.NewCountCache(r.CacheDir)
	if cache != nil {
		cache.Warn = r.Warn
	}
	return client.CountTokensCached(ctx, body, cache)
}
