package count

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TextReport is ctx-count --text --json's line for one input.
type TextReport struct {
	File      string `json:"file"`
	Tokenizer string `json:"tokenizer"`
	Model     string `json:"model,omitempty"`
	Bytes     int    `json:"bytes"`
	Tokens    int    `json:"tokens"`
	// SchemaVersion is schema/count-text.json's version, last as in the report.
	SchemaVersion int `json:"schema_version"`
}

// runText counts each input as plain text, as ttok does: the whole text with one counter,
// no framing, no window. The counter is --tokenizer's, or with auto the one a document
// for --model would get: the Claude estimate of its family for a Claude model, else o200k
// (exact for OpenAI's current models, and a fair measure of text for others).
func runText(ctx *cli.Context, f *Flags) error {
	for _, no := range []struct {
		set  bool
		flag string
	}{{f.Pass, "--pass"}, {f.Vs != "", "--vs"}, {f.Savings, "--savings"}, {f.FailOver > 0, "--fail-over"}, {f.All, "--all"}, {f.Tokenizer == "api", "--tokenizer api"}} {
		if no.set {
			return cli.Usagef("--text counts plain text; %s does not apply", no.flag)
		}
	}
	format := transcript.OpenAI
	if tokens.IsClaude(f.Model) {
		format = transcript.Anthropic
	}
	counter, err := ctx.Counter(format, f.Model)
	if err != nil {
		return err
	}
	several := len(f.Files) > 1
	return ctx.RunText(func(name string, text []byte) ([]byte, error) {
		r := TextReport{File: name, Tokenizer: counter.Name(), Model: f.Model, Bytes: len(text), Tokens: counter.Count(string(text)), SchemaVersion: SchemaVersion}
		if !utf8.Valid(text) {
			ctx.Warnf("%s: not UTF-8 text; counted as it is", cli.DisplayName(name))
		}
		var out bytes.Buffer
		switch {
		case f.JSON:
			if err := cli.JSONLines(&out, r); err != nil {
				return nil, err
			}
		case several: // as wc names each file (its control characters escaped)
			fmt.Fprintf(&out, "%d %s\n", r.Tokens, human.Safe(name))
		default:
			fmt.Fprintf(&out, "%d\n", r.Tokens)
		}
		return out.Bytes(), nil
	})
}
