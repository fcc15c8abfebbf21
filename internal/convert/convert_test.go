package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func convert(t testing.TB, doc []byte, from, to transcript.Format) *Result {
	t.Helper()
	tr, err := transcript.Parse(doc, transcript.Options{Format: from, Name: "doc"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	res, err := Convert(tr, to)
	if err != nil {
		t.Fatalf("convert %s -> %s: %v", tr.Format, to, err)
	}
	return res
}

// TestMappings pins the shape of each direction on a small conversation with a system
// prompt, text, an image, a tool call and its result.
func TestMappings(t *testing.T) {
	anthropic := `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief.","tools":[{"name":"ls","description":"List files.","input_schema":{"type":"object","properties":{"dir":{"type":"string"}}}}],"messages":[{"role":"user","content":[{"type":"text","text":"What is here?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}}]},{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"."}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.go b.go"}]},{"role":"assistant","content":"Two Go files."}]}`
	openai := `{"max_tokens":1024,"tools":[{"type":"function","function":{"name":"ls","description":"List files.","parameters":{"type":"object","properties":{"dir":{"type":"string"}}}}}],"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"What is here?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]},{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]},{"role":"tool","tool_call_id":"toolu_1","content":"a.go b.go"},{"role":"assistant","content":"Two Go files."}]}`
	responses := `{"max_output_tokens":1024,"instructions":"Be brief.","tools":[{"type":"function","name":"ls","description":"List files.","parameters":{"type":"object","properties":{"dir":{"type":"string"}}},"strict":false}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is here?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0K"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]},{"type":"function_call","call_id":"toolu_1","name":"ls","arguments":"{\"dir\":\".\"}"},{"type":"function_call_output","call_id":"toolu_1","output":"a.go b.go"},{"type":"message","role":"assistant","content":"Two Go files."}]}`
	anthropic, openai, responses = anthropic+"\n", openai+"\n", responses+"\n"
	if got := string(convert(t, []byte(anthropic), "", transcript.OpenAI).Doc); got != openai {
		t.Errorf("anthropic -> openai:\n got %s\nwant %s", got, openai)
	}
	if got := string(convert(t, []byte(anthropic), "", transcript.Responses).Doc); got != responses {
		t.Errorf("anthropic -> responses:\n got %s\nwant %s", got, responses)
	}
	// Back to Anthropic: the same conversation (the model stays with its provider).
	back := strings.Replace(anthropic, `"model":"claude-sonnet-4-5",`, "", 1)
	for name, doc := range map[string]string{"openai": openai, "responses": responses} {
		res := convert(t, []byte(doc), "", transcript.Anthropic)
		if string(res.Doc) != back {
			t.Errorf("%s -> anthropic:\n got %s\nwant %s", name, res.Doc, back)
		}
		if len(res.Losses) > 0 || len(res.Repaired) > 0 {
			t.Errorf("%s -> anthropic: losses %v, repaired %v", name, res.Losses, res.Repaired)
		}
	}
}

// TestToolStrictness: whether a tool's arguments must match its schema survives the trip
// between the formats, whose defaults differ (the Responses API enforces the schema unless
// told not to; Chat Completions only when told to): each writer spells out the value that
// is not its format's default.
func TestToolStrictness(t *testing.T) {
	schema := `{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"],"additionalProperties":false}`
	chatTool := func(strict string) string {
		return `{"tools":[{"type":"function","function":{"name":"ls","parameters":` + schema + strict + `}}],"messages":[{"role":"user","content":"hi"}]}` + "\n"
	}
	respTool := func(strict string) string {
		return `{"tools":[{"type":"function","name":"ls","parameters":` + schema + strict + `}],"input":[{"type":"message","role":"user","content":"hi"}]}` + "\n"
	}
	for _, c := range []struct{ name, doc, want string }{
		{"chat, not strict", chatTool(""), respTool(`,"strict":false`)},
		{"chat, strict", chatTool(`,"strict":true`), respTool("")},
		{"responses, strict by default", respTool(""), chatTool(`,"strict":true`)},
		{"responses, not strict", respTool(`,"strict":false`), chatTool("")},
	} {
		to := transcript.Responses
		if strings.Contains(c.doc, `"input"`) {
			to = transcript.OpenAI
		}
		res := convert(t, []byte(c.doc), "", to)
		if string(res.Doc) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, res.Doc, c.want)
			continue
		}
		back := transcript.OpenAI
		if to == transcript.OpenAI {
			back = transcript.Responses
		}
		if again := convert(t, res.Doc, "", back); string(again.Doc) != c.doc {
			t.Errorf("%s: the round trip gives\n%s", c.name, again.Doc)
		}
	}
}

