package transcript

import (
	"strings"
	"testing"
)

func TestExcerpts(t *testing.T) {
	doc := "{\"a\":1}\r\n\n{\"b\":22}\n{\"c\":333}"
	tr := &Transcript{Records: splitRecords(doc)}
	if got := []int{tr.Records[0].Next, tr.Records[1].Next, tr.Records[2].Next}; got[0] != 9 || got[1] != 19 || got[2] != len(doc) {
		t.Fatalf("Next = %v", got)
	}
	if got := tr.LineEnd(tr.Records[0].Span); got != 9 {
		t.Errorf("LineEnd of the first line = %d, want 9 (past \\r\\n)", got)
	}
	if got := tr.LineEnd(Span{Start: 3, End: 5}); got != 5 {
		t.Errorf("LineEnd where no line starts = %d, want the span's end", got)
	}
	tr.AddExcerpt(10, doc[10:19])
	tr.AddExcerpt(19, doc[19:])
	for _, s := range []Span{{10, 18}, {19, len(doc)}, {12, 15}, {19, 19}} {
		if got, want := tr.Slice(s), doc[s.Start:s.End]; got != want {
			t.Errorf("Slice(%v) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []Span{{0, 5}, {15, 21}, {9, 10}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "outside the text read") {
					t.Errorf("Slice(%v) outside the excerpts: recovered %v", s, r)
				}
			}()
			tr.Slice(s)
		}()
	}
	defer func() {
		if recover() == nil {
			t.Error("an overlapping excerpt was accepted")
		}
	}()
	tr.AddExcerpt(15, "x")
}
