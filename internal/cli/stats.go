package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Stats is one run's summary for --stats. Tool defaults to the running
// tool's name and Saved to TokensBefore-TokensAfter when left zero.
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

// writeStats writes s as one JSON line when --stats or --stats-file is set,
// and does nothing otherwise. Keys come in a fixed order — tool, file,
// format, tokens_before, tokens_after, saved, items, trigger — then the
// Extra keys sorted, then schema_version; an Extra key may not reuse a fixed name.
// schema_version is last so that a line matched by its start ({"tool":...) or by a run
// of its keys still matches. The line goes
// to stderr, or is appended to --stats-file with O_APPEND in a single
// write, so concurrent runs sharing a file never interleave lines.
//
// Call it once per document after writeDocument.
func (c *Context) writeStats(s Stats) error {
	if !c.Common.Stats && c.Common.StatsFile == "" {
		return nil
	}
	line, err := s.marshal(c.Tool.Name)
	if err != nil {
		return err
	}
	if c.Common.StatsFile == "" {
		if _, err := c.Stderr.Write(line); err != nil {
			return RuntimeError(fmt.Errorf("write stats: %w", err))
		}
		return nil
	}
	// Not through a link, not into another user's file (see stageStream); a new file is
	// 0600, since the line names the documents a user works on.
	f, err := safefile.OpenAppend(c.Common.StatsFile, 0o600)
	if err != nil {
		return pathError(fmt.Sprintf("write stats %q", c.Common.StatsFile), err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return RuntimeError(fmt.Errorf("write stats %q: %w", c.Common.StatsFile, pathReason(err)))
	}
	return nil
}

func (s Stats) marshal(tool string) ([]byte, error) {
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

// JSONLines writes each value as one line of JSON, with <, > and & as themselves: what the
// tools print quotes transcripts full of tags and shell, which escapes would make
// unreadable. An error is a runtime error.
func JSONLines[T any](w io.Writer, vs ...T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return RuntimeError(err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
