package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Stats is one stage's summary, the line --stats writes for a run of the tier's command
// (cli.Stats is this type). Tool defaults to the running tool's name and Saved to
// TokensBefore-TokensAfter when left zero.
type Stats struct {
	Tool, Format, File        string
	TokensBefore, TokensAfter int
	Saved, Items              int
	Trigger                   string         // why the tier acted, or did not ("below 85% of window")
	Extra                     map[string]any // tool-specific keys, written after the fixed ones
}

// StatsSchemaVersion is the stats line's schema_version, the version of schema/stats.json
// it follows: raised when a key changes meaning or goes, not when one is added.
const StatsSchemaVersion = 1

func isStatsKey(k string) bool {
	switch k {
	case "tool", "file", "format", "tokens_before", "tokens_after", "saved", "items", "trigger", "schema_version":
		return true
	}
	return false
}

// Marshal is s as one JSON line, tool its Tool when it names none. Keys come in a fixed
// order — tool, file, format, tokens_before, tokens_after, saved, items, trigger — then
// the Extra keys sorted, then schema_version; an Extra key may not reuse a fixed name.
// schema_version is last so that a line matched by its start ({"tool":...) or by a run of
// its keys still matches.
func (s Stats) Marshal(tool string) ([]byte, error) {
	if s.Tool == "" {
		s.Tool = tool
	}
	if s.Saved == 0 {
		s.Saved = s.TokensBefore - s.TokensAfter
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	field := func(key string, v any) error {
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		enc.Encode(key)
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("stats key %q: %w", key, err)
		}
		b.Truncate(b.Len() - 1)
		return nil
	}
	fixed := []struct {
		k string
		v any
	}{{"tool", s.Tool}, {"file", s.File}, {"format", s.Format}, {"tokens_before", s.TokensBefore},
		{"tokens_after", s.TokensAfter}, {"saved", s.Saved}, {"items", s.Items}, {"trigger", s.Trigger}}
	for _, f := range fixed {
		field(f.k, f.v)
	}
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		if isStatsKey(k) {
			return nil, fmt.Errorf("stats: extra key %q clashes with a fixed key", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := field(k, s.Extra[k]); err != nil {
			return nil, err
		}
	}
	field("schema_version", StatsSchemaVersion)
	b.WriteString("}\n")
	return b.Bytes(), nil
}
