package transcript

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// splitRecordsAfter keeps prev's records for the lines of the prefix a document shares
// with prev's and splits only the rest: it must give what splitRecords gives for the whole
// document, whatever the two share (a line cut in the middle, a last line without its line
// break, CRLF, blank lines), in separate memory or with the new bytes appended in place.
func TestSplitRecordsAfterIsSplitRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 1))
	pieces := []string{`{"a":1}`, `{"type":"user","b":"x y"}`, ``, `  `, "\t", `{"c":[1,2]}`, `{}`}
	breaks := []string{"\n", "\r\n", "\n\n", " \n"}
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			b.WriteString(breaks[rng.IntN(len(breaks))])
		}
		s := b.String()
		if rng.IntN(3) == 0 {
			s = strings.TrimRight(s, "\r\n ") // a last line without its line break
		}
		return s
	}
	for round := range 2000 {
		old := text(rng.IntN(12))
		cut := 0
		if len(old) > 0 {
			cut = rng.IntN(len(old) + 1)
		}
		doc := old[:cut] + text(rng.IntN(6))
		if rng.IntN(2) == 0 {
			doc = old + text(rng.IntN(6)) // a request that extends the one before
		}
		prev := &Transcript{Doc: old, Records: splitRecords(old)}
		same := CommonPrefix(old, doc)
		if want := naivePrefix(old, doc); same != want {
			t.Fatalf("round %d: CommonPrefix(%q, %q) = %d, want %d", round, old, doc, same, want)
		}
		check := func(how, doc string, same int) {
			got, kept := splitRecordsAfter(prev, doc, same)
			want := splitRecords(doc)
			if len(got) == 0 && len(want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d (%s): old %q, doc %q:\n got %+v\nwant %+v", round, how, old, doc, got, want)
			}
			for k := range kept {
				if prev.Records[k].Next > same {
					t.Fatalf("round %d (%s): record %d kept past the shared prefix", round, how, k)
				}
			}
		}
		check("apart", doc, same)
		// The same bytes with the new ones appended in the same memory: found at once.
		if strings.HasPrefix(doc, old) {
			buf := make([]byte, 0, len(doc)+8)
			buf = append(append(buf, old...), doc[len(old):]...)
			inPlace := string(buf) // (a copy: both strings below are views of buf)
			prev.Doc = unsafe.String(unsafe.SliceData(buf), len(old))
			doc := unsafe.String(unsafe.SliceData(buf), len(buf))
			if same := CommonPrefix(prev.Doc, doc); same != len(old) {
				t.Fatalf("round %d: commonPrefix in place = %d, want %d", round, same, len(old))
			}
			check("in place", doc, len(old))
			if doc != inPlace {
				t.Fatalf("round %d: the document changed", round)
			}
			prev.Doc = old
		}
	}
}

func naivePrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// commonPrefix compares in blocks: a difference in the last byte of a block, in the
// first of the next one, or past the last whole block is found where it is.
func TestCommonPrefixBlocks(t *testing.T) {
	a := strings.Repeat("x", 3*4096+100)
	for _, at := range []int{0, 1, 4095, 4096, 4097, 8191, 12287, 12288, 12300, len(a) - 1} {
		b := []byte(a)
		b[at] = 'y'
		if got := CommonPrefix(a, string(b)); got != at {
			t.Errorf("difference at %d: commonPrefix %d", at, got)
		}
	}
	if got := CommonPrefix(a, a[:5000]); got != 5000 {
		t.Errorf("a prefix of 5000: commonPrefix %d", got)
	}
}
