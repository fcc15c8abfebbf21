package count

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

func TestRender(t *testing.T) {
	doc := `{"model":"gpt-4o","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hello there"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]},
	{"role":"tool","tool_call_id":"c1","content":"package main"}]}`
	r := Measure(parse(t, doc), Options{File: "x.json", Counter: fixed{}, Window: testWindow})
	var plain, color bytes.Buffer
	Render(&plain, &r, false, 0)
	Render(&color, &r, true, 0)
	out := plain.String()
	for _, want := range []string{
		"x.json  (openai, bytes)",
		"of 900 effective tokens used",
		"S system ", "R tool results 12",
		"Top tool consumers", "read_file", "1 call ",
		"Largest messages", "#3", "package main",
		"Tiers at", "ctx-persist",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("escape codes without colour")
	}
	if !strings.Contains(color.String(), "\x1b[") {
		t.Error("no escape codes with colour")
	}
	bar := strings.SplitN(out, "\n", 3)[1]
	if n := strings.Count(bar, "") - 1 - len("  []"); n != barWidth(DefaultWidth) {
		t.Errorf("bar is %d cells: %q", n, bar)
	}
}

func TestRenderComparison(t *testing.T) {
	var b bytes.Buffer
	RenderComparison(&b, &Comparison{Before: Side{File: "a", Tokens: 1000}, After: Side{File: "b", Tokens: 400}, Saved: 600, SavedRatio: 0.6, PrefixTokens: 300, PrefixRatio: 0.3})
	for _, want := range []string{"saved   600 tokens (60.0%)", "300 tokens of whole messages (30.0% of before)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// TestRenderHidden: a session that records usage shows the part the file does not hold,
// in the bar and on its own line, with the figure it was learned from.
func TestRenderHidden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := Measure(parse(t, string(data)), Options{File: "session.jsonl", Counter: estimateCounter(t), Window: testWindow})
	if r.Hidden == nil || r.Hidden.Tokens <= 0 || r.Tokens != r.Counted+r.Hidden.Tokens {
		t.Fatalf("hidden %+v, tokens %d, counted %d", r.Hidden, r.Tokens, r.Counted)
	}
	var b bytes.Buffer
	Render(&b, &r, false, 0)
	for _, want := range []string{
		"H hidden " + human.Thousands(r.Hidden.Tokens),
		"hidden: system prompt, tool schemas and reminders no record holds: " + human.Thousands(r.Hidden.Tokens) + ", from recorded usage",
		"recorded by the agent (message.usage): ",
	} {
		// (a line too long for the terminal is wrapped: read the words)
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.TrimSpace(want)) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

func estimateCounter(t *testing.T) tokens.Counter {
	t.Helper()
	c, err := tokens.New("estimate")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRenderFitsTheTerminal: at 60, 80 and 120 columns, the bar spans the line and no line
// is wider than the terminal, in colour or not; what a narrow terminal cannot hold on one
// line is wrapped, not lost.
func TestRenderFitsTheTerminal(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	r := Measure(parse(t, string(data)), Options{File: "session.jsonl", Counter: estimateCounter(t), Window: testWindow})
	for _, width := range []int{60, 80, 120} {
		for _, color := range []bool{false, true} {
			var b bytes.Buffer
			Render(&b, &r, color, width)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			for _, line := range lines {
				if n := visibleWidth(line); n > width {
					t.Errorf("%d columns, colour %v: a line of %d: %q", width, color, n, line)
				}
			}
			bar := lines[1]
			if !strings.HasPrefix(bar, "  [") {
				bar = lines[2] // the title took two lines
			}
			if n := visibleWidth(bar); n != width {
				t.Errorf("%d columns: the bar's line is %d wide: %q", width, n, bar)
			}
			text := strings.Join(strings.Fields(b.String()), " ")
			for _, want := range []string{"reserved for the reply", "tool results", "Top tool consumers", "Largest messages", "Tiers at"} {
				if !strings.Contains(text, want) {
					t.Errorf("%d columns: no %q", width, want)
				}
			}
		}
	}
}
