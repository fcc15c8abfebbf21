package count

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// fixed counts one token per byte, so expected figures can be worked out by hand.
type fixed struct{}

func (fixed) Name() string          { return "bytes" }
func (fixed) Count(text string) int { return len(text) }

func parse(t *testing.T, doc string) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

var testWindow = tokens.Budget{Window: 1000, Reserve: 100, Effective: 900}

func TestMeasureBreakdown(t *testing.T) {
	doc := `{"model":"gpt-4o","tools":[{"type":"function"}],"messages":[
	{"role":"system","content":"sys"},
	{"role":"user","content":"hello"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}}]},
	{"role":"tool","tool_call_id":"c1","content":"0123456789"},
	{"role":"assistant","content":"done"}]}`
	r := Measure(parse(t, doc), Options{File: "x.json", Counter: fixed{}, Window: testWindow})
	oh := tokens.MessageOverhead("openai")
	tools := len(`[{"type":"function"}]`)
	call := len("read") + len(`{"p":1}`)
	want := 3 + 5 + call + 10 + 4 + 5*oh + tools + tokens.ReplyPriming
	if r.Tokens != want {
		t.Errorf("tokens = %d, want %d", r.Tokens, want)
	}
	if r.ByKind["tool_result"] != 10 || r.ByKind["tool_call"] != call || r.ByKind["tools"] != tools {
		t.Errorf("by_kind = %v", r.ByKind)
	}
	if r.ByRole["tool"] != 10+oh || r.ByRole["system"] != 3+oh {
		t.Errorf("by_role = %v", r.ByRole)
	}
	if len(r.ByTool) != 1 || r.ByTool[0].Name != "read" || r.ByTool[0].Calls != 1 || r.ByTool[0].ResultTokens != 10 {
		t.Errorf("by_tool = %+v", r.ByTool)
	}
	c := r.Categories
	if sum := c.Hidden + c.System + c.Tools + c.User + c.Attachments + c.Assistant + c.Thinking + c.ToolResults; sum != r.Tokens {
		t.Errorf("categories add up to %d, total is %d", sum, r.Tokens)
	}
	if r.Utilization != float64(want)/900 {
		t.Errorf("utilization = %v", r.Utilization)
	}
	if r.Largest.Chars != 10 || r.Largest.Tool != "read" || r.Largest.Message != 3 {
		t.Errorf("largest = %+v", r.Largest)
	}
	if r.Messages[3].Preview != "0123456789" || r.Messages[2].Tools[0] != "read" {
		t.Errorf("messages = %+v", r.Messages)
	}
}

func TestTiersFollowUtilization(t *testing.T) {
	big := strings.Repeat("x", 40_000)
	doc := `[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"cat","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"` + big + `"}]`
	tr := parse(t, doc)
	acts := func(window int) map[string]bool {
		r := Measure(tr, Options{Counter: fixed{}, Window: tokens.Budget{Window: window, Effective: window}})
		m := map[string]bool{}
		for _, tier := range r.Tiers {
			m[tier.Tool] = tier.Acts
		}
		return m
	}
	low := acts(1_000_000) // 4%: the result is over the persist size but under the hard cap
	if !low["ctx-persist"] || low["ctx-budget"] || low["ctx-snip"] || low["ctx-summarize"] || low["ctx-trim"] {
		t.Errorf("at 4%%: %v", low)
	}
	mid := acts(60_000) // ~67%: cap 30,000
	if !mid["ctx-budget"] || !mid["ctx-snip"] || mid["ctx-summarize"] {
		t.Errorf("at 67%%: %v", mid)
	}
	full := acts(40_500) // ~99%
	if !full["ctx-summarize"] || !full["ctx-trim"] {
		t.Errorf("at 99%%: %v", full)
	}
}

