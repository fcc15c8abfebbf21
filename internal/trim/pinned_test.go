package trim

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestPinnedContextKept trims, to windows that force most of the history out, sessions
// that carry the clients' pinned context (testgen's Pinned): Codex's developer message and
// its AGENTS.md and environment message, and Claude Code's first message with its
// reminders, are never dropped.
func TestPinnedContextKept(t *testing.T) {
	for _, format := range []string{"codex", "responses", "openai", "anthropic", "claude-code"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 200 << 10, Seed: 5, Pinned: true}); err != nil {
			t.Fatal(err)
		}
		in := buf.Bytes()
		for _, window := range []int{30_000, 12_000} {
			for _, strategy := range []string{KeepLast, KeepFirst} {
				o := Defaults()
				o.Strategy = strategy
				out := invariant.Check(t, format, in, transform(format, o, window), invariant.Options{Structural: true, Lossy: true, Drops: true, Added: []string{repair.FirstUserText, transcript.TrimNote}})
				if bytes.Equal(out, in) {
					t.Errorf("%s %d %s: nothing trimmed", format, window, strategy)
				}
			}
		}
	}
}
