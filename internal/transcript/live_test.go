package transcript

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestLiveRecords: a Codex rollout's records reach Fn in order, but for those a later
// compaction drops (the instructions stay); past Max the oldest go on anyway; a format
// that does not compact passes everything.
func TestLiveRecords(t *testing.T) {
	item := func(text string) string {
		return fmt.Sprintf(`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}}`, text)
	}
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
		item("dropped 1"),
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}`,
		item("dropped 2"),
		`{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`,
		item("live"),
	}
	doc := strings.Join(lines, "\n") + "\n"
	run := func(max int) []int {
		var seen []int
		l := &LiveRecords{Fn: func(seq int, rec *Transcript) error { seen = append(seen, seq); return nil }, Max: max}
		if _, _, err := Stream(strings.NewReader(doc), Options{}, l.Record); err != nil {
			t.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	if got, want := run(0), []int{0, 2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("passed records %v, want %v", got, want)
	}
	// Room for two lines at most: the first item goes on before the compaction is read.
	if got, want := run(len(lines[0])+len(lines[1])+len(lines[2])-1), []int{0, 1, 2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("with little room, passed records %v, want %v", got, want)
	}
	cc := `{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}` + "\n"
	var seen int
	l := &LiveRecords{Fn: func(int, *Transcript) error { seen++; return nil }}
	if _, _, err := Stream(strings.NewReader(cc), Options{}, l.Record); err != nil || seen != 1 {
		t.Errorf("a Claude Code record was not passed at once (%d, %v)", seen, err)
	}
}
