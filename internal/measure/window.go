package measure

import (
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Choice is what the user said of the window (--model, --window, --reserve); zero values
// are unsaid. Reserve is nil when unsaid, since 0 is a choice.
type Choice struct {
	Model   string
	Window  int
	Reserve *int
}

// Window works out the window to measure a conversation against: the user's choice; else
// the model the conversation names when the table knows it, or the window the transcript
// recorded (Codex), or the default window.
func Window(ch Choice, docModel string, usage []transcript.Usage) (tokens.Budget, error) {
	model, window := ch.Model, ch.Window
	// The window the agent itself recorded (Codex's model_context_window) beats the table:
	// it is the input window the agent ran with, already net of the room it keeps for the
	// reply (Codex records 95% of the model's input limit: 258,400 for gpt-5-codex, whose
	// table entry gives 400,000 - 128,000).
	recorded := false
	if model == "" {
		if _, ok := tokens.LookupModel(docModel); ok {
			model = docModel
		}
		if u, ok := transcript.LastUsage(usage); ok && window == 0 && u.Window > 0 {
			window, recorded = u.Window, true
		}
	}
	reserve := 0 // tokens.Window reads 0 as "the model's default"
	if ch.Reserve != nil {
		reserve = *ch.Reserve
	}
	b, err := tokens.Window(model, window, reserve)
	if err != nil {
		return b, err
	}
	if reserve == 0 && (ch.Reserve != nil || recorded) {
		// An explicit --reserve 0, or a recorded input window: the whole window is for input.
		b.Reserve, b.Effective = 0, b.Window
	}
	return b, nil
}
