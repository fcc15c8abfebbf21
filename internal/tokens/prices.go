package tokens

import (
	"fmt"
	"strconv"
	"strings"
)

// Price is what a model bills for prompt tokens, in US dollars per million: tokens read
// fresh, tokens written to the prompt cache, and tokens read from it. Output is left out:
// compacting a history does not change what the model writes.
type Price struct {
	Model      string  `json:"model"` // the table entry, "relative" when none matched, "given" for --price
	Input      float64 `json:"input"`
	CacheWrite float64 `json:"cache_write"`
	CacheRead  float64 `json:"cache_read"`
}

// prices lists the providers' published prompt prices for standard use (Anthropic's
// 5-minute cache writes at 1.25× input and reads at 0.1×; OpenAI caches by itself, writes
// at the input price and reads at a discount). Snapshots resolve by prefix, as in the
// model table.
var prices = []Price{
	{"claude-3-haiku", 0.25, 0.30, 0.03},
	{"claude-3-opus", 15, 18.75, 1.50},
	{"claude-3-5-haiku", 0.80, 1.00, 0.08},
	{"claude-3-5-sonnet", 3, 3.75, 0.30},
	{"claude-3-7-sonnet", 3, 3.75, 0.30},
	{"claude-haiku-4-5", 1, 1.25, 0.10},
	{"claude-opus-4", 15, 18.75, 1.50},
	{"claude-opus-4-1", 15, 18.75, 1.50},
	{"claude-opus-4-5", 5, 6.25, 0.50},
	{"claude-opus-4-6", 5, 6.25, 0.50},
	{"claude-opus-4-7", 5, 6.25, 0.50},
	{"claude-sonnet-4", 3, 3.75, 0.30},
	{"claude-sonnet-4-5", 3, 3.75, 0.30},
	{"claude-sonnet-4-6", 3, 3.75, 0.30},

	{"gpt-4o", 2.50, 2.50, 1.25},
	{"gpt-4o-mini", 0.15, 0.15, 0.075},
	{"gpt-4.1", 2, 2, 0.50},
	{"gpt-4.1-mini", 0.40, 0.40, 0.10},
	{"gpt-4.1-nano", 0.10, 0.10, 0.025},
	{"o1", 15, 15, 7.50},
	{"o3", 2, 2, 0.50},
	{"o4-mini", 1.10, 1.10, 0.275},
	{"gpt-5", 1.25, 1.25, 0.125},
	{"gpt-5-mini", 0.25, 0.25, 0.025},
	{"gpt-5-nano", 0.05, 0.05, 0.005},
	{"gpt-5-codex", 1.25, 1.25, 0.125},
	{"gpt-5.1", 1.25, 1.25, 0.125},
	{"gpt-5.1-codex", 1.25, 1.25, 0.125},
}

// PriceOf is the price of a model's prompt tokens. A model the table does not know is
// priced relatively, by its provider's cache discounts (input 1, writes 1.25 at
// Anthropic and 1 at OpenAI, reads 0.1): ratios between costs still hold.
func PriceOf(model, provider string) Price {
	n := normalizeModel(model)
	best := -1
	for i, p := range prices {
		if n == p.Model {
			return p
		}
		if len(n) > len(p.Model) && strings.HasPrefix(n, p.Model) && !isAlnum(n[len(p.Model)]) &&
			(best < 0 || len(p.Model) > len(prices[best].Model)) {
			best = i
		}
	}
	if best >= 0 {
		return prices[best]
	}
	if provider == "openai" {
		return Price{"relative", 1, 1, 0.1}
	}
	return Price{"relative", 1, 1.25, 0.1}
}

// ParsePrice reads a price the user gives: "input=3,write=3.75,read=0.3", dollars per
// million tokens; keys left out keep base's figures.
func ParsePrice(text string, base Price) (Price, error) {
	p := base
	p.Model = "given"
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return p, fmt.Errorf("%q is not KEY=DOLLARS (input, write or read)", part)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || f < 0 {
			return p, fmt.Errorf("%q: %q is not a price in dollars per million tokens", part, val)
		}
		switch strings.TrimSpace(key) {
		case "input":
			p.Input = f
		case "write", "cache-write":
			p.CacheWrite = f
		case "read", "cache-read":
			p.CacheRead = f
		default:
			return p, fmt.Errorf("unknown price %q: use input, write or read", key)
		}
	}
	return p, nil
}

// Cost is what a prompt of total tokens costs when cached of them are read from the cache
// and the rest written to it, in dollars.
func (p Price) Cost(total, cached int) float64 {
	return (float64(cached)*p.CacheRead + float64(max(0, total-cached))*p.CacheWrite) / 1e6
}

// Billed is what a prompt costs as the provider billed it, in dollars: fresh tokens
// neither read from the cache nor written to it at the input price, written ones at the
// cache-write price, read ones at the cache-read price (the split a transcript records:
// Claude Code's input_tokens, cache_creation_input_tokens and cache_read_input_tokens;
// Codex's input_tokens less cached_input_tokens, and cached_input_tokens).
func (p Price) Billed(fresh, written, read int) float64 {
	return (float64(max(0, fresh))*p.Input + float64(max(0, written))*p.CacheWrite + float64(max(0, read))*p.CacheRead) / 1e6
}

// Repays reports whether an edit that saves saved tokens of a prompt, changing it from a
// point with uncached tokens after it (the saved ones among them), pays back within
// requests later requests what it costs the prompt cache: once, the rest of those tokens
// are written instead of read; then each request reads saved fewer.
func (p Price) Repays(saved, uncached, requests int) bool {
	cost := p.CacheWrite*float64(uncached-saved) - p.CacheRead*float64(uncached)
	return p.CacheRead*float64(saved)*float64(requests) >= cost
}

// Repayment is a tier's judgement of one edit against the prompt cache it breaks, as its
// --stats line reports it ("repay"): the tokens the edit saves, the tokens from its first
// change on that the next request writes to the cache instead of reading them, the
// requests the saving has to pay that back in, what the rewrite costs and what the saving
// returns within them (in dollars), and whether it repays. Exempt says why the test did
// not apply ("" when it did): an edit that makes the request fit, one only of what is new
// since the request before, a forced run, --repay 0.
type Repayment struct {
	Saved    int     `json:"saved"`
	Uncached int     `json:"uncached"`
	Requests int     `json:"requests"`
	Cost     float64 `json:"cost"`
	Returns  float64 `json:"returns"`
	Repays   bool    `json:"repays"`
	Exempt   string  `json:"exempt,omitempty"`
}

// Judge is Repays with its figures: the judgement a tier logs. A price without cache
// prices is judged at Anthropic's relative ones.
func (p Price) Judge(saved, uncached, requests int) Repayment {
	if p.CacheWrite <= 0 {
		p = PriceOf("", "anthropic")
	}
	return Repayment{
		Saved: saved, Uncached: uncached, Requests: requests,
		Cost:    max(0, p.CacheWrite*float64(uncached-saved)-p.CacheRead*float64(uncached)) / 1e6,
		Returns: p.CacheRead * float64(max(saved, 0)) * float64(requests) / 1e6,
		Repays:  saved > 0 && p.Repays(saved, uncached, requests),
	}
}

// Why says, for people, why the edit does not repay ("" when it does).
func (r Repayment) Why() string {
	if r.Repays || r.Exempt != "" {
		return ""
	}
	requests := "requests"
	if r.Requests == 1 {
		requests = "request"
	}
	return fmt.Sprintf("saving %d tokens would not repay the %d it takes out of the prompt cache within %d %s (--repay)", max(r.Saved, 0), r.Uncached, r.Requests, requests)
}
