package transcript

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// shellTexts are wrappers and near-wrappers: escapes, surrogates, bytes that are not UTF-8,
// white space, members repeated or of other types, and texts that are no valid JSON.
var shellTexts = []string{
	`{"output":"a\nb","metadata":{"exit_code":1,"duration_seconds":0.5}}`,
	`{"metadata":{"exit_code":0},"output":"x"}`,
	` {"output":"first","output":"second","metadata":{"exit_code":2},"metadata":{}}`,
	`{"output":"no metadata"}`,
	`{"metadata":{"exit_code":3}}`,
	`{"other":1}`,
	`"a string"`,
	`[{"output":"in an array"}]`,
	``,
	`{"output":`,
	`{"output":"tab\there \"quoted\" \\ back \/ slash \u00e9 \ud83d\ude00 lone \ud800 end","metadata":{"exit_code":0}}`,
	"{\"output\":\"not utf-8 \xff\xfe here\",\"metadata\":{\"exit_code\":0}}",
	"\t\r\n {\"output\" : \"spaced\" , \"metadata\" : { \"exit_code\" : 7 } }\n",
	`{"out\u0070ut":"escaped key","metadata":null}`,
	`{"output":42,"metadata":"text"}`,
	`{"output":true,"metadata":[1,2]}`,
	`{"output":null,"metadata":{"exit_code":-1.5e2}}`,
	`{"output":{"nested":"object"},"metadata":{"exit_code":0}}`,
	`{"output":"x","metadata":{"exit_code":0}} trailing`,
	`{"output":"unterminated}`,
	`{"output":"x",}`,
	"\x01{\"output\":\"control byte before\",\"metadata\":{}}",
	`{"output":"x" "metadata":{}}`,
	`{"a":{"output":"deeper"},"output":"top"}`,
	`{}`,
	`{ }`,
}

// ShellWrapper gives what the gjson walk gives (shellWrapperGJSON, the reference), every
// field of both Results, with offsets into text.
func TestShellWrapper(t *testing.T) {
	texts := append([]string(nil), shellTexts...)
	// The results of a generated Codex rollout: the wrapper as Codex writes it.
	tr, err := Parse(generated(t, "codex", 400<<10), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := 0
	for mi := range tr.Messages {
		for bi := range tr.Messages[mi].Blocks {
			if b := &tr.Messages[mi].Blocks[bi]; b.Kind == ToolResult {
				text := tr.BodyText(b)
				texts = append(texts, text)
				if strings.HasPrefix(text, `{"output":`) {
					wrapped++
				}
			}
		}
	}
	if wrapped == 0 {
		t.Fatal("the generated rollout has no wrapped output: the test tells little")
	}
	for _, text := range texts {
		checkShellWrapper(t, text)
	}
}

func checkShellWrapper(t *testing.T, text string) {
	t.Helper()
	out, meta := ShellWrapper(text)
	wantOut, wantMeta := shellWrapperGJSON(text)
	if !reflect.DeepEqual(out, wantOut) || !reflect.DeepEqual(meta, wantMeta) {
		t.Errorf("%q:\n output %#v\n metadata %#v\ngjson reads\n output %#v\n metadata %#v", clipped(text), out, meta, wantOut, wantMeta)
	}
	// (what gjson.Get and gjson's walk make of a broken text can differ)
	isObject := gjson.Parse(text).IsObject() && Valid(text)
	// ValidShellWrapper: ShellWrapper of a valid object, nothing of any other text
	vOut, vMeta, ok := ValidShellWrapper(text)
	switch {
	case ok != isObject:
		t.Errorf("%q: ValidShellWrapper says %v, Valid and an object %v", clipped(text), ok, isObject)
	case ok && (!reflect.DeepEqual(vOut, out) || !reflect.DeepEqual(vMeta, meta)):
		t.Errorf("%q: ValidShellWrapper reads\n output %#v\n metadata %#v\nShellWrapper\n output %#v\n metadata %#v", clipped(text), vOut, vMeta, out, meta)
	case !ok && (vOut.Exists() || vMeta.Exists()):
		t.Errorf("%q: not a valid object, yet ValidShellWrapper finds %#v, %#v", clipped(text), vOut, vMeta)
	}
	if g := gjson.Get(text, "output"); isObject && g.Raw != out.Raw {
		t.Errorf("%q: output %q, gjson.Get finds %q", clipped(text), out.Raw, g.Raw)
	}
	for _, r := range []gjson.Result{out, meta} {
		// (gjson's offsets into a broken text need not point at the value)
		if r.Exists() && Valid(text) && text[r.Index:r.Index+len(r.Raw)] != r.Raw {
			t.Errorf("%q: %q is not at offset %d", clipped(text), r.Raw, r.Index)
		}
	}
}

func clipped(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func FuzzShellWrapper(f *testing.F) {
	for _, s := range shellTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) { checkShellWrapper(t, text) })
}
