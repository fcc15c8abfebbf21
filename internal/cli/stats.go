package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/safefile"
)

// Stats is one run's summary for --stats (pipeline.Stats: a tier's stats are the same
// value whether its command or an in-process pipeline runs it).
type Stats = pipeline.Stats

// StatsSchemaVersion is the stats line's schema_version (pipeline.StatsSchemaVersion).
const StatsSchemaVersion = pipeline.StatsSchemaVersion

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
	line, err := s.Marshal(c.tool.Name)
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
