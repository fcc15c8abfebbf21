// Command calibrate fits the prices of the Claude estimate (tokens.Claude) on the real
// Claude Code sessions of the shared corpus and prints them as the Go source of
// internal/tokens/claude_table.go, with the error on the sessions held out of the fit as
// its comment. See README.md.
//
//	go run ./scripts/calibrate [-corpus DIR]
//	go build -o /tmp/calibrate ./scripts/calibrate && /tmp/calibrate > internal/tokens/claude_table.go
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ctxkit/ctxkit/internal/calibrate"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

func main() {
	dir := flag.String("corpus", "../shared/corpus/claude-code", "folder of Claude Code sessions (*.jsonl, searched recursively)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate: error:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	ivs, err := calibrate.Load(dir)
	if err != nil {
		return err
	}
	fit, err := calibrate.FitAll(ivs, tokens.MessageOverhead("anthropic"))
	if err != nil {
		return err
	}
	src, err := fit.GoSource(report(ivs, fit))
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(src)
	return err
}

// report is the fit's comment: its prices and the errors, held out and not.
func report(ivs []calibrate.Interval, fit *calibrate.Fit) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "family\t")
	for c := range tokens.NumClaudeClasses {
		fmt.Fprintf(w, "%s\t", tokens.ClaudeClass(c))
	}
	fmt.Fprintln(w)
	for _, f := range fit.Families {
		fmt.Fprintf(w, "%s\t", f.Name)
		for _, v := range f.Coef {
			fmt.Fprintf(w, "%.3f\t", v)
		}
		fmt.Fprintln(w)
	}
	w.Flush()

	fmt.Fprintf(&b, "\nData: %d intervals from the corpus; left out (their truth holds what the file does\nnot):", len(ivs))
	skipped := calibrate.Skipped(ivs)
	var reasons []string
	for r := range skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for i, r := range reasons {
		sep := ","
		if i == len(reasons)-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " %d %s%s", skipped[r], r, sep)
	}
	fmt.Fprintf(&b, "\nOne session file in three is held out of the fit, by a hash of its name.\n\n")
	fmt.Fprintf(&b, "Relative error per interval of >= %d true tokens (mean, median, p90) and bias (sum\n", calibrate.MinTruth)
	fmt.Fprintf(&b, "of estimates / sum of truth, all intervals); old = 4 bytes a token and %d a message,\n", fit.Framing.Message)
	fmt.Fprintf(&b, "new = these prices and the framing below:\n\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "part\tfamily\tintervals\t>=500\told mean\tmedian\tp90\tbias\tnew mean\tmedian\tp90\tbias\t")
	for _, held := range []bool{true, false} {
		part := "held out"
		if !held {
			part = "training"
		}
		for _, c := range calibrate.Compare(ivs, fit.Families, fit.Framing, held) {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", part, c.Family, c.New.N, c.New.N500,
				c.Old.MeanAbs, c.Old.Median, c.Old.P90, c.Old.Bias, c.New.MeanAbs, c.New.Median, c.New.P90, c.New.Bias)
		}
	}
	w.Flush()

	fmt.Fprintf(&b, "\nThe main family's prices are levelled (x%.3f) so that its training sum is right.\n", fit.Level[0])
	fmt.Fprintf(&b, "The other families are scales of them, fitted robustly, and keep that level; their\n")
	fmt.Fprintf(&b, "own intervals would level them further:")
	for i := 1; i < len(fit.Families); i++ {
		fmt.Fprintf(&b, " %s x%.3f", fit.Families[i].Name, fit.OwnLevel[i])
	}
	fmt.Fprintf(&b, ".\nHeld out, the robust fit without the level gives (mean, median, p90, bias):\n")
	for _, c := range calibrate.Compare(ivs, fit.Unlevelled(), fit.Framing, true) {
		fmt.Fprintf(&b, "  %s: %.3f %.3f %.3f %.3f\n", c.Family, c.New.MeanAbs, c.New.Median, c.New.P90, c.New.Bias)
	}

	fmt.Fprintf(&b, "\nFraming: %d tokens a message (not fitted), %d a tool call block, %d a tool result\n",
		fit.Framing.Message, fit.Framing.ToolCall, fit.Framing.ToolResult)
	fmt.Fprintf(&b, "block (fitted as one price). With the message framing fixed at other values, the\n")
	fmt.Fprintf(&b, "tool blocks' fitted price and the training mean error:\n")
	for _, s := range fit.Sensitivity {
		fmt.Fprintf(&b, "  message %d: tool block %.1f, error %.3f\n", s.Message, s.Tool, s.MeanAbs)
	}

	fmt.Fprintf(&b, "\nMedian truth / new estimate per model, training intervals of >= %d and >= %d tokens:\n",
		calibrate.MinTruth, calibrate.LargeTruth)
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, m := range calibrate.ModelRatios(ivs, fit.Families, fit.Framing) {
		fmt.Fprintf(w, "  %s\t%s\t%s\t\n", m.Model, median(m.Median, m.N), median(m.MedianLarge, m.NLarge))
	}
	w.Flush()
	for i := 1; i < len(fit.Families); i++ {
		fmt.Fprintf(&b, "\n%s: the main family's prices x%.3f, with %.1f tokens a tool block where\n", fit.Families[i].Name, fit.Scale[i], fit.Tool[i])
		fmt.Fprintf(&b, "measure adds %d. Fitted on its own, per class over the main family's prices:\n ", fit.Framing.ToolCall)
		for k, r := range fit.Own[i] {
			if !math.IsNaN(r) {
				fmt.Fprintf(&b, " %s %.2f", tokens.ClaudeClass(k), r)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func median(m float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%d)", m, n)
}
