package heldout

import (
	"fmt"
	"testing"
)

// The split is a function of the base name only, and close to one in three.
func TestSplitByName(t *testing.T) {
	if Test("a/b/session.jsonl") != Test("/elsewhere/session.jsonl") {
		t.Error("the split depends on the directory")
	}
	var paths []string
	for i := range 3000 {
		paths = append(paths, fmt.Sprintf("dir/file-%d.out", i))
	}
	train, test := Split(paths)
	if len(train)+len(test) != len(paths) || len(test) < 900 || len(test) > 1100 {
		t.Errorf("%d training, %d test of %d", len(train), len(test), len(paths))
	}
	for _, p := range test {
		if !Test(p) {
			t.Fatalf("%s in the test half but Test says no", p)
		}
	}
}
