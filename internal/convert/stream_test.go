package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/invariant"
)

// wholeTool is ctx-convert reading every document whole, as it read every document before
// JSONL transcripts were streamed: the reference its streamed runs are held to.
func wholeTool() *cli.Tool { return cli.ReadingWhole(Tool()) }

// TestStreamedMatchesWhole: on every JSONL transcript (the samples, the corpus, generated
// sessions up to 9 MB), ctx-convert streaming the file, or stdin, writes the same bytes,
// the same warnings and the same --stats as reading it whole, to every target. It runs
// with stretches of the usual size and again with stretches as small as they can be (each
// message read on its own, but for those that share a record), so that messages of one
// output message (an Anthropic run of one role, Responses items of one side) fall in
// different stretches.
func TestStreamedMatchesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every JSONL transcript, four targets, twice")
	}
	for _, size := range []int{stretchBytes, 1} {
		defer func(old int) { stretchBytes = old }(stretchBytes)
		stretchBytes = size
		invariant.StreamCheck{Tool: Tool, Whole: wholeTool, Flags: [][]string{
			{}, {"--to", "anthropic"}, {"--to", "openai"}, {"--to", "responses"}, {"--sidechains", "--to", "openai"},
		}}.Run(t)
	}
}

// FuzzStreamedMatchesWhole: on any document, the streamed conversion and the whole one
// agree (exit status, output, warnings, --stats), to every target, with stretches of one
// message.
func FuzzStreamedMatchesWhole(f *testing.F) {
	docs := invariant.ScriptJSONL(f, "*convert*.txtar")
	for _, name := range []string{"session.jsonl", "codex.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	for _, doc := range docs {
		f.Add(doc, uint8(0))
		f.Add(doc, uint8(2))
	}
	targets := []string{"", "anthropic", "openai", "responses"}
	f.Fuzz(func(t *testing.T, doc string, to uint8) {
		defer func(old int) { stretchBytes = old }(stretchBytes)
		stretchBytes = 1
		args := []string{"--stats"}
		if target := targets[int(to)%len(targets)]; target != "" {
			args = append(args, "--to", target)
		}
		invariant.SameOnFile(t, Tool, wholeTool, doc, args...)
	})
}

// TestStretches: a transcript's messages are cut into stretches in document order, every
// message in one, with what lies between two stretches never read; messages out of order,
// or a header after a message, are refused (the document is then read whole).
func TestStretches(t *testing.T) {
	defer func(old int) { stretchBytes = old }(stretchBytes)
	stretchBytes = 100
	sp := func(s, e int) transcript.Span { return transcript.Span{Start: s, End: e} }
	msg := func(header bool, lines ...transcript.Span) transcript.Message {
		return transcript.Message{Span: lines[0], Lines: lines, Header: header}
	}
	for _, c := range []struct {
		name string
		ms   []transcript.Message
		want string
	}{
		{"one stretch", []transcript.Message{msg(true, sp(0, 10)), msg(false, sp(11, 20)), msg(false, sp(21, 90))}, "[{0 90} 0-3]"},
		{"full", []transcript.Message{msg(false, sp(0, 60)), msg(false, sp(61, 120)), msg(false, sp(121, 130))}, "[{0 60} 0-1 {61 130} 1-3]"},
		{"a gap is not read", []transcript.Message{msg(true, sp(0, 10)), msg(false, sp(5000, 5010))}, "[{0 10} 0-1 {5000 5010} 1-2]"},
		{"a shared record", []transcript.Message{msg(false, sp(0, 300)), msg(false, sp(0, 300)), msg(false, sp(301, 310))}, "[{0 300} 0-2 {301 310} 2-3]"},
		{"touching", []transcript.Message{msg(false, sp(0, 300)), msg(false, sp(300, 310))}, "[{0 310} 0-2]"},
		{"lines of one turn", []transcript.Message{msg(false, sp(0, 10), sp(400, 410)), msg(false, sp(411, 420))}, "[{0 410} 0-1 {411 420} 1-2]"},
		{"out of order", []transcript.Message{msg(false, sp(500, 510)), msg(false, sp(0, 10))}, "refused"},
		{"a header after a message", []transcript.Message{msg(false, sp(0, 10)), msg(true, sp(20, 30))}, "refused"},
	} {
		st, ok := stretches(&transcript.Transcript{Format: transcript.ClaudeCode, Messages: c.ms})
		got := "refused"
		if ok {
			var parts []string
			for _, s := range st {
				parts = append(parts, fmt.Sprintf("{%d %d} %d-%d", s.span.Start, s.span.End, s.from, s.to))
			}
			got = "[" + strings.Join(parts, " ") + "]"
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
