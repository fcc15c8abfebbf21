package summarize

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ctxkit/ctxkit/internal/llm"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// systemPrompt is ctxkit's own instruction to a model that summarizes. It asks for private
// analysis first (which is thrown away) and then the fixed sections.
const systemPrompt = `You write the working-state summary that replaces the older part of a conversation
between a user and an AI agent that uses tools (reads and edits files, runs commands). After
you, the agent sees only your summary and the newest messages, so it must be able to carry on
the work from the summary alone. Write a snapshot of where the work stands, not a story.

First think privately inside <analysis> and </analysis>: go through the conversation in order
and note every user request, what was decided and why, each file read or changed, each
command or test and how it ended, each error and whether it was fixed, what is still to do,
and what was in progress at the end. The analysis is discarded.

Then write the summary inside <summary> and </summary>, as these sections in this order, each
a heading line "## <name>" followed by items, one per line, starting with "- ":

## Goal and user requests
The user's goal, then every request the user made, in order, in the user's own words
(shorten a long one, keeping its meaning and any exact names, paths, numbers).
## Decisions
What was decided and why: approaches chosen and rejected, constraints the user set.
## Files read
Paths, one per item, with what was learned from the file when it matters later.
## Files changed
Paths, one per item, with what changed.
## Commands and tests
Each command or test that mattered, with its outcome (exit code, pass/fail counts).
## Errors
Each error, quoted briefly, ending with [fixed] or [unresolved].
## Pending tasks
What remains to be done, including anything the user asked for that is not done.
## At the cut
What the agent was doing when the conversation was cut.
## Next step
The single next action, specific enough to take without asking.

Leave a section out if it would be empty. Keep exact identifiers: file paths, function names,
error messages, commands, numbers. Do not invent anything that is not in the conversation.`

// Model summarizes through a language model.
type Model struct {
	Client       *llm.Client
	Instructions string // added to the prompt (--instructions), never replacing it
	// PerPart caps one message part in the rendered conversation (tool output is long).
	PerPart int
}

// Summarize asks the model for the sections of msgs (folding previous). When the model
// says the prompt is too long it drops the oldest quarter of the messages and asks again;
// dropped says how many it had to leave out.
func (m *Model) Summarize(ctx context.Context, t *transcript.Transcript, msgs []int, previous Sections) (s Sections, dropped int, err error) {
	system := systemPrompt
	if strings.TrimSpace(m.Instructions) != "" {
		system += "\n\nAlso follow these instructions from the user of this tool:\n" + m.Instructions
	}
	for {
		prompt := m.render(t, msgs[dropped:], previous)
		answer, err := m.Client.Complete(ctx, llm.Request{System: system, Prompt: prompt, MaxTokens: 8192})
		switch {
		case errors.Is(err, llm.ErrPromptTooLong) && len(msgs)-dropped > 1:
			dropped += max(1, (len(msgs)-dropped)/4)
			continue
		case err != nil:
			return nil, dropped, err
		}
		s, err := sectionsOf(answer)
		return s, dropped, err
	}
}

var (
	summaryBlock  = regexp.MustCompile(`(?s)<summary>(.*?)(?:</summary>|$)`)
	analysisBlock = regexp.MustCompile(`(?s)<analysis>.*?</analysis>`)
)

// sectionsOf takes the summary out of a model's answer, without its analysis.
func sectionsOf(answer string) (Sections, error) {
	body := answer
	if m := summaryBlock.FindStringSubmatch(answer); m != nil {
		body = m[1]
	} else {
		body = analysisBlock.ReplaceAllString(answer, "")
	}
	s, rest := Parse(body)
	if len(s) > 0 && strings.TrimSpace(rest) != "" {
		// Text before the first heading: kept, not dropped.
		s["Notes"] = append([]string{strings.TrimSpace(rest)}, s["Notes"]...)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("the model's answer has none of the summary's sections (%d bytes)", len(answer))
	}
	return s, nil
}

// render writes the conversation for the model: each message with its role, tool calls
// with their arguments, results cut to PerPart characters.
func (m *Model) render(t *transcript.Transcript, msgs []int, previous Sections) string {
	per := m.PerPart
	if per <= 0 {
		per = 4000
	}
	var b strings.Builder
	if len(previous) > 0 {
		b.WriteString("<earlier-summary>\n")
		b.WriteString(Render(previous, Meta{Backend: "earlier"}))
		b.WriteString("\n</earlier-summary>\nCarry every item of the earlier summary into yours, updated by what the conversation below adds.\n\n")
	}
	b.WriteString("<conversation>\n")
	for _, mi := range msgs {
		msg := &t.Messages[mi]
		if msg.Summary {
			continue
		}
		fmt.Fprintf(&b, "\n[%s]\n", msg.Role)
		for bi := range msg.Blocks {
			bl := &msg.Blocks[bi]
			switch bl.Kind {
			case transcript.Text:
				if bl.Pinned {
					continue // carried over verbatim (Place), not summarized
				}
				text := t.BodyText(bl)
				if msg.Role == "user" {
					// The model sees what the user wrote, not the agent's wrappers, so it
					// cannot quote them as requests.
					if bl.Agent {
						continue
					}
					if text = userWords(t.Format, text); text == "" {
						continue
					}
				}
				b.WriteString(shorten(text, per))
				b.WriteByte('\n')
			case transcript.ToolCall:
				fmt.Fprintf(&b, "(tool call %s: %s)\n", bl.ToolName, shorten(t.BodyText(bl), per/4))
			case transcript.ToolResult:
				state := "result"
				if bl.IsError {
					state = "error result"
				}
				fmt.Fprintf(&b, "(tool %s)\n%s\n", state, shorten(resultText(t, bl), per))
			case transcript.Thinking:
				// The agent's private reasoning is left out: its conclusions are in its text.
			case transcript.Image:
				b.WriteString("(image)\n")
			}
		}
	}
	b.WriteString("</conversation>\n\nWrite the <analysis> and then the <summary>.")
	return b.String()
}
