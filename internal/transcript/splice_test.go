package transcript

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSpliceMatchesApply: splicing edits into a document read a few bytes at a time gives
// what Apply gives, whether the regions are the edits themselves or the records that hold
// them, and the edit callback sees each region's own bytes.
func TestSpliceMatchesApply(t *testing.T) {
	doc := branchy()
	tr, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var edits []Edit
	for _, m := range tr.Messages {
		for _, b := range m.Blocks {
			if !b.Body.IsZero() {
				edits = append(edits, Edit{Span: b.Body, With: Quote("<" + tr.BodyText(&b) + ">")})
			}
		}
	}
	if len(edits) < 3 {
		t.Fatalf("only %d edits", len(edits))
	}
	want, err := tr.Apply(edits)
	if err != nil {
		t.Fatal(err)
	}
	byEdit := make([]Span, len(edits))
	for i, e := range edits {
		byEdit[i] = e.Span
	}
	var byRecord []Span
	for _, r := range tr.Records {
		byRecord = append(byRecord, r.Span)
	}
	for name, regions := range map[string][]Span{"edits": byEdit, "records": byRecord, "none": nil} {
		var out bytes.Buffer
		n, err := Splice(iotest.HalfReader(strings.NewReader(doc)), &out, regions, func(i int, text string, base int) ([]Edit, error) {
			if text != doc[base:base+len(text)] || (Span{base, base + len(text)}) != regions[i] {
				t.Fatalf("%s: region %d is %q at %d", name, i, text, base)
			}
			var in []Edit
			for _, e := range edits {
				if e.Span.Start >= base && e.Span.End <= base+len(text) {
					in = append(in, e)
				}
			}
			return in, nil
		})
		switch {
		case err != nil:
			t.Fatalf("%s: %v", name, err)
		case name == "none":
			if out.String() != doc || n != 0 {
				t.Errorf("no regions: %d edits, output differs from the input", n)
			}
		case out.String() != string(want) || n != len(edits):
			t.Errorf("%s: %d edits; output differs from Apply's", name, n)
		}
	}
}

func TestSpliceErrors(t *testing.T) {
	doc := "0123456789"
	none := func(int, string, int) ([]Edit, error) { return nil, nil }
	if _, err := Splice(strings.NewReader(doc), io.Discard, []Span{{5, 12}}, none); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a region past the end: %v", err)
	}
	if _, err := Splice(strings.NewReader(doc), io.Discard, []Span{{5, 6}, {2, 3}}, none); err == nil {
		t.Error("regions out of order: no error")
	}
	outside := func(int, string, int) ([]Edit, error) { return []Edit{{Span: Span{0, 1}, With: "x"}}, nil }
	if _, err := Splice(strings.NewReader(doc), io.Discard, []Span{{5, 6}}, outside); err == nil {
		t.Error("an edit outside its region: no error")
	}
	boom := errors.New("boom")
	fails := func(int, string, int) ([]Edit, error) { return nil, boom }
	if _, err := Splice(strings.NewReader(doc), io.Discard, []Span{{1, 2}}, fails); err != boom {
		t.Errorf("the callback's error: %v", err)
	}
}