func TestAnchoredUsage(t *testing.T) {
	line := func(typ, uuid, parent, msg string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"` + typ + `","uuid":"` + uuid + `","parentUuid":` + p + `,"message":` + msg + `}`
	}
	doc := strings.Join([]string{
		line("user", "u1", "", `{"role":"user","content":"hi"}`),
		line("assistant", "a1", "u1", `{"id":"m1","role":"assistant","content":[{"type":"text","text":"yo"}],"usage":{"input_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,"output_tokens":20}}`),
		line("user", "u2", "a1", `{"role":"user","content":"0123456789"}`),
	}, "\n") + "\n"
	r := Measure(parse(t, doc), Options{Counter: fixed{}, Window: testWindow})
	a := r.Anchored
	if a == nil {
		t.Fatal("no anchored figure")
	}
	if a.Recorded != 1225 || a.RecordedAt != 1 || a.Source != "message.usage" || a.CacheRead != 1000 {
		t.Errorf("anchor = %+v", a)
	}
	if a.EstimatedAfter != r.Messages[2].Tokens || a.Tokens != 1225+r.Messages[2].Tokens {
		t.Errorf("estimated after = %d, message 2 = %d", a.EstimatedAfter, r.Messages[2].Tokens)
	}
}

func TestImagesPricedByPixels(t *testing.T) {
	// A 1x1 PNG: its base64 is short, so a length-based count would be tiny either way;
	// what matters is that the price comes from the pixel formula.
	png1 := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	doc := `{"system":"s","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1 + `"}}]}]}`
	r := Measure(parse(t, doc), Options{Counter: fixed{}, Window: testWindow})
	if got, want := r.ByKind["image"], tokens.AnthropicImageTokens(1, 1); got != want {
		t.Errorf("image tokens = %d, want %d", got, want)
	}
	oai := `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png1 + `","detail":"low"}}]}]`
	r = Measure(parse(t, oai), Options{Counter: fixed{}, Window: testWindow})
	if got, want := r.ByKind["image"], tokens.OpenAIImageTokens(1, 1, "low"); got != want {
		t.Errorf("openai image tokens = %d, want %d", got, want)
	}
}

func TestCompare(t *testing.T) {
	a := `[{"role":"user","content":"keep"},{"role":"assistant","content":"long answer here"},{"role":"user","content":"last"}]`
	b := `[{"role":"user","content":"keep"},{"role":"assistant","content":"short"},{"role":"user","content":"last"}]`
	ta, tb := parse(t, a), parse(t, b)
	o := Options{Counter: fixed{}, Window: testWindow}
	ra, rb := Measure(ta, o), Measure(tb, o)
	c := Compare(ta, ra, tb, rb)
	if c.Saved != ra.Tokens-rb.Tokens || c.Saved != len("long answer here")-len("short") {
		t.Errorf("saved = %d", c.Saved)
	}
	if c.Unchanged != 2 || c.Changed != 1 || c.Removed != 0 || c.Added != 0 {
		t.Errorf("messages: %+v", c)
	}
	if c.PrefixTokens != ra.Messages[0].Tokens || c.PrefixMessages != 1 {
		t.Errorf("prefix tokens = %d in %d messages, want the first message's %d", c.PrefixTokens, c.PrefixMessages, ra.Messages[0].Tokens)
	}
	if want := strings.Index(a, "long"); c.PrefixBytes != want {
		t.Errorf("prefix bytes = %d, want %d", c.PrefixBytes, want)
	}
}

