package redact

import (
	"reflect"
	"strings"
	"testing"
)

// scanEach is scan as a reference: every literal compared at every place, in the order
// the literals were added.
func scanEach(w []byte) (perDetector [][]int, names []int) {
	x := literals()
	perDetector = make([][]int, len(detectors()))
	for i := 0; i+1 < len(w); i++ {
		for k := range x.lits {
			l := &x.lits[k]
			if !hasPrefix(w[i:], l.s, l.fold) {
				continue
			}
			if l.owner < 0 {
				if n := len(names); n == 0 || names[n-1] != i {
					names = append(names, i)
				}
				continue
			}
			perDetector[l.owner] = append(perDetector[l.owner], i)
		}
	}
	return perDetector, names
}

// scan finds what comparing every literal everywhere finds, on the planted secrets and
// look-alikes and on each literal in both cases, cut short and run together.
func TestScanFindsEveryLiteral(t *testing.T) {
	var texts []string
	for _, c := range readPlanted(t) {
		texts = append(texts, c.Text)
	}
	var all strings.Builder
	for _, l := range literals().lits {
		for _, s := range []string{l.s, strings.ToUpper(l.s), strings.ToLower(l.s), l.s[:len(l.s)-1]} {
			texts = append(texts, s, "x"+s+"y")
			all.WriteString(s)
		}
	}
	texts = append(texts, all.String(), "", "s", "Se", "sK")
	found := 0
	for _, text := range texts {
		per, names := scan([]byte(text))
		wantPer, wantNames := scanEach([]byte(text))
		if !reflect.DeepEqual(per, wantPer) || !reflect.DeepEqual(names, wantNames) {
			t.Errorf("%q: scan finds %v %v, every literal compared everywhere %v %v", text, per, names, wantPer, wantNames)
		}
		found += len(names)
		for _, p := range per {
			found += len(p)
		}
	}
	if found == 0 {
		t.Fatal("no literal found: the test tells little")
	}
}
