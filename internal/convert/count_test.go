package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

func readSample(t *testing.T, path string) ([]byte, *transcript.Transcript) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Parse(data, transcript.Options{Name: path})
	if err != nil {
		t.Fatal(err)
	}
	return data, tr
}

// TestCountRequest: every sample (a Claude Code session and an OpenAI chat request among
// them) gives a count_tokens body holding the model asked for and, byte for byte, the
// messages, system, tools and tool_choice Convert writes, and nothing else.
func TestCountRequest(t *testing.T) {
	seen := map[transcript.Format]bool{}
	for _, path := range invariant.Samples(t) {
		data, tr := readSample(t, path)
		seen[tr.Format] = true
		name := filepath.Base(path)
		body, err := CountRequest(tr, "claude-opus-4-1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !gjson.ValidBytes(body) {
			t.Fatalf("%s: the body is not JSON: %.200s", name, body)
		}
		doc := convert(t, data, "", transcript.Anthropic).Doc
		if got := gjson.GetBytes(body, "model").String(); got != "claude-opus-4-1" {
			t.Errorf("%s: model %q", name, got)
		}
		gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "model":
			case "messages", "system", "tools", "tool_choice":
				if want := gjson.GetBytes(doc, k.Str).Raw; v.Raw != want {
					t.Errorf("%s: %s differs from Convert's:\n got %.300s\nwant %.300s", name, k.Str, v.Raw, want)
				}
			default:
				t.Errorf("%s: count_tokens takes no %q", name, k.Str)
			}
			return true
		})
		for _, k := range countFields {
			if gjson.GetBytes(doc, k).Exists() != gjson.GetBytes(body, k).Exists() {
				t.Errorf("%s: %s in the converted request: %v, in the body: %v", name, k, gjson.GetBytes(doc, k).Exists(), gjson.GetBytes(body, k).Exists())
			}
		}
		if !gjson.GetBytes(body, "messages.0").Exists() {
			t.Errorf("%s: no messages", name)
		}
	}
	if !seen[transcript.ClaudeCode] || !seen[transcript.OpenAI] {
		t.Errorf("the samples cover %v; want a Claude Code session and an OpenAI chat request", seen)
	}
}

// TestCountRequestModel: with no model named, a Claude conversation's own is used; a
// conversation that names no Claude model has none to use.
func TestCountRequestModel(t *testing.T) {
	for file, want := range map[string]string{"session.jsonl": "claude-sonnet-4-5-20250929", "openai.json": ""} {
		_, tr := readSample(t, filepath.Join("..", "..", "testdata", file))
		body, err := CountRequest(tr, "")
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), "needs a Claude model")):
			t.Errorf("%s: err %v, want the model asked for", file, err)
		case want != "" && (err != nil || gjson.GetBytes(body, "model").String() != want):
			t.Errorf("%s: model %q, %v; want %q", file, gjson.GetBytes(body, "model").String(), err, want)
		}
	}
	// What count_tokens does not take (max_tokens, stream...) is left out; tool_choice,
	// which the samples lack, is kept.
	doc := `{"model":"claude-x","max_tokens":5,"stream":true,"tools":[{"name":"ls","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{Format: transcript.Anthropic})
	if err != nil {
		t.Fatal(err)
	}
	body, err := CountRequest(tr, `claude-"odd"`)
	if want := `{"model":"claude-\"odd\"","tools":[{"name":"ls","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`; err != nil || string(body) != want {
		t.Errorf("got %s, %v;\nwant %s", body, err, want)
	}
}
