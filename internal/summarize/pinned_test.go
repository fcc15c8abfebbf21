package summarize

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestPinnedContextStays summarizes, with --force, sessions that carry the clients'
// pinned context as they send it (testgen's Pinned): Codex's developer message and its
// AGENTS.md and environment message stay where they are, ahead of the summary (in a
// rollout, at the head of the compacted record's replacement history); Claude Code's
// reminders, which share the first user message with the request, open the summary
// message verbatim, and read back as pinned. A second summary carries them again.
func TestPinnedContextStays(t *testing.T) {
	for _, format := range []string{"codex", "responses", "openai", "anthropic", "claude-code"} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 300 << 10, Seed: 11, Pinned: true}); err != nil {
			t.Fatal(err)
		}
		in := buf.Bytes()
		// A window the session fills to 90%: above the trigger, and well below it after.
		tr, _ := transcript.Parse(in, transcript.Options{})
		window := int(float64(measure.Total(tr, estimate())) / 0.9)
		run := func(b []byte) ([]byte, error) {
			out, _, _, err := summarizeDoc(format, b, window, false)
			return out, err
		}
		out := invariant.Check(t, format, in, run, invariant.Options{Structural: true, Lossy: true})
		if out == nil || bytes.Equal(out, in) {
			t.Errorf("%s: nothing summarized", format)
			continue
		}
		before, _ := transcript.Parse(in, transcript.Options{})
		after, err := transcript.Parse(out, transcript.Options{})
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		// The pinned context is where it was: first after the system prompt.
		want := opening(before)
		if got := opening(after); got != want {
			t.Errorf("%s: the conversation opens with\n%s\nwant\n%s", format, got, want)
		}
		if format == "anthropic" || format == "claude-code" {
			m := firstUser(after)
			if m == nil || !m.Summary || !m.Blocks[0].Pinned || !m.Blocks[1].Pinned || m.Blocks[2].Pinned {
				t.Errorf("%s: the summary message does not open with the two reminders", format)
			} else if text := after.BodyText(&m.Blocks[2]); !strings.Contains(text, "Pinned context (verbatim): the 2 texts before this summary") {
				t.Errorf("%s: the summary does not say what it carries over:\n%.300s", format, text)
			}
		}
		// Summarized again, the summary among what is summarized, it carries them again.
		var again, stderr bytes.Buffer
		if code := Main([]string{"--force", "--keep", "1"}, bytes.NewReader(out), &again, &stderr, func(string) string { return "" }); code != 0 {
			t.Fatalf("%s: second summary: exit %d: %s", format, code, stderr.String())
		}
		if bytes.Equal(again.Bytes(), out) {
			t.Errorf("%s: the second summary did not happen: %s", format, stderr.String())
		}
		re, _ := transcript.Parse(again.Bytes(), transcript.Options{})
		if missing := invariant.MissingPinned(invariant.Pinned(before), invariant.Pinned(re)); len(missing) > 0 {
			t.Errorf("%s: the second summary lost %d pinned pieces", format, len(missing))
		}
	}
}

// opening is the conversation's messages up to the first that is not pinned context, as
// written (the pinned texts of a message that holds some, for the others).
func opening(tr *transcript.Transcript) string {
	var b strings.Builder
	for mi := range tr.Messages {
		m := &tr.Messages[mi]
		switch {
		case m.Header || m.Role == "system" || m.Role == "developer" || m.Pinned:
			b.WriteString(tr.Slice(m.Span))
		case m.HoldsPinned():
			for bi := range m.Blocks {
				if m.Blocks[bi].Pinned {
					b.WriteString(tr.Slice(m.Blocks[bi].Span))
				}
			}
			return b.String()
		default:
			return b.String()
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func firstUser(tr *transcript.Transcript) *transcript.Message {
	for mi := range tr.Messages {
		if m := &tr.Messages[mi]; m.Role == "user" && !m.Header {
			return m
		}
	}
	return nil
}

// A Codex compacted record drops everything before it but the session's instructions:
// the developer messages before the summarized part open its replacement history,
// verbatim, as Codex's own compaction opens it with its initial context, and stay first.
func TestCodexCompactionKeepsInstructions(t *testing.T) {
	dev := `{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>\nsandbox: workspace-write\n</permissions instructions>"}]}`
	var lines []string
	add := func(typ, payload string) {
		lines = append(lines, `{"timestamp":"2026-03-01T10:00:00.000Z","type":"`+typ+`","payload":`+payload+`}`)
	}
	add("session_meta", `{"id":"s","cwd":"/repo","base_instructions":{"text":"You are Codex."}}`)
	add("response_item", dev)
	for i := range 6 {
		add("response_item", `{"type":"message","role":"user","content":[{"type":"input_text","text":"request `+strings.Repeat("x", 200)+string(rune('a'+i))+`"}]}`)
		add("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done `+strings.Repeat("y", 400)+`"}]}`)
	}
	in := []byte(strings.Join(lines, "\n") + "\n")
	out, sp, _, err := summarizeDoc("codex", in, 0, true)
	if err != nil || len(sp.Summarized) == 0 {
		t.Fatalf("summarize: %v, %d summarized", err, len(sp.Summarized))
	}
	tr, err := transcript.Parse(out, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Messages[1].Role != "developer" || tr.Slice(tr.Messages[1].Span) != dev || !tr.Messages[2].Summary {
		t.Errorf("the compacted conversation opens with %s %q, then a summary %v; want the developer message as it was, then the summary",
			tr.Messages[1].Role, tr.Slice(tr.Messages[1].Span), tr.Messages[2].Summary)
	}
}
