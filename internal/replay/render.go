package replay

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/tiers"
)

// tierMark is the letter the chart marks a tier's firing with: each tier's Mark, and
// ctx-repair's.
var tierMark = func() map[string]byte {
	m := map[string]byte{"ctx-repair": 'r'}
	for _, t := range tiers.All() {
		m[t.Name] = t.Mark
	}
	return m
}()

// Render writes the report for a person: the totals as a table, then utilization per
// request as a chart cols wide. The file's name, the model the session names and the tools
// the stages' stats lines name are shown with their control characters escaped.
func Render(w *bytes.Buffer, r *Report, cols int, color bool) {
	requests := fmt.Sprintf("%d requests", r.Requests)
	if r.Recorded > r.Requests {
		requests = fmt.Sprintf("%d of the %d requests it records", r.Requests, r.Recorded)
	}
	if len(r.Subagents) > 0 {
		requests += " of the main log"
	}
	fmt.Fprintf(w, "%s: %s through %s\n", human.Safe(r.File), requests, human.Safe(r.Pipe))
	model := human.Safe(r.Model)
	if model == "" {
		model = "model unknown"
	}
	fmt.Fprintf(w, "window %s (%s for the prompt), %s, priced %s\n\n", human.Thousands(r.Window), human.Thousands(r.Effective), model, priceText(r))

	row := func(label, sent, was, note string) {
		fmt.Fprintf(w, "  %-14s %14s %14s  %s\n", label, sent, was, note)
	}
	row("", "sent", "as recorded", "")
	row("tokens", human.Thousands(r.Tokens), human.Thousands(r.Uncompacted), fmt.Sprintf("%.2f×", r.SentRatio))
	row("from cache", human.Thousands(r.Cached), human.Thousands(r.CachedUncompacted), "")
	row("cost", dollars(r.Cost), dollars(r.CostUncompacted), fmt.Sprintf("billed %.2f×", r.BilledRatio))
	over := "requests"
	if r.Unavoidable > 0 {
		over = fmt.Sprintf("requests; %d could not fit: what no tier may change is over the window", r.Unavoidable)
	}
	row("over window", fmt.Sprint(r.OverWindow), fmt.Sprint(r.OverUncompacted), over)
	row("cache breaks", fmt.Sprint(r.CacheBreaks), "", fmt.Sprintf("the fewest that fit every request: %d", r.Oracle.FewestBreaks))
	if r.ClientCompactions > 0 {
		row("compactions", "", fmt.Sprint(r.ClientCompactions), "the client's own: each request after one is the history it compacted, piped afresh")
	}
	if r.Repeats > 0 {
		row("repeats", fmt.Sprint(r.Repeats), "", fmt.Sprintf("a tier firing on two requests in a row; %d of them needed (the request over the window otherwise)", r.RepeatsNeeded))
	}
	row("best possible", dollars(r.Oracle.Cost), "", fmt.Sprintf("billed %.2f×: compacting to what no tier may change, at the best requests (%d cache breaks)", r.Oracle.BilledRatio, r.Oracle.CacheBreaks))
	if r.Problems > 0 {
		row("invalid", fmt.Sprint(r.Problems), "", "requests ctx-repair --check would reject")
	}
	var tools []string
	for t := range r.Firings {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for i, t := range tools {
		label := ""
		if i == 0 {
			label = "fired"
		}
		row(label, fmt.Sprintf("%s ×%d", human.Safe(t), r.Firings[t]), "", "saved "+human.Thousands(r.Saved[t])+" tokens in all")
	}
	if r.WithSubagents != nil {
		renderWithSubagents(w, r)
	}
	if len(r.Turns) > 0 {
		fmt.Fprintln(w)
		chart(w, r, cols, color)
	}
}

// renderWithSubagents writes the session with its subagents: each replayed on its own,
// their requests and costs added to the main log's.
func renderWithSubagents(w *bytes.Buffer, r *Report) {
	t := r.WithSubagents
	row := func(label, sent, was, note string) {
		fmt.Fprintf(w, "  %-14s %14s %14s  %s\n", label, sent, was, note)
	}
	fmt.Fprintf(w, "\nwith its %d subagents (each log replayed on its own, a context of its own): %d requests\n", len(r.Subagents), t.Requests)
	row("", "sent", "as recorded", "")
	row("tokens", human.Thousands(t.Tokens), human.Thousands(t.Uncompacted), fmt.Sprintf("%.2f×", t.SentRatio))
	row("from cache", human.Thousands(t.Cached), human.Thousands(t.CachedUncompacted), "")
	row("cost", dollars(t.Cost), dollars(t.CostUncompacted), fmt.Sprintf("billed %.2f×", t.BilledRatio))
	row("over window", fmt.Sprint(t.OverWindow), fmt.Sprint(t.OverUncompacted), "requests")
	row("cache breaks", fmt.Sprint(t.CacheBreaks), "", "")
	for _, s := range r.Subagents {
		row("", fmt.Sprintf("%d requests", s.Requests), human.Thousands(s.Uncompacted), human.Clip(filepath.Base(s.File), 40))
	}
}

func priceText(r *Report) string {
	p := r.Price
	if p.Model == "relative" {
		return "relatively (input 1, cache write " + fmt.Sprint(p.CacheWrite) + ", read " + fmt.Sprint(p.CacheRead) + ")"
	}
	return fmt.Sprintf("$%.2f in, $%.2f cache write, $%.2f cache read a million", p.Input, p.CacheWrite, p.CacheRead)
}

func dollars(x float64) string {
	if x < 10 {
		return fmt.Sprintf("$%.3f", x)
	}
	return "$" + human.Thousands(int(x+0.5))
}

// chart draws utilization per request: a column per request (or per group of requests
// when there are more than the width), the request sent in full blocks, the session as
// recorded behind it in light shade, the window as a rule; under it, which tiers fired.
func chart(w *bytes.Buffer, r *Report, cols int, color bool) {
	const height = 8
	axis := 6
	n := len(r.Turns)
	cells := max(10, cols-axis-1)
	group := (n + cells - 1) / cells
	columns := (n + group - 1) / group
	sent := make([]float64, columns)
	was := make([]float64, columns)
	marks := make([]byte, columns)
	over := make([]bool, columns)
	for i, t := range r.Turns {
		c := i / group
		sent[c] = max(sent[c], t.Utilization)
		if r.Effective > 0 {
			was[c] = max(was[c], float64(t.Uncompacted)/float64(r.Effective))
		}
		over[c] = over[c] || t.OverWindow
		for _, f := range t.Fired {
			m, ok := tierMark[f.Tool]
			if !ok {
				m = '*'
			}
			if marks[c] != 0 && marks[c] != m {
				m = '*'
			}
			marks[c] = m
		}
		if t.ClientCompaction && marks[c] == 0 {
			marks[c] = 'C' // (a tier's mark wins: the client's compaction is in the table)
		}
	}
	top := 1.0
	for _, v := range was {
		top = max(top, v)
	}
	top = float64(int(top*4+0.999)) / 4 // a whole quarter
	fmt.Fprintf(w, "utilization per request (█ sent, ░ as recorded, ─ the window)\n")
	for row := 0; row < height; row++ {
		hi := top * float64(height-row) / height
		lo := top * float64(height-row-1) / height
		label := ""
		if row == 0 || row == height-1 || (lo < 1 && hi >= 1) {
			label = fmt.Sprintf("%.0f%%", hi*100)
		}
		fmt.Fprintf(w, "%*s ┤", axis-1, label)
		var line strings.Builder
		for c := 0; c < columns; c++ {
			mid := (hi + lo) / 2
			switch {
			case sent[c] >= mid:
				line.WriteString("█")
			case was[c] >= mid:
				line.WriteString("░")
			case lo < 1 && hi >= 1:
				line.WriteString("─")
			default:
				line.WriteByte(' ')
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
	var m strings.Builder
	for c := 0; c < columns; c++ {
		switch {
		case over[c]:
			m.WriteByte('!')
		case marks[c] != 0:
			m.WriteByte(marks[c])
		default:
			m.WriteByte(' ')
		}
	}
	fmt.Fprintf(w, "%*s  %s\n", axis-1, "", strings.TrimRight(m.String(), " "))
	per := ""
	if group > 1 {
		per = fmt.Sprintf(", a column is %d requests", group)
	}
	fmt.Fprintf(w, "%*s  fired: p persist, b budget, s snip, S summarize, t trim, * several; C the client compacted; ! over the window%s\n", axis-1, "", per)
	_ = color
}