// A Claude Code log ctx-summarize compacted keeps the records its summary replaced at the
// start of the file, but the request it makes starts with the summary: nothing of the
// request before is a prefix of it. --vs compares the conversations as sent; it compared
// the files' bytes and said 87% of the prompt cache was kept (0.68 on a larger session).
func TestCompareAsSent(t *testing.T) {
	session := filepath.Join("..", "..", "testdata", "session.jsonl")
	compacted := filepath.Join(t.TempDir(), "compacted.jsonl")
	var errs bytes.Buffer
	if code := summarize.Main([]string{"--window", "20k", "-o", compacted, session}, nil, io.Discard, &errs, func(string) string { return "" }); code != 0 {
		t.Fatalf("ctx-summarize: exit %d: %s", code, errs.String())
	}
	var out bytes.Buffer
	if code := Main([]string{"--json", session, "--vs", compacted}, nil, &out, &errs, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var c Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if c.PrefixBytes < 100_000 || c.PrefixMessages != 0 || c.PrefixTokens != 0 || c.PrefixRatio != 0 || c.Saved <= 0 {
		t.Errorf("%s", out.String())
	}
}

func TestCellsFillTheBar(t *testing.T) {
	for _, tokensUsed := range []int{0, 1, 500, 900, 5000} {
		r := &Report{Window: 1000, Reserve: 100, EffectiveWindow: 900, Tokens: tokensUsed,
			Categories: Categories{User: tokensUsed}}
		total := max(r.Window, r.Tokens+r.Reserve)
		for _, width := range []int{16, 56, 76, 116} {
			n := 0
			for _, c := range cells(segments(r), total, width) {
				n += c
			}
			if n != width {
				t.Errorf("%d tokens: bar has %d cells, want %d", tokensUsed, n, width)
			}
		}
	}
}

// TestCorpusCounts counts every corpus file with every tokenizer: nothing fails, the parts
// add up to the total, and the JSON report round-trips.
func TestCorpusCounts(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not found at %s", root)
	}
	var files []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".traj") ||
			strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".meta.json")) {
			files = append(files, p)
		}
		return nil
	})
	names := []string{"estimate", "o200k"}
	if testing.Short() {
		names = names[:1]
	}
	for _, name := range names {
		counter, err := tokens.New(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := transcript.Parse(data, transcript.Options{Name: f})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			r := Measure(tr, Options{File: f, Counter: counter, Window: tokens.Budget{Window: 200_000, Reserve: 20_000, Effective: 180_000}})
			c := r.Categories
			if sum := c.Hidden + c.System + c.Tools + c.User + c.Attachments + c.Assistant + c.Thinking + c.ToolResults; sum != r.Tokens {
				t.Errorf("%s: categories add to %d, tokens %d", f, sum, r.Tokens)
			}
			sum := 0
			for _, n := range r.ByRole {
				sum += n
			}
			if sum+r.ByKind["tools"]+r.ByKind["attachment"]+tokensReply(len(tr.Messages)) != r.Counted || r.Counted+c.Hidden != r.Tokens {
				t.Errorf("%s: roles add to %d, tokens %d", f, sum, r.Tokens)
			}
			if total := measure.Total(tr, counter); total != r.Tokens {
				t.Errorf("%s: Total = %d, Measure = %d", f, total, r.Tokens)
			}
			if len(tr.Messages) > 0 && r.Tokens <= 0 {
				t.Errorf("%s: %d messages but no tokens", f, len(tr.Messages))
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}

func tokensReply(messages int) int {
	if messages == 0 {
		return 0
	}
	return tokens.ReplyPriming
}

// decodingEstimate is the estimate without tokens.ByLength: Measure has to decode every
// text to count it, as it did before it counted lengths.
type decodingEstimate struct{}

func (decodingEstimate) Name() string          { return "estimate" }
func (decodingEstimate) Count(text string) int { return tokens.Estimate(text) }

// TestLengthCountingMatchesDecoding holds the estimate's shortcut (lengths read off the JSON
// literals, texts never decoded) to the report of decoding every text, on the corpus, the
// samples and generated documents of every format.
func TestLengthCountingMatchesDecoding(t *testing.T) {
	docs := map[string][]byte{}
	for _, f := range testgen.Formats {
		var b bytes.Buffer
		if err := testgen.Generate(&b, testgen.Options{Format: f, Size: 400 << 10, Seed: 3, Images: true}); err != nil {
			t.Fatal(err)
		}
		docs[f] = b.Bytes()
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json*"))
	corpus := filepath.Join("..", "..", "..", "shared", "corpus")
	filepath.Walk(corpus, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".traj") ||
			strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".meta.json")) {
			files = append(files, p)
		}
		return nil
	})
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = data
	}
	estimate, _ := tokens.New("estimate")
	if _, ok := estimate.(tokens.ByLength); !ok {
		t.Fatal("the estimate does not count by length")
	}
	for name, doc := range docs {
		tr, err := transcript.Parse(doc, transcript.Options{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o := Options{File: name, Window: streamBudget}
		o.Counter = estimate
		got := Measure(tr, o)
		o.Counter = decodingEstimate{}
		want := Measure(tr, o)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: counting lengths gives\n%+v\ndecoding gives\n%+v", name, got, want)
		}
	}
}
