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
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
		userItem("dropped 1"),
		`{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}`,
		userItem("dropped 2"),
		`{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`,
		userItem("live"),
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

// TestLastCompaction: the last compacted record is found from the end, across the reading
// chunks, past a "compacted" that is no record's type; LiveRecords then forgets at once
// the records before it that it drops.
func TestLastCompaction(t *testing.T) {
	filler := func(n int) string {
		return fmt.Sprintf(`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}}`, strings.Repeat("x", n))
	}
	compacted := `{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`
	for _, tail := range []int{10, 1<<20 - 40, 1<<20 - 20, 1 << 20, 3 << 20} {
		lines := []string{
			`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
			compacted,
			filler(2 << 20),
			compacted, // the last
			`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","status":"compacted","content":[{"type":"input_text","text":"say \"compacted\""}]}}`,
			filler(tail),
		}
		doc := strings.Join(lines, "\n") + "\n"
		want := int64(strings.LastIndex(doc, compacted))
		at, err := LastCompaction(strings.NewReader(doc), int64(len(doc)))
		if err != nil || at != want {
			t.Fatalf("tail %d: LastCompaction = %d, %v; want %d", tail, at, err, want)
		}
		var seen []int
		l := &LiveRecords{Fn: func(seq int, rec *Transcript) error { seen = append(seen, seq); return nil }, Compaction: int(at), Max: 100}
		if _, _, err := Stream(strings.NewReader(doc), Options{}, l.Record); err != nil {
			t.Fatal(err)
		}
		l.Flush()
		if want := []int{0, 3, 4, 5}; !slices.Equal(seen, want) {
			t.Errorf("tail %d: passed records %v, want %v", tail, seen, want)
		}
	}
	none := filler(100) + "\n"
	if at, err := LastCompaction(strings.NewReader(none), int64(len(none))); at != -1 || err != nil {
		t.Errorf("a rollout without a compaction: %d, %v", at, err)
	}
}

// TestLiveRecordsKnown: with the last compaction known before the first record, every
// record goes on as it is read (none waits for Flush), but for those before the
// compaction that it drops; with none known to come, every record goes on.
func TestLiveRecordsKnown(t *testing.T) {
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
		userItem("dropped"),
		`{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`,
		userItem("live 1"),
		userItem("live 2"),
	}
	doc := strings.Join(lines, "\n") + "\n"
	compaction := strings.Index(doc, lines[2])
	for _, tc := range []struct {
		compaction int
		want       []int
	}{
		{compaction, []int{0, 2, 3, 4}},
		{0, []int{0, 1, 2, 3, 4}},
	} {
		var seen []int
		l := &LiveRecords{Fn: func(seq int, rec *Transcript) error { seen = append(seen, seq); return nil }, Compaction: tc.compaction, Known: true}
		if _, _, err := Stream(strings.NewReader(doc), Options{}, l.Record); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, tc.want) {
			t.Errorf("compaction at %d: records passed while reading %v, want %v", tc.compaction, seen, tc.want)
		}
		if err := l.Flush(); err != nil || !slices.Equal(seen, tc.want) {
			t.Errorf("compaction at %d: Flush passed more: %v, %v", tc.compaction, seen, err)
		}
	}
}

// TestLiveRecordsReread: with Reread, the records held past Max wait without their lines
// and are read again only when still live; Fn gets every live record, with its line.
func TestLiveRecordsReread(t *testing.T) {
	lines := []string{
		`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
		userItem("dropped 1"), userItem("dropped 2"),
		`{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`,
		userItem("live 1"), userItem("live 2"), userItem("live 3"),
	}
	doc := strings.Join(lines, "\n") + "\n"
	var seen []int
	var reread []Span
	l := &LiveRecords{Max: 1, Fn: func(seq int, rec *Transcript) error {
		if rec.Doc != lines[seq] {
			t.Errorf("record %d came with %q", seq, rec.Doc)
		}
		seen = append(seen, seq)
		return nil
	}, Reread: func(s Span) (string, error) { reread = append(reread, s); return doc[s.Start:s.End], nil }}
	if _, _, err := Stream(strings.NewReader(doc), Options{}, l.Record); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 0 {
		t.Errorf("records %v went on before Flush", seen)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 3, 4, 5, 6}; !slices.Equal(seen, want) {
		t.Errorf("passed records %v, want %v", seen, want)
	}
	if len(reread) != 5 { // every live record: none fits in Max
		t.Errorf("read %d lines again, want 5", len(reread))
	}
}

// userItem is a Codex rollout's record of a user message with text.
func userItem(text string) string {
	return fmt.Sprintf(`{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}}`, text)
}

// TestNoIDsCompacted: in a log whose records have no ids, read in file order, a compact
// boundary starts the conversation anew: what comes before it is not live (FuzzSummarize
// found ctx-summarize's summary of such a log read back with the summarized messages).
func TestNoIDsCompacted(t *testing.T) {
	doc := `{"type":"user","message":{"role":"user","content":"old"}}
{"type":"assistant","message":{"role":"assistant","content":"old answer"}}
{"type":"system","subtype":"compact_boundary","content":"compacted","uuid":"b1","parentUuid":null}
{"type":"user","message":{"role":"user","content":"summary"},"isCompactSummary":true,"uuid":"s1","parentUuid":"b1"}
{"type":"user","message":{"role":"user","content":"new"},"uuid":""}
`
	tr, err := Parse([]byte(doc), Options{Format: ClaudeCode})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 2 || !tr.Messages[0].Summary {
		t.Fatalf("%d messages live, want the summary and the new one", len(tr.Messages))
	}
}

// TestLiveRecordsKeepPrior: with KeepPrior, the records of the conversation the last
// compaction replaced (since the compaction before it) go on too, when it records a
// figure, whether the last compaction is known ahead (Known) or found as the records come;
// those a figure-less conversation or an earlier one held are forgotten.
func TestLiveRecordsKeepPrior(t *testing.T) {
	figure := `{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":0,"output_tokens":5}}}}`
	compacted := `{"timestamp":"t","type":"compacted","payload":{"message":"summary"}}`
	for _, c := range []struct {
		name  string
		lines []string
		want  []int
	}{
		{"figure before the last", []string{
			`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
			userItem("before both"), figure, compacted, // 1-3
			userItem("between"), figure, compacted, // 4-6
			userItem("live"), // 7
		}, []int{0, 2, 3, 4, 5, 6, 7}},
		{"no figure before the last", []string{
			`{"timestamp":"t","type":"session_meta","payload":{"id":"x","instructions":"keep"}}`,
			userItem("before both"), figure, compacted,
			userItem("between"), compacted,
			userItem("live"),
		}, []int{0, 2, 5, 6}},
	} {
		doc := strings.Join(c.lines, "\n") + "\n"
		last := strings.LastIndex(doc, compacted)
		for _, known := range []bool{false, true} {
			var seen []int
			l := &LiveRecords{Fn: func(seq int, rec *Transcript) error { seen = append(seen, seq); return nil }, KeepPrior: true}
			if known {
				l.Compaction, l.Known = last, true
			}
			if _, _, err := Stream(strings.NewReader(doc), Options{}, l.Record); err != nil {
				t.Fatal(err)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(seen)
			if !slices.Equal(seen, c.want) {
				t.Errorf("%s, known %v: passed %v, want %v", c.name, known, seen, c.want)
			}
		}
	}
}