// TestTemperatureToAnthropic: Anthropic takes temperatures up to 1; a higher OpenAI one is
// sent as 1 and reported; one in range crosses as written.
func TestTemperatureToAnthropic(t *testing.T) {
	for _, c := range []struct{ in, want, loss string }{
		{"1.5", "1", "temperature"},
		{"0.7", "0.7", ""},
		{"1", "1", ""},
	} {
		doc := `{"temperature":` + c.in + `,"messages":[{"role":"user","content":"hi"}]}`
		res := convert(t, []byte(doc), "", transcript.Anthropic)
		if got := gjson.GetBytes(res.Doc, "temperature").Raw; got != c.want {
			t.Errorf("temperature %s: sent as %s, want %s", c.in, got, c.want)
		}
		var kinds []string
		for _, l := range res.Losses {
			kinds = append(kinds, l.Kind)
		}
		if got := strings.Join(kinds, ","); got != c.loss {
			t.Errorf("temperature %s: losses %q, want %q", c.in, got, c.loss)
		}
	}
}

// TestToolChoiceAndRequestFields: tool_choice, parallel_tool_calls and stream cross
// between the three spellings; any other member of a request body's root is reported as
// left out, never dropped silently.
func TestToolChoiceAndRequestFields(t *testing.T) {
	chat := `{"tool_choice":{"type":"function","function":{"name":"ls"}},"parallel_tool_calls":false,"stream":true,"response_format":{"type":"json_object"},"seed":3,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		doc  string
		to   transcript.Format
		want string
		lost int
	}{
		{chat, transcript.Anthropic, `{"tool_choice":{"type":"tool","name":"ls","disable_parallel_tool_use":true},"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 2},
		{chat, transcript.Responses, `{"tool_choice":{"type":"function","name":"ls"},"parallel_tool_calls":false,"stream":true,"input":[{"type":"message","role":"user","content":"hi"}]}`, 2},
		{`{"tool_choice":{"type":"tool","name":"ls","disable_parallel_tool_use":true},"stream":true,"messages":[{"role":"user","content":"hi"}]}`, transcript.OpenAI, `{"tool_choice":{"type":"function","function":{"name":"ls"}},"parallel_tool_calls":false,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 0},
		{`{"max_tokens":5,"tool_choice":{"type":"any"},"metadata":{"user_id":"u"},"messages":[{"role":"user","content":"hi"}]}`, transcript.OpenAI, `{"max_tokens":5,"tool_choice":"required","messages":[{"role":"user","content":"hi"}]}`, 1},
		{`{"tool_choice":"none","input":[{"role":"user","content":"hi"}]}`, transcript.Anthropic, `{"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"}]}`, 0},
	} {
		res := convert(t, []byte(c.doc), "", c.to)
		if got := strings.TrimSpace(string(res.Doc)); got != c.want {
			t.Errorf("%s to %s:\n got %s\nwant %s", c.doc, c.to, got, c.want)
		}
		lost := 0
		for _, l := range res.Losses {
			if l.Kind == "request-field" {
				lost = l.Count
			}
		}
		if lost != c.lost {
			t.Errorf("%s to %s: %d request fields reported left out, want %d", c.doc, c.to, lost, c.lost)
		}
	}
}

// TestCodexStringSummary: a Codex compacted record that holds only its summary (no
// replacement history) is a user message in the request, not a bare string item.
func TestCodexStringSummary(t *testing.T) {
	doc := `{"timestamp":"2025-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}}
{"timestamp":"2025-01-01T00:00:01Z","type":"compacted","payload":{"message":"We fixed the build."}}
{"timestamp":"2025-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}}
`
	for to, want := range map[transcript.Format]string{
		transcript.Responses: `{"input":[{"type":"message","role":"user","content":"We fixed the build."},{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}]}`,
		transcript.Anthropic: `{"messages":[{"role":"user","content":[{"type":"text","text":"We fixed the build."},{"type":"text","text":"next"}]}]}`,
	} {
		res := convert(t, []byte(doc), "", to)
		if got := strings.TrimSpace(string(res.Doc)); got != want || len(res.Repaired) > 0 {
			t.Errorf("to %s:\n got %s (repaired %v)\nwant %s", to, got, res.Repaired, want)
		}
	}
}

// TestFileImages: an image given by the id of an uploaded file goes only to the provider
// that holds the file, in a format that takes file ids; anywhere else a text note stands
// in its place and the loss is reported, rather than an image with no data.
func TestFileImages(t *testing.T) {
	anthropic := `{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}`
	responses := `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","file_id":"file-2"}]}]}`
	for _, c := range []struct {
		doc  string
		to   transcript.Format
		want string // in the output
		lost bool
	}{
		{anthropic, transcript.OpenAI, `{"type":"text","text":"[image not included: file file_1 was uploaded to another provider]"}`, true},
		{anthropic, transcript.Responses, `{"type":"input_text","text":"[image not included: file file_1 was uploaded to another provider]"}`, true},
		{responses, transcript.Anthropic, `{"type":"text","text":"[image not included: file file-2 was uploaded to another provider]"}`, true},
		{responses, transcript.OpenAI, `{"type":"text","text":"[image not included: file file-2 cannot be sent by id in this format]"}`, true},
		{responses, transcript.Responses, `{"type":"input_image","file_id":"file-2"}`, false},
	} {
		res := convert(t, []byte(c.doc), "", c.to)
		if !strings.Contains(string(res.Doc), c.want) {
			t.Errorf("%.40s... to %s: no %s in\n%s", c.doc, c.to, c.want, res.Doc)
		}
		lost := false
		for _, l := range res.Losses {
			lost = lost || l.Kind == "image-file"
		}
		if lost != c.lost {
			t.Errorf("%.40s... to %s: image-file loss reported %t, want %t", c.doc, c.to, lost, c.lost)
		}
	}
}

// TestLossesAreReported: what a target cannot hold is counted by kind, never dropped
// silently.
func TestLossesAreReported(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"c2ln"},{"type":"tool_use","id":"t1","name":"shot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"failed"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}]}`
	res := convert(t, []byte(doc), "", transcript.OpenAI)
	got := map[string]int{}
	for _, l := range res.Losses {
		got[l.Kind] = l.Count
	}
	for _, kind := range []string{"reasoning", "error-flag", "image-in-tool-result"} {
		if got[kind] != 1 {
			t.Errorf("loss %s = %d, want 1 (all: %v)", kind, got[kind], res.Losses)
		}
	}
	// Responses takes an image in an output, and Anthropic takes it all.
	res = convert(t, []byte(doc), "", transcript.Responses)
	for _, l := range res.Losses {
		if l.Kind == "image-in-tool-result" {
			t.Errorf("responses: image in a result reported lost")
		}
	}
	if res := convert(t, []byte(doc), "", transcript.Anthropic); len(res.Losses) > 0 {
		t.Errorf("anthropic -> anthropic lost %v", res.Losses)
	}
}

// withoutToolNames removes the name of every tool message of a Chat Completions request.
func withoutToolNames(t *testing.T, doc []byte) []byte {
	t.Helper()
	msgs := gjson.GetBytes(doc, "messages").Array()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").String() == "tool" && msgs[i].Get("name").Exists() {
			var err error
			if doc, err = sjson.DeleteBytes(doc, fmt.Sprintf("messages.%d.name", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return doc
}

// TestRoundTrips: a conversation converted to Anthropic, then to OpenAI Chat Completions
// or Responses and back, comes back byte for byte whenever the middle step reported no
// loss and the way back needed no repair (ids reused across turns, for instance, must be
// renamed for Anthropic) — over the samples and every corpus file. The same for
// OpenAI -> Anthropic -> OpenAI on the OpenAI documents.
func TestRoundTrips(t *testing.T) {
	files := append(invariant.Samples(t), corpusOrNone(t)...)
	exact, skipped := map[string]int{}, map[string]int{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{Name: path})
		if err != nil || len(tr.Messages) == 0 {
			continue
		}
		start := []transcript.Format{transcript.Anthropic}
		if tr.Format == transcript.OpenAI {
			start = append(start, transcript.OpenAI)
		}
		for _, home := range start {
			// The model is request metadata that stays with its provider: leave it out.
			canon, err := sjson.DeleteBytes(convert(t, data, "", home).Doc, "model")
			if err != nil {
				t.Fatal(err)
			}
			for _, via := range Targets {
				if via == home {
					continue
				}
				key := string(home) + "->" + string(via) + "->" + string(home)
				mid := convert(t, canon, home, via)
				if len(mid.Losses) > 0 || len(mid.Repaired) > 0 {
					skipped[key]++
					continue
				}
				back := convert(t, mid.Doc, via, home)
				if len(back.Repaired) > 0 || len(back.Losses) > 0 {
					skipped[key]++
					continue
				}
				want := canon
				if home == transcript.OpenAI {
					// A tool message's name that is its call's says nothing the middle
					// format must hold (a different one is reported as a loss).
					want = withoutToolNames(t, canon)
				}
				if string(back.Doc) != string(want) {
					t.Errorf("%s: %s is not exact:\n was %.300s\n now %.300s", filepath.Base(path), key, want[firstDiff(want, back.Doc):], back.Doc[firstDiff(want, back.Doc):])
					continue
				}
				exact[key]++
			}
		}
	}
	for key, n := range exact {
		t.Logf("%s: %d exact, %d not comparable (losses or repairs)", key, n, skipped[key])
	}
	if len(exact) == 0 {
		t.Error("no round trip compared")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestCorpus converts every corpus file and sample to every target: the result parses as
// the target, passes ctx-repair's check, and keeps every tool call and its result.
func TestCorpus(t *testing.T) {
	files := append(invariant.Samples(t), corpusOrNone(t)...)
	perFolder := map[string]map[string]int{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{Name: path})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		folder := invariant.Folder(path)
		if perFolder[folder] == nil {
			perFolder[folder] = map[string]int{}
		}
		calls := pairedCalls(tr)
		for _, to := range Targets {
			res, err := Convert(tr, to)
			if err != nil {
				t.Errorf("%s -> %s: %v", path, to, err)
				continue
			}
			out, err := transcript.Parse(res.Doc, transcript.Options{Format: to})
			if err != nil {
				t.Errorf("%s -> %s: output does not parse: %v", path, to, err)
				continue
			}
			if ps := repair.Check(out); len(ps) > 0 {
				t.Errorf("%s -> %s: %d problems, first %s", path, to, len(ps), ps[0])
			}
			if got := pairedCalls(out); got < calls {
				t.Errorf("%s -> %s: %d answered tool calls, the source had %d", path, to, got, calls)
			}
			perFolder[folder][string(to)]++
			for _, l := range res.Losses {
				perFolder[folder]["loss "+l.Kind] += l.Count
			}
			for r, n := range repair.Counts(res.Repaired) {
				perFolder[folder]["repaired "+string(to)+" "+string(r)] += n
			}
		}
	}
	for folder, m := range perFolder {
		t.Logf("%s: %v", folder, m)
	}
}

// pairedCalls counts client tool calls that have a result.
func pairedCalls(t *transcript.Transcript) int {
	n := 0
	for _, p := range t.Pairs() {
		if p.Call != transcript.None && p.Result != transcript.None {
			if b := t.Block(p.Call); b.Type != "server_tool_use" && b.Type != "mcp_tool_use" && b.Type != "function_call" || t.Format != transcript.OpenAI && b.Type == "function_call" {
				n++
			}
		}
	}
	return n
}

func corpusOrNone(t *testing.T) []string {
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "corpus")); err != nil {
		t.Log("corpus not found: samples only")
		return nil
	}
	return invariant.CorpusFiles(t)
}
