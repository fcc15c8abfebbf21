package transcript

import (
	"bufio"
	"strings"
	"testing"
)

func TestHeadModel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n" +
			`{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[]}}` + "\n" +
			`{"type":"assistant","message":{"model":"claude-opus-4-7","content":[]}}` + "\n", "claude-opus-4-7"},
		// A "model" key inside a string is escaped, so it is not the record's.
		{`{"type":"assistant","message":{"model":"claude-haiku-4-5","content":[{"type":"text","text":"{\"model\":\"gpt-5\"}"}]}}` + "\n", "claude-haiku-4-5"},
		{`{"type":"user","message":{"role":"user","content":"no model"}}` + "\n", ""},
		{`{"model":"` + strings.Repeat("x", 200) + `"}`, ""},
	} {
		_, rd, err := Sniff(strings.NewReader(c.in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := HeadModel(rd); got != c.want {
			t.Errorf("HeadModel(%.60q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := HeadModel(bufio.NewReader(strings.NewReader(`{"model":"claude-x"}`))); got != "" {
		t.Errorf("nothing read ahead: %q", got)
	}
}
