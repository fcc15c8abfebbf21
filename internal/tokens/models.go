package tokens

import (
	"fmt"
	"slices"
	"strings"
)

// Model is one entry of the model table.
type Model struct {
	Name      string // the API id without a date suffix, e.g. "claude-sonnet-4-5", "gpt-4o"
	Provider  string // "anthropic" or "openai"
	Window    int    // context window in tokens: input and output together
	MaxOutput int    // most output tokens one reply may have
	// MaxInput is the most input tokens a request may have when the provider caps input
	// on its own (GPT-5: a 400,000-token window of which input may use 272,000); 0 when
	// input may use whatever of the window the reply does not.
	MaxInput  int
	Tokenizer string // "o200k", "cl100k", or "" when the vocabulary is unpublished
}

// models lists the context windows and output limits the providers publish for each
// model's standard tier. Opt-in larger windows (Anthropic's 1M-token beta) are not
// assumed: a run that uses one names its window. Dated snapshots and aliases resolve to
// these names by prefix (see LookupModel).
var models = []Model{
	{"claude-3-haiku", "anthropic", 200_000, 4_096, 0, ""},
	{"claude-3-opus", "anthropic", 200_000, 4_096, 0, ""},
	{"claude-3-5-haiku", "anthropic", 200_000, 8_192, 0, ""},
	{"claude-3-5-sonnet", "anthropic", 200_000, 8_192, 0, ""},
	{"claude-3-7-sonnet", "anthropic", 200_000, 64_000, 0, ""},
	{"claude-haiku-4-5", "anthropic", 200_000, 64_000, 0, ""},
	{"claude-opus-4", "anthropic", 200_000, 32_000, 0, ""},
	{"claude-opus-4-1", "anthropic", 200_000, 32_000, 0, ""},
	{"claude-opus-4-5", "anthropic", 200_000, 64_000, 0, ""},
	{"claude-opus-4-6", "anthropic", 200_000, 128_000, 0, ""},
	{"claude-sonnet-4", "anthropic", 200_000, 64_000, 0, ""},
	{"claude-sonnet-4-5", "anthropic", 200_000, 64_000, 0, ""},
	{"claude-sonnet-4-6", "anthropic", 200_000, 64_000, 0, ""},

	{"gpt-3.5-turbo", "openai", 16_385, 4_096, 0, "cl100k"},
	{"gpt-4", "openai", 8_192, 8_192, 0, "cl100k"},
	{"gpt-4-turbo", "openai", 128_000, 4_096, 0, "cl100k"},
	{"gpt-4o", "openai", 128_000, 16_384, 0, "o200k"},
	{"gpt-4o-mini", "openai", 128_000, 16_384, 0, "o200k"},
	{"chatgpt-4o-latest", "openai", 128_000, 16_384, 0, "o200k"},
	{"gpt-4.1", "openai", 1_047_576, 32_768, 0, "o200k"},
	{"gpt-4.1-mini", "openai", 1_047_576, 32_768, 0, "o200k"},
	{"gpt-4.1-nano", "openai", 1_047_576, 32_768, 0, "o200k"},
	{"o1", "openai", 200_000, 100_000, 0, "o200k"},
	{"o1-mini", "openai", 128_000, 65_536, 0, "o200k"},
	{"o1-preview", "openai", 128_000, 32_768, 0, "o200k"},
	{"o3", "openai", 200_000, 100_000, 0, "o200k"},
	{"o3-mini", "openai", 200_000, 100_000, 0, "o200k"},
	{"o4-mini", "openai", 200_000, 100_000, 0, "o200k"},
	{"codex-mini-latest", "openai", 200_000, 100_000, 0, "o200k"},
	{"gpt-5", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5-mini", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5-nano", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5-chat-latest", "openai", 128_000, 16_384, 0, "o200k"},
	{"gpt-5-codex", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.1", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.1-chat-latest", "openai", 128_000, 16_384, 0, "o200k"},
	{"gpt-5.1-codex", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.1-codex-max", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.1-codex-mini", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.2", "openai", 400_000, 128_000, 272_000, "o200k"},
	{"gpt-5.2-codex", "openai", 400_000, 128_000, 272_000, "o200k"},
}

// Models returns the model table sorted by name.
func Models() []Model {
	out := slices.Clone(models)
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupModel finds a model by name, ignoring case: an exact match first, then the
// longest table name the given one starts with, followed by a character that is not a
// letter or digit, so dated snapshots and suffixed aliases resolve
// ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06", "claude-3-7-sonnet-latest") while
// "gpt-4o" does not fall back to "gpt-4". Provider prefixes are dropped first: a router's
// "openai/" or "anthropic/", Bedrock's "us.anthropic." and "-v1:0"-style suffixes
// (by the prefix rule), and dots in Claude names ("claude-sonnet-4.5").
func LookupModel(name string) (Model, bool) {
	n := normalizeModel(name)
	if n == "" {
		return Model{}, false
	}
	best := -1
	for i, m := range models {
		switch {
		case n == m.Name:
			return m, true
		case len(n) > len(m.Name) && strings.HasPrefix(n, m.Name) && !isAlnum(n[len(m.Name)]):
			if best < 0 || len(m.Name) > len(models[best].Name) {
				best = i
			}
		}
	}
	if best < 0 {
		return Model{}, false
	}
	return models[best], true
}

func normalizeModel(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	if i := strings.Index(n, "anthropic."); i >= 0 {
		n = n[i+len("anthropic."):]
	}
	if strings.HasPrefix(n, "claude-") {
		n = strings.ReplaceAll(n, ".", "-")
	}
	return n
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

const (
	// DefaultWindow is the window assumed when neither a window nor a known model is
	// given: the standard window of every current Claude model.
	DefaultWindow = 200_000
	// DefaultReserve is the most output reserved by default: about what coding agents
	// keep free for the next reply in practice, well below the largest output limits
	// (64k-128k), which replies rarely approach.
	DefaultReserve = 20_000
)

// Budget is the window a document is measured against.
type Budget struct {
	Model     string // the model as named, "" when none was
	Window    int    // the context window in tokens
	Reserve   int    // tokens kept free for the reply
	Effective int    // Window - Reserve: what the input may fill
}

// Window works out a Budget from a model name, a window and a reserve, each optional
// (window and reserve 0 mean "not given").
//
//   - Window: as given, else the model's, else DefaultWindow.
//   - Reserve: as given, else, when the window is the model's and the model caps input
//     separately (MaxInput), whatever the cap leaves (GPT-5: 400,000-272,000 = 128,000),
//     else the model's MaxOutput (DefaultReserve with no model) capped at DefaultReserve
//     and at a quarter of the window, so a small window is not swallowed by its reserve.
//
// An unknown model is an error (suggesting close names) unless the window is given,
// in which case the name is only recorded. So is a negative value and a reserve that
// leaves no room.
func Window(model string, window, reserve int) (Budget, error) {
	b := Budget{Model: strings.TrimSpace(model)}
	if window < 0 {
		return b, fmt.Errorf("window %d is negative", window)
	}
	if reserve < 0 {
		return b, fmt.Errorf("reserve %d is negative", reserve)
	}
	out, maxInput := DefaultReserve, 0
	if b.Model != "" {
		m, ok := LookupModel(b.Model)
		switch {
		case ok:
			out = m.MaxOutput
			if window == 0 {
				window, maxInput = m.Window, m.MaxInput
			}
		case window == 0:
			return b, unknownModel(b.Model)
		}
	}
	if window == 0 {
		window = DefaultWindow
	}
	if reserve == 0 {
		if maxInput > 0 {
			reserve = window - maxInput
		} else {
			reserve = min(out, DefaultReserve, window/4)
		}
	}
	b.Window, b.Reserve, b.Effective = window, reserve, window-reserve
	if b.Effective <= 0 {
		return b, fmt.Errorf("reserve of %d tokens leaves no room in a window of %d", reserve, window)
	}
	return b, nil
}

// unknownModel names the table entries closest to name by edit distance.
func unknownModel(name string) error {
	n := normalizeModel(name)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, m := range models {
		// Compare with the table name and with its prefix of the input's length, so
		// a mistyped family ("claude-sonet") finds its members too.
		d := editDistance(n, m.Name)
		if len(m.Name) > len(n) {
			d = min(d, editDistance(n, m.Name[:len(n)])+1)
		}
		if d <= max(2, len(n)/3) {
			cs = append(cs, cand{m.Name, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	if len(cs) == 0 {
		return fmt.Errorf("unknown model %q (known: claude-*, gpt-*, o1, o3, o4-mini, codex-mini-latest; or give the window)", name)
	}
	var names []string
	for _, c := range cs[:min(3, len(cs))] {
		names = append(names, fmt.Sprintf("%q", c.name))
	}
	return fmt.Errorf("unknown model %q; did you mean %s?", name, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
