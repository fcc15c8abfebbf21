package transcript

import (
	"reflect"
	"testing"
)

func TestProtected(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`
	got := mustParse(t, doc, Options{}).Protected()
	if want := map[int]bool{0: true, 4: true, 5: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Protected = %v, want %v", got, want)
	}
	if got := mustParse(t, `[{"role":"user","content":"only"}]`, Options{}).Protected(); !reflect.DeepEqual(got, map[int]bool{0: true}) {
		t.Errorf("one message: %v", got)
	}
}
