package measure

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// countingCounter is the estimate, remembering every text it was asked to count.
type countingCounter struct {
	tokens.Counter
	mu   sync.Mutex
	seen []string
}

func (c *countingCounter) Count(text string) int {
	c.mu.Lock()
	c.seen = append(c.seen, text)
	c.mu.Unlock()
	return c.Counter.Count(text)
}

func (c *countingCounter) counted(word string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seen {
		if strings.Contains(s, word) {
			return true
		}
	}
	return false
}

// codexRollout is a rollout of two compactions: the items before the second are no longer
// part of the conversation, the session's instructions are.
func codexRollout() string {
	item := func(role, text string) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":%q,"content":[{"type":"input_text","text":%q}]}}`, role, text)
	}
	compacted := func(text string) string {
		return fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}]}}`, text)
	}
	lines := []string{
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","instructions":"INSTRUCTIONS stay"}}`,
		item("user", "DEADFIRST before both compactions"),
		item("assistant", "DEADSECOND before both compactions"),
		compacted("DEADSUMMARY replaced by the second compaction"),
		item("user", "DEADTHIRD between the compactions"),
		compacted("LIVESUMMARY of everything before"),
		item("user", "LIVEUSER after the compaction"),
		item("assistant", "LIVEREPLY after the compaction"),
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestStreamedSkipsCompactedRecords: streaming a Codex rollout counts no text a later
// compaction dropped from the conversation, and tallies what counting the parsed whole
// does.
func TestStreamedSkipsCompactedRecords(t *testing.T) {
	doc := codexRollout()
	estimate, _ := tokens.New("estimate")
	c := &countingCounter{Counter: estimate}
	s := &Streamed{NewCounter: func(transcript.Format) (tokens.Counter, error) { return c, nil }, Count: true, Carry: true}
	outline, _, err := transcript.Stream(strings.NewReader(doc), transcript.Options{}, s.Record)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"DEADFIRST", "DEADSECOND", "DEADSUMMARY", "DEADTHIRD"} {
		if c.counted(w) {
			t.Errorf("counted %s, which a compaction dropped", w)
		}
	}
	for _, w := range []string{"INSTRUCTIONS", "LIVESUMMARY", "LIVEUSER", "LIVEREPLY"} {
		if !c.counted(w) {
			t.Errorf("did not count %s", w)
		}
	}
	got := s.Tally(outline, c)
	whole, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := Of(whole, estimate, false)
	if len(want.Messages) != 4 || !reflect.DeepEqual(got.Messages, want.Messages) || got.Total() != want.Total() {
		t.Errorf("streamed tally %+v (total %d), whole %+v (total %d)", got.Messages, got.Total(), want.Messages, want.Total())
	}
}
