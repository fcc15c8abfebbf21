package transcript

import (
	"reflect"
	"strings"
	"testing"
)

// recordValue finds, from the end of a valid text, the value valueEnd finds by walking it;
// on a text that is no valid JSON, the members it reads are still the walk's.
func TestRecordValue(t *testing.T) {
	walked := func(text string, base int) jval {
		i := firstNonSpace(text)
		if i < 0 {
			return jval{}
		}
		return jval{text[i:valueEnd(text, i)], base + i}
	}
	var texts []string
	for _, f := range []string{"codex", "claude-code"} {
		texts = append(texts, strings.Split(string(generated(t, f, 200<<10)), "\n")...)
	}
	texts = append(texts, " \t{\"a\":1}\r\n", "{}", "  ", "\"s\" ", "[1, 2] ", "1",
		`{"a":1} trailing`, `{"a":{"b":1}`, `{"a":1]  , "b":2}`, `{"a":1}, "b":2}`, `{"a":"x\"}"} {"b":2}`)
	for _, text := range texts {
		got, want := recordValue(text, 5), walked(text, 5)
		if Valid(text) && got != want {
			t.Errorf("%q: recordValue %q at %d, the walk %q at %d", clipped(text), clipped(got.raw), got.at, clipped(want.raw), want.at)
		}
		if got.at != want.at || !sameMembers(got, want) {
			t.Errorf("%q: the members of %q differ from those of %q", clipped(text), clipped(got.raw), clipped(want.raw))
		}
	}
}

func sameMembers(a, b jval) bool {
	var am, bm []jval
	if a.isObject() {
		a.members(func(k string, v jval) bool { am = append(am, jval{k, 0}, v); return true })
	}
	if b.isObject() {
		b.members(func(k string, v jval) bool { bm = append(bm, jval{k, 0}, v); return true })
	}
	return reflect.DeepEqual(am, bm)
}
