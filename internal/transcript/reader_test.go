package transcript

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// sameAsGjson fails unless Parse reads doc exactly as the gjson-based readers it replaced
// (gjson_reference_test.go) did: the same error, or the same transcript, field for field.
func sameAsGjson(t *testing.T, name string, doc []byte, o Options) {
	t.Helper()
	got, gerr := Parse(doc, o)
	want, werr := gjParse(doc, o)
	var pe *Error
	switch {
	case gerr != nil && werr == nil && errors.As(gerr, &pe) && pe.rule:
		return // a rule of Parse's own, which the old reader did not have
	case (gerr == nil) != (werr == nil):
		t.Fatalf("%s %+v: error %v, gjson reader %v", name, o, gerr, werr)
	case gerr != nil:
		if gerr.Error() != werr.Error() {
			t.Fatalf("%s %+v: error %q, gjson reader %q", name, o, gerr, werr)
		}
		return
	}
	got.memo = nil // what Reparse reuses, which the old reader did not keep
	if reflect.DeepEqual(got, want) {
		return
	}
	if got.Format != want.Format || len(got.Messages) != len(want.Messages) {
		t.Fatalf("%s %+v: %s with %d messages, gjson reader %s with %d", name, o, got.Format, len(got.Messages), want.Format, len(want.Messages))
	}
	for i := range got.Messages {
		if !reflect.DeepEqual(got.Messages[i], want.Messages[i]) {
			t.Fatalf("%s %+v: message %d\n got %+v\nwant %+v", name, o, i, got.Messages[i], want.Messages[i])
		}
	}
	g, w := *got, *want
	g.Messages, w.Messages = nil, nil
	t.Fatalf("%s %+v: transcript\n got %+v\nwant %+v", name, o, g, w)
}

// readerOptions are the ways the documents are read in the differential tests.
func readerOptions(name string) []Options {
	os := []Options{{Name: name}, {Name: name, Sidechains: true}, {Name: name, AllThreads: true}}
	for _, f := range Formats {
		os = append(os, Options{Name: name, Format: f})
	}
	return os
}

func TestReaderMatchesGjsonOnSamples(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json*"))
	if len(files) == 0 {
		t.Fatal("no sample documents in testdata")
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range readerOptions(f) {
			sameAsGjson(t, f, doc, o)
		}
	}
}

func TestReaderMatchesGjsonOnGenerated(t *testing.T) {
	for _, format := range testgen.Formats {
		for _, seed := range []int64{1, 2, 3} {
			var b strings.Builder
			if err := testgen.Generate(&b, testgen.Options{Format: format, Size: 300 << 10, Seed: seed, Images: seed != 2}); err != nil {
				t.Fatal(err)
			}
			for _, o := range readerOptions(format) {
				sameAsGjson(t, format, []byte(b.String()), o)
			}
		}
	}
	for name, doc := range map[string]string{
		"branchy": branchy(), "branchy crlf": strings.ReplaceAll(branchy(), "\n", "\r\n"),
		"padded array":  "\n  [{\"role\":\"user\",\"content\":\"hi\"}]  \n",
		"padded object": " \t{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\\u00e9\"}]}]}\n\n",
	} {
		for _, o := range readerOptions(name) {
			sameAsGjson(t, name, []byte(doc), o)
		}
	}
}

func TestReaderMatchesGjsonOnCorpus(t *testing.T) {
	for _, f := range corpusFiles(t) {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sameAsGjson(t, f, doc, Options{Name: f})
		sameAsGjson(t, f, doc, Options{Name: f, Sidechains: true})
	}
}

// FuzzReaderMatchesGjson holds Parse to the gjson-based readers on any input: documents
// that break the rules (fields of the wrong type, escaped keys, odd white space) must read
// the same, unless Parse refuses them on a rule of its own (duplicate keys, non-messages).
func FuzzReaderMatchesGjson(f *testing.F) {
	seeds := []string{
		`{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{"a":[1,{"b":"}"}]}},{"type":"thinking","thinking":"x"},{"type":"redacted_thinking","data":"QUJD"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"TRUE","content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},{"type":"document","source":{"type":"text","data":"doc"}}]}],"tools":[{"name":"Read"}],"model":"claude-x"}`,
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR","detail":"low"}},{"type":"refusal","refusal":"no"}]},{"role":"assistant","reasoning_content":"r","refusal":"x","tool_calls":[{"type":"function","id":"a","function":{"name":"f","arguments":"{}"}},{"type":"custom","id":"b","custom":{"name":"g","input":"raw"}}],"function_call":{"name":"h","arguments":"{}"}},{"role":"tool","tool_call_ids":["a","b"],"content":"r"},{"role":"function","name":"h","content":[{"type":"text","text":"t"}]}]`,
		`{"instructions":"i","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"content":"x","encrypted_content":null},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"local_shell_call","call_id":"d","action":{"command":["ls"]}},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]},{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png","detail":"high"}]}]}`,
		`{"input":"just text","instructions":["odd"]}`,
		`{"history":[{"role":"user","content":{"a":"b"}}],"model":"gpt"}`,
		"{\"type\":\"user\",\"uuid\":\"a\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"assistant\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"isSidechain\":0,\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"model\":\"claude\",\"usage\":{\"input_tokens\":\"12\",\"output_tokens\":3.5,\"cache_read_input_tokens\":1e2},\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}]}}\n{\"type\":\"user\",\"uuid\":\"c\",\"parentUuid\":\"b\",\"isCompactSummary\":\"true\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"ok\"}]}}\n",
		"{\"timestamp\":\"2025-01-01T00:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"base_instructions\":{\"text\":\"be good\"}}}\n{\"timestamp\":\"t\",\"type\":\"turn_context\",\"payload\":{\"model\":\"gpt-5\"}}\n{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"x\"}}\n{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"last_token_usage\":{\"input_tokens\":5,\"cached_input_tokens\":2,\"output_tokens\":1},\"model_context_window\":1000}}}\n{\"timestamp\":\"t\",\"type\":\"compacted\",\"payload\":{\"replacement_history\":[{\"type\":\"message\",\"role\":\"user\",\"content\":\"s\"}]}}\n",
		`{"messages":[{"role":"user","role":"assistant","content":"a","content":[]},{"r\u006fle":"user","content":[{"type":"text","text":"\ud83d\ude00","type":"image"}]}]}`,
		`{"messages": [}`, "", "\x00", "[1,2,3]", `{"history":[{"role":"user"}]}`, `[{"role":"tool","tool_calls":"x","content":null}]`,
	}
	for _, s := range seeds {
		f.Add(s, "", uint8(0))
	}
	f.Add(seeds[0], "messages", uint8(2))
	f.Add(seeds[0], "messages.#(role==\"user\")", uint8(2))
	f.Fuzz(func(t *testing.T, doc, path string, mode uint8) {
		o := Options{Sidechains: mode&1 != 0}
		if mode&2 != 0 {
			// Some gjson paths take gjson a long time to evaluate; most runs go without.
			o.Path = path
		}
		if k := int(mode>>2) % (len(Formats) + 1); k > 0 {
			o.Format = Formats[k-1]
		}
		sameAsGjson(t, "fuzz", []byte(doc), o)
	})
}
