// Package calibrate fits the prices of the Claude estimate (tokens.Claude) on the usage
// that Claude Code records, and measures their error: it reads real sessions into
// intervals (what was added to the prompt between two consecutive requests, and how many
// tokens Claude reported it cost), fits the prices robustly on part of the sessions and
// states the error on the rest. scripts/calibrate prints the fit as Go source for
// internal/tokens; tokens' corpus test checks the prices committed there on the same
// held-out sessions.
package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/heldout"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Interval is what one request added to the prompt of the one before it in a session.
//
// Claude Code records, for each reply, the prompt that produced it: input_tokens +
// cache_read_input_tokens + cache_creation_input_tokens, which is everything the model
// saw, a hidden part (system prompt, tool schemas: never in the file) plus the messages
// before the reply. Between two consecutive figures k and k+1 the hidden part cancels:
// Input[k+1] - Input[k] is the cost of messages [After[k], After[k+1]), the reply k and
// what followed it (its tool results, the next user message).
type Interval struct {
	Source string // the session file, relative to the corpus folder
	Model  string // the model of both requests
	Family int    // its index in tokens.ClaudeFamilies
	Held   bool   // the session is held out of the fit

	Truth int // Input[k+1] - Input[k]
	// Known is what the interval's images, redacted thinking and thinking stored empty
	// cost, priced as measure prices them (from pixels, from size, from the signature's
	// size): not text, so not fitted.
	Known int
	// Classes counts the characters of the interval's text as measure counts text: every
	// block's body (a tool call's input as written), a call's tool name, a result's parts.
	Classes                  [tokens.NumClaudeClasses]int
	Messages, Calls, Results int

	// Skip says why the interval is left out of the fit and of the figures ("" when it is
	// not): its truth holds something the file does not, by construction.
	Skip string

	t        *transcript.Transcript
	from, to int // messages [from, to)
	old      int
}

// Why intervals are skipped.
const (
	SkipHiddenThinking = "thinking not recorded" // a reply's thinking is stored empty (only its signature), yet the model reads it
	SkipDeferredTools  = "tool schemas loaded"   // a tool_reference result loads tool schemas the file does not hold
	SkipModelChanged   = "model changed"         // the two requests went to different models
	SkipCompacted      = "compaction"            // the history was replaced between the two requests
)

// Framing is what the estimate adds for the structure of a conversation, in tokens.
type Framing = tokens.Framing

// Current is the framing measure adds for Anthropic formats.
func Current() Framing { return tokens.FramingOf("anthropic") }

// Estimate is what a counter and a framing say the interval costs, counted block by
// block as measure counts it (measure.BlockTokens), plus the framing of each message,
// tool call and tool result.
func (iv *Interval) Estimate(c tokens.Counter, f Framing) int {
	n := iv.Messages*f.Message + iv.Calls*f.ToolCall + iv.Results*f.ToolResult
	for mi := iv.from; mi < iv.to; mi++ {
		m := &iv.t.Messages[mi]
		for bi := range m.Blocks {
			n += measure.BlockTokens(iv.t, &m.Blocks[bi], c)
		}
	}
	return n
}

// Old is what ctxkit counted for the interval before the Claude estimate: 4 bytes a
// token, 3 tokens of framing a message (measure with tokens.New("estimate")).
func (iv *Interval) Old() int { return iv.old }

// Held reports whether a session file is held out of the fit: the repository's rule
// (heldout.Test, one file in three by its name). A subagent's log is a file of its own: it
// is its own conversation, with its own prompt, and falls on either side independently of
// its parent session's.
func Held(path string) bool { return heldout.Test(path) }

// Load reads every Claude Code session (*.jsonl) under dir into intervals, in file order.
// Files that do not parse, or record fewer than two figures, give none.
func Load(dir string) ([]Interval, error) {
	var out []Interval
	n, err := eachSession(dir, func(data []byte, name string) { out = append(out, Intervals(data, name)...) })
	if err == nil && n == 0 {
		err = fmt.Errorf("no .jsonl sessions under %s", dir)
	}
	return out, err
}

// eachSession hands read every session file (*.jsonl) under dir, in name order, with its
// path relative to dir, and returns how many there were.
func eachSession(dir string, read func(data []byte, name string)) (int, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read corpus %q: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("read %q: %w", f, err)
		}
		rel, _ := filepath.Rel(dir, f)
		read(data, filepath.ToSlash(rel))
	}
	return len(files), nil
}

// Intervals reads one session's intervals; name is its file name.
func Intervals(data []byte, name string) []Interval {
	t, err := transcript.Parse(data, transcript.Options{})
	if err != nil || t.Format != transcript.ClaudeCode || len(t.Usage) < 2 {
		return nil
	}
	est, _ := tokens.New("estimate")
	oldFraming := Framing{Message: tokens.MessageOverhead("anthropic")}
	held := Held(name)
	model := func(u transcript.Usage) string {
		return gjson.Get(t.Slice(t.Messages[u.After].Lines[0]), "message.model").String()
	}
	var out []Interval
	for k := 0; k+1 < len(t.Usage); k++ {
		a, b := t.Usage[k], t.Usage[k+1]
		if b.After <= a.After {
			continue
		}
		iv := Interval{Source: name, Model: model(b), Held: held, Truth: b.Input - a.Input, t: t, from: a.After, to: b.After}
		iv.Family = familyIndex(iv.Model)
		if model(a) != iv.Model {
			iv.Skip = SkipModelChanged
		}
		for mi := a.After; mi < b.After; mi++ {
			m := &t.Messages[mi]
			iv.Messages++
			if m.Summary {
				iv.Skip = SkipCompacted
			}
			for bi := range m.Blocks {
				iv.block(&m.Blocks[bi], est)
			}
		}
		iv.old = iv.Estimate(est, oldFraming)
		out = append(out, iv)
	}
	return out
}

func familyIndex(model string) int {
	f := tokens.ClaudeFamilyOf(model)
	for i, g := range tokens.ClaudeFamilies() {
		if g.Name == f.Name {
			return i
		}
	}
	return 0
}

// block adds a block's classes, count and known cost, the way measure.countSized walks it.
func (iv *Interval) block(b *transcript.Block, est tokens.Counter) {
	switch {
	case b.Kind == transcript.Image || b.Encrypted > 0:
		iv.Known += measure.BlockTokens(iv.t, b, est)
		return
	case b.Type == "tool_reference" && iv.Skip == "":
		iv.Skip = SkipDeferredTools
	}
	text := iv.t.BodyText(b)
	if b.Kind == transcript.Thinking && text == "" && iv.Skip == "" {
		iv.Skip = SkipHiddenThinking
	}
	if b.Signature > 0 && text == "" {
		iv.Known += measure.BlockTokens(iv.t, b, est) // priced from the signature, not fitted
		return
	}
	tokens.ClaudeClasses(text, &iv.Classes)
	switch b.Kind {
	case transcript.ToolCall:
		iv.Calls++
		tokens.ClaudeClasses(b.ToolName, &iv.Classes)
	case transcript.ToolResult:
		iv.Results++
	}
	for pi := range b.Parts {
		iv.block(&b.Parts[pi], est)
	}
}
