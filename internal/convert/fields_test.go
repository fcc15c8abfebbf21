package convert

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// gjsonMembers is what fieldLosses read before eachMember: gjson's walk, every value
// decoded.
func gjsonMembers(raw string) string {
	var b strings.Builder
	gjson.Parse(raw).ForEach(func(k, v gjson.Result) bool {
		isEmpty := v.Type == gjson.Null || v.Type == gjson.JSON && strings.TrimSpace(v.Raw[1:len(v.Raw)-1]) == ""
		fmt.Fprintf(&b, "%q %t\n", k.String(), isEmpty)
		return true
	})
	return b.String()
}

func members(raw string) string {
	var b strings.Builder
	eachMember(raw, func(name string, empty bool) { fmt.Fprintf(&b, "%q %t\n", name, empty) })
	return b.String()
}

// TestEachMember: eachMember names the members gjson's walk names, with the same
// emptiness, on every message and block of the samples and the corpus, and on objects
// written to trip it (escaped quotes and backslashes, nesting, odd spacing, escaped keys).
func TestEachMember(t *testing.T) {
	objects := []string{
		`{}`, ` { } `, `{"a":1}`, `{"a" : null , "b":[ ],"c":{ },"d":[1],"e":{"x":"}"}}`,
		`{"t":"a \"quoted\" \\ text\\","u":"\\\\","v":"x\\\"y"}`, `{"k\"ey":1,"\u0061b":"c"}`,
		"{\n\t\"a\"\t:\r\n\"b\"\n}", `{"n":-1.5e3,"t":true,"f":false,"z":null}`,
		`{"deep":[{"a":[{"b":"]}"}]}],"after":""}`, `{"dup":1,"dup":2}`,
	}
	for _, f := range append(invariant.Samples(t), invariant.JSONLDocuments(t, t.TempDir())...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{})
		if err != nil {
			continue
		}
		var blocks func(bs []transcript.Block)
		blocks = func(bs []transcript.Block) {
			for bi := range bs {
				objects = append(objects, tr.Slice(bs[bi].Span))
				blocks(bs[bi].Parts)
			}
		}
		for mi := range tr.Messages {
			objects = append(objects, tr.Slice(tr.Messages[mi].Span))
			blocks(tr.Messages[mi].Blocks)
		}
	}
	n := 0
	for _, raw := range objects {
		if !strings.HasPrefix(strings.TrimSpace(raw), "{") {
			continue
		}
		n++
		if got, want := members(raw), gjsonMembers(raw); got != want {
			t.Fatalf("%.300q:\n%s\nwant\n%s", raw, got, want)
		}
	}
	if n < 1000 {
		t.Fatalf("only %d objects compared", n)
	}
}
