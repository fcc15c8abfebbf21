package count

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
)

// barWidth is the width of the window picture in cells.
const barWidth = 64

// segment is one part of the window picture.
type segment struct {
	name   string
	tokens int
	glyph  string // drawn without colour
	color  string // ANSI SGR for the coloured cell
}

func segments(r *Report) []segment {
	c := r.Categories
	used := c.Hidden + c.System + c.Tools + c.User + c.Assistant + c.ToolResults
	free := max(r.EffectiveWindow-used, 0)
	return []segment{
		{"hidden", c.Hidden, "H", "2;35"},
		{"system", c.System, "S", "35"},
		{"tools", c.Tools, "T", "34"},
		{"user", c.User, "U", "32"},
		{"assistant", c.Assistant, "A", "36"},
		{"tool results", c.ToolResults, "R", "33"},
		{"free", free, ".", "2"},
		{"reserved", r.Reserve, "x", "2;31"},
	}
}

// cells shares barWidth cells among the segments by largest remainder, giving every
// non-empty segment at least one cell so nothing present is invisible.
func cells(segs []segment, total int) []int {
	out := make([]int, len(segs))
	if total <= 0 {
		return out
	}
	type rem struct {
		i int
		f float64
	}
	var rems []rem
	used := 0
	for i, s := range segs {
		exact := float64(s.tokens) * barWidth / float64(total)
		out[i] = int(math.Floor(exact))
		if s.tokens > 0 && out[i] == 0 {
			out[i] = 1
		}
		used += out[i]
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for k := 0; used < barWidth && k < len(rems); k++ {
		out[rems[k].i]++
		used++
	}
	// Overflow (the conversation is past the window, or the minimum cells added up):
	// take cells back from the largest segments.
	for used > barWidth {
		big := 0
		for i := range out {
			if out[i] > out[big] {
				big = i
			}
		}
		out[big]--
		used--
	}
	return out
}

// Render writes the human view of a report: the window picture, the top tool consumers
// and the largest messages.
func Render(w io.Writer, r *Report, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	title := r.File
	if title == "" || title == "-" {
		title = "stdin"
	}
	meta := []string{r.Format, r.Tokenizer}
	if r.Model != "" {
		meta = append(meta, r.Model)
	}
	fmt.Fprintf(w, "%s  (%s)\n", paint("1", title), strings.Join(meta, ", "))

	segs := segments(r)
	total := r.Window
	if used := r.Tokens + r.Reserve; used > total {
		total = used
	}
	var bar strings.Builder
	for i, n := range cells(segs, total) {
		if n == 0 {
			continue
		}
		if color {
			glyph := "█"
			switch segs[i].name {
			case "free":
				glyph = "·"
			case "reserved":
				glyph = "░"
			}
			bar.WriteString(paint(segs[i].color, strings.Repeat(glyph, n)))
		} else {
			bar.WriteString(strings.Repeat(segs[i].glyph, n))
		}
	}
	fmt.Fprintf(w, "  [%s]\n", bar.String())
	pct := r.Utilization * 100
	status := fmt.Sprintf("%.1f%%", pct)
	switch {
	case r.Utilization > summarize.Defaults().Trigger:
		status = paint("1;31", status)
	case r.Utilization > snip.Defaults().Trigger:
		status = paint("1;33", status)
	default:
		status = paint("1;32", status)
	}
	fmt.Fprintf(w, "  %s of %s effective tokens used (%s)  window %s, %s reserved for the reply\n",
		human.Thousands(r.Tokens), human.Thousands(r.EffectiveWindow), status, human.Thousands(r.Window), human.Thousands(r.Reserve))
	var legend []string
	for _, s := range segs {
		mark := s.glyph
		if color {
			mark = paint(s.color, "█")
		}
		legend = append(legend, fmt.Sprintf("%s %s %s", mark, s.name, human.Thousands(s.tokens)))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(legend, "  "))
	if h := r.Hidden; h != nil {
		fmt.Fprintf(w, "  hidden: system prompt, tools and the like, not in the file: %s, from %s\n", human.Thousands(h.Tokens), h.Source)
	}
	if a := r.Anchored; a != nil {
		removed := ""
		if a.Removed > 0 {
			removed = fmt.Sprintf(", - %s removed by edits since", human.Thousands(a.Removed))
		}
		fmt.Fprintf(w, "  recorded by the agent (%s): %s up to message %d, + %s counted after%s\n",
			a.Source, human.Thousands(a.Recorded), a.RecordedAt, human.Thousands(a.EstimatedAfter), removed)
	}

	if len(r.ByTool) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint("1", "Top tool consumers"))
		for i, tc := range r.ByTool {
			if i == 8 {
				fmt.Fprintf(w, "  … %d more\n", len(r.ByTool)-i)
				break
			}
			calls := "calls"
			if tc.Calls == 1 {
				calls = "call "
			}
			fmt.Fprintf(w, "  %-22s %4d %s  %10s tokens  %5.1f%%  (results %s, largest %s)\n",
				human.Clip(tc.Name, 22), tc.Calls, calls, human.Thousands(tc.Tokens), measure.Ratio(tc.Tokens, r.Tokens)*100,
				human.Thousands(tc.ResultTokens), human.Thousands(tc.LargestResult))
		}
	}

	if len(r.Messages) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint("1", "Largest messages"))
		idx := make([]int, len(r.Messages))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return r.Messages[idx[a]].Tokens > r.Messages[idx[b]].Tokens })
		for _, i := range idx[:min(len(idx), 8)] {
			m := r.Messages[i]
			where := fmt.Sprintf("#%d", m.Index)
			if m.Line > 0 {
				where = fmt.Sprintf("#%d (line %d)", m.Index, m.Line)
			}
			label := m.Role
			if len(m.Tools) > 0 {
				label += " " + strings.Join(m.Tools, ",")
			}
			fmt.Fprintf(w, "  %-16s %-24s %9s  %s\n", where, human.Clip(label, 24), human.Thousands(m.Tokens), human.Clip(m.Preview, 48))
		}
	}

	fmt.Fprintf(w, "\n%s\n", paint("1", fmt.Sprintf("Tiers at %.1f%%", pct)))
	for _, t := range r.Tiers {
		mark := "  -"
		if t.Acts {
			mark = paint("1;33", "  ✓")
		}
		fmt.Fprintf(w, "%s %-14s %s\n", mark, t.Tool, t.Reason)
		if t.Saves != nil && *t.Saves > 0 {
			verdict := "does not repay it"
			if t.Repays != nil && *t.Repays {
				verdict = "repays it"
			}
			fmt.Fprintf(w, "    %-14s would save %s tokens and re-write %s of the prompt cache: %s within %d requests\n",
				"", human.Thousands(*t.Saves), human.Thousands(*t.Uncached), verdict, RepayRequests)
		}
	}
}

// RenderComparison writes the human view of a comparison.
func RenderComparison(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "before  %-40s %10s tokens  %d messages\n", human.Clip(c.Before.File, 40), human.Thousands(c.Before.Tokens), c.Before.Messages)
	fmt.Fprintf(w, "after   %-40s %10s tokens  %d messages\n", human.Clip(c.After.File, 40), human.Thousands(c.After.Tokens), c.After.Messages)
	fmt.Fprintf(w, "saved   %s tokens (%.1f%%)\n", human.Thousands(c.Saved), c.SavedRatio*100)
	fmt.Fprintf(w, "messages  %d unchanged, %d changed, %d removed, %d added\n", c.Unchanged, c.Changed, c.Removed, c.Added)
	fmt.Fprintf(w, "cache prefix  %s bytes identical, %s tokens of whole messages (%.1f%% of before)\n",
		human.Thousands(c.PrefixBytes), human.Thousands(c.PrefixTokens), c.PrefixRatio*100)
}
