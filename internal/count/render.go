package count

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/summarize"
)

// DefaultWidth is the width the picture is drawn to when the terminal's is not known.
const DefaultWidth = 80

// barWidth is the width of the window picture in cells on a terminal width columns wide:
// the line less its margin and brackets, within reason.
func barWidth(width int) int {
	return min(max(width-4, 16), 200)
}

// segment is one part of the window picture.
type segment struct {
	name   string
	tokens int
	glyph  string // drawn without colour
	color  string // ANSI SGR for the coloured cell
}

func segments(r *Report) []segment {
	c := r.Categories
	used := c.Hidden + c.System + c.Tools + c.User + c.Attachments + c.Assistant + c.Thinking + c.ToolResults
	free := max(r.EffectiveWindow-used, 0)
	return []segment{
		{"hidden", c.Hidden, "H", "2;35"},
		{"system", c.System, "S", "35"},
		{"tools", c.Tools, "T", "34"},
		{"user", c.User, "U", "32"},
		{"attachments", c.Attachments, "@", "2;32"},
		{"assistant", c.Assistant, "A", "36"},
		{"thinking", c.Thinking, "K", "2;36"},
		{"tool results", c.ToolResults, "R", "33"},
		{"free", free, ".", "2"},
		{"reserved", r.Reserve, "x", "2;31"},
	}
}

// cells shares width cells among the segments by largest remainder, giving every
// non-empty segment at least one cell so nothing present is invisible.
func cells(segs []segment, total, width int) []int {
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
		exact := float64(s.tokens) * float64(width) / float64(total)
		out[i] = int(math.Floor(exact))
		if s.tokens > 0 && out[i] == 0 {
			out[i] = 1
		}
		used += out[i]
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for k := 0; used < width && k < len(rems); k++ {
		out[rems[k].i]++
		used++
	}
	// Overflow (the conversation is past the window, or the minimum cells added up):
	// take cells back from the largest segments.
	for used > width {
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

// Render writes the human view of a report, fitted to a terminal width columns wide: the
// window picture, the top tool consumers and the largest messages. Every text the
// transcript gave (the model, tool names, paths, previews) and the file's name are shown
// through human.Safe or human.SafeLabel: their control characters escaped.
func Render(w io.Writer, r *Report, color bool, width int) {
	if width <= 0 {
		width = DefaultWidth
	}
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	title := human.Safe(r.File)
	if title == "" || title == "-" {
		title = "stdin"
	}
	meta := []string{r.Format, r.Tokenizer}
	if r.Model != "" {
		meta = append(meta, human.Safe(r.Model))
	}
	if about := "(" + strings.Join(meta, ", ") + ")"; utf8.RuneCountInString(title)+2+len(about) <= width {
		fmt.Fprintf(w, "%s  %s\n", paint("1", title), about)
	} else {
		fmt.Fprintf(w, "%s\n  %s\n", paint("1", title), about)
	}

	segs := segments(r)
	total := r.Window
	if used := r.Tokens + r.Reserve; used > total {
		total = used
	}
	var bar strings.Builder
	for i, n := range cells(segs, total, barWidth(width)) {
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
	used := fmt.Sprintf("  %s of %s effective tokens used (%s)", human.Thousands(r.Tokens), human.Thousands(r.EffectiveWindow), status)
	window := fmt.Sprintf("window %s, %s reserved for the reply", human.Thousands(r.Window), human.Thousands(r.Reserve))
	if visibleWidth(used)+2+len(window) <= width {
		fmt.Fprintf(w, "%s  %s\n", used, window)
	} else {
		fmt.Fprintf(w, "%s\n  %s\n", used, window)
	}
	// The legend, as many entries a line as fit.
	line, lineWidth := "  ", 2
	for _, s := range segs {
		mark := s.glyph
		if color {
			mark = paint(s.color, "█")
		}
		entry := fmt.Sprintf("%s %s", s.name, human.Thousands(s.tokens))
		n := 2 + utf8.RuneCountInString(entry) // the mark, a space
		if lineWidth > 2 && lineWidth+2+n > width {
			fmt.Fprintln(w, line)
			line, lineWidth = "  ", 2
		}
		if lineWidth > 2 {
			line, lineWidth = line+"  ", lineWidth+2
		}
		line, lineWidth = line+mark+" "+entry, lineWidth+n
	}
	fmt.Fprintln(w, line)
	if h := r.Hidden; h != nil {
		from := h.Source
		if h.AcrossCompaction {
			from += " before the compaction"
		}
		wrap(w, fmt.Sprintf("hidden: %s: %s, from %s", hiddenWhat(r), human.Thousands(h.Tokens), from), width, "  ", "    ")
	}
	if a := r.Anchored; a != nil {
		removed := ""
		if a.Removed > 0 {
			removed = fmt.Sprintf(", - %s removed by edits since", human.Thousands(a.Removed))
		}
		if a.StaleReasoning > 0 {
			removed += fmt.Sprintf(", - %s of reasoning no longer sent", human.Thousands(a.StaleReasoning))
		}
		wrap(w, fmt.Sprintf("recorded by the agent (%s): %s up to message %d, + %s counted after%s",
			a.Source, human.Thousands(a.Recorded), a.RecordedAt, human.Thousands(a.EstimatedAfter), removed), width, "  ", "    ")
	}
	renderTrend(w, r, paint, width)
	if s := r.Session; s != nil {
		n := func(k int, word string) string { return human.Thousands(k) + " " + strings.TrimSpace(column(k, word)) }
		text := fmt.Sprintf("session: %s, %s prompt tokens sent (the main log)", n(s.Requests, "request"), human.Thousands(s.PromptTokens))
		if ws := s.WithSubagents; ws != nil {
			text += fmt.Sprintf("; with its %s: %s, %s", n(len(s.Subagents), "subagent"), n(ws.Requests, "request"), human.Thousands(ws.PromptTokens))
		}
		wrap(w, text, width, "  ", "    ")
	}
	renderSubagents(w, r, paint, width)

	if len(r.ByTool) > 0 {
		fmt.Fprintf(w, "\n%s\n", paint("1", "Top tool consumers"))
		for i, tc := range r.ByTool {
			if i == 8 {
				fmt.Fprintf(w, "  … %d more\n", len(r.ByTool)-i)
				break
			}
			calls := column(tc.Calls, "call")
			// (the name's column narrower on a narrow terminal: the figures are 40 columns)
			nameWidth := min(max(width-40, 10), 22)
			text := fmt.Sprintf("  %-*s %4d %s  %10s tokens  %5.1f%%", nameWidth, human.SafeLabel(tc.Name, nameWidth), tc.Calls, calls,
				human.Thousands(tc.Tokens), measure.Ratio(tc.Tokens, r.Tokens)*100)
			// (what the results took, where there is room for it)
			if more := fmt.Sprintf("  (results %s, largest %s)", human.Thousands(tc.ResultTokens), human.Thousands(tc.LargestResult)); utf8.RuneCountInString(text+more) <= width {
				text += more
			}
			fmt.Fprintln(w, text)
		}
	}

	renderFiles(w, r, paint, width)
	renderServers(w, r, paint, width)

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
			text := fmt.Sprintf("  %-16s %-24s %9s", where, human.Clip(human.Safe(label), 24), human.Thousands(m.Tokens))
			if room := width - utf8.RuneCountInString(text) - 2; room >= 8 {
				text += "  " + human.SafeLabel(m.Preview, min(room, 48))
			}
			fmt.Fprintln(w, text)
		}
	}

	fmt.Fprintf(w, "\n%s\n", paint("1", fmt.Sprintf("Tiers at %.1f%%", pct)))
	for _, t := range r.Tiers {
		mark := "  -"
		if t.Acts {
			mark = paint("1;33", "  ✓")
		}
		wrap(w, t.Reason, width, fmt.Sprintf("%s %-14s ", mark, t.Tool), strings.Repeat(" ", 19))
		if t.Saves != nil && *t.Saves > 0 {
			verdict := "does not repay it"
			if t.Repays != nil && *t.Repays {
				verdict = "repays it"
			}
			wrap(w, fmt.Sprintf("would save %s tokens and re-write %s of the prompt cache: %s within %d requests",
				human.Thousands(*t.Saves), human.Thousands(*t.Uncached), verdict, RepayRequests), width, strings.Repeat(" ", 19), strings.Repeat(" ", 19))
		}
	}
}

// hiddenWhat says what the hidden part stands for in a document of the report's format:
// what no record of it holds. A Claude Code log holds neither the system prompt nor the
// tool schemas; a Codex rollout holds its instructions (they are counted as system) but
// not the tools; a request sent with --overhead holds what the user says it lacks.
func hiddenWhat(r *Report) string {
	switch {
	case r.Hidden.Source == "--overhead":
		return "what the agent adds, as --overhead says"
	case r.Format == "codex":
		return "tool schemas and instructions no record holds"
	default:
		return "system prompt, tool schemas and reminders no record holds"
	}
}

// pictureRows is how many files or MCP servers the picture lists: enough to name what
// costs the most, few enough that the tiers stay on a screen (--json has them all).
const pictureRows = 5

// renderTrend draws the recorded usage per request as a sparkline under the window's
// figures, when there are a few figures to draw: the whole session's where the file keeps
// them (the fill, the drop at each compaction, the refill), else the live conversation's.
// The first request after a compaction is drawn in another colour and marked with a ┃ in
// the line below, so the marks survive NO_COLOR; compactions the chart cannot place are
// said in words.
func renderTrend(w io.Writer, r *Report, paint func(code, s string) string, width int) {
	t := r.Trend
	if t == nil {
		return
	}
	values, after := t.Session, t.SessionCompactedAfter
	if len(values) < 3 {
		values, after = make([]int, len(t.Points)), nil
		for i, p := range t.Points {
			values[i] = p.Tokens
		}
		// A summary inside the live series: the first request after it.
		for _, at := range t.CompactedAt {
			for i, p := range t.Points {
				if p.Message > at {
					after = append(after, i)
					break
				}
			}
		}
	}
	if len(values) < 3 {
		if t.Compactions > 0 {
			wrap(w, compacted(t.Compactions)+"; the conversation now starts at the newest summary", width, "  ", "    ")
		}
		return
	}
	top := 0
	for _, v := range values {
		top = max(top, v)
	}
	head := fmt.Sprintf("%s %s → %s tokens over %d requests, peak %.0f%% of the window", paint("1", "Trend:"),
		human.Thousands(values[0]), human.Thousands(values[len(values)-1]), len(values), measure.Ratio(top, r.EffectiveWindow)*100)
	if t.Compactions > 0 {
		head += ", " + compacted(t.Compactions)
	}
	fmt.Fprintln(w)
	wrap(w, head, width, "", "  ")
	line, cellOf := sparkline(values, top, barWidth(width))
	marks := []rune(strings.Repeat(" ", len(line)))
	placed := 0
	for _, k := range after {
		if k > 0 && k < len(values) {
			marks[cellOf[k]] = '┃'
			placed++
		}
	}
	var drawn strings.Builder
	for c := 0; c < len(line); {
		e := c + 1 // a run of cells of one colour, painted at once
		for e < len(line) && (marks[e] == ' ') == (marks[c] == ' ') {
			e++
		}
		code := "36"
		if marks[c] != ' ' {
			code = "33"
		}
		drawn.WriteString(paint(code, string(line[c:e])))
		c = e
	}
	fmt.Fprintf(w, "  %s\n", drawn.String())
	if placed > 0 {
		fmt.Fprintf(w, "  %s %s\n", paint("33", strings.TrimRight(string(marks), " ")), "compaction")
	}
	if t.Compactions > placed && len(t.Session) < 3 {
		wrap(w, compacted(t.Compactions)+"; the figures start at the newest summary", width, "  ", "    ")
	}
}

// compacted says how many times a session was compacted.
func compacted(n int) string {
	if n == 1 {
		return "compacted once"
	}
	return fmt.Sprintf("compacted %d times", n)
}

// renderFiles lists the files whose reads cost the most.
func renderFiles(w io.Writer, r *Report, paint func(code, s string) string, width int) {
	if len(r.ByFile) == 0 {
		return
	}
	// Paths under one folder are shown from it, named in the heading: the part that tells
	// the files apart is what a narrow terminal keeps.
	dir := commonDir(r.ByFile)
	heading := "Files read"
	if dir != "" {
		// (the folder clipped at its start, the heading's words kept)
		heading += " under " + clipLeft(human.Safe(dir), max(width-len(heading)-len(" under "), 12))
	}
	fmt.Fprintf(w, "\n%s\n", paint("1", heading))
	// (the figures take 33 columns; the path gets the rest, clipped at its start)
	pathWidth := min(max(width-35, 12), 60)
	for i, f := range r.ByFile {
		if i == pictureRows {
			fmt.Fprintf(w, "  … %d more\n", len(r.ByFile)-i)
			break
		}
		reads := column(f.Reads, "read")
		fmt.Fprintf(w, "  %-*s %3d %s %9s  %5.1f%%\n", pathWidth, clipLeft(human.Safe(human.OneLine(strings.TrimPrefix(f.Path, dir))), pathWidth), f.Reads, reads,
			human.Thousands(f.Tokens), measure.Ratio(f.Tokens, r.Tokens)*100)
	}
}

// renderSubagents writes one line per subagent of the session, the largest peak first:
// its context's peak and size now, what its result cost the parent's context, what
// filled it most, and the call that started it, where there is room.
func renderSubagents(w io.Writer, r *Report, paint func(code, s string) string, width int) {
	s := r.Session
	if s == nil {
		return
	}
	var subs []*SubagentFigures
	for i := range s.Subagents {
		if s.Subagents[i].SubagentContext != nil {
			subs = append(subs, &s.Subagents[i])
		}
	}
	if len(subs) == 0 {
		return
	}
	sort.SliceStable(subs, func(a, b int) bool { return subs[a].Peak.Tokens > subs[b].Peak.Tokens })
	heading := "Subagents, each a context of its own"
	if s.Peak != nil && s.Peak.Tokens > 0 {
		heading += fmt.Sprintf(" (the main log's peak %s)", human.Thousands(s.Peak.Tokens))
	}
	// (each line cut at the terminal's width: the call's description is last)
	fit := func(s string) string {
		if utf8.RuneCountInString(s) <= width {
			return s
		}
		return human.Clip(s, width-1)
	}
	fmt.Fprintf(w, "\n%s\n", paint("1", fit(heading)))
	fmt.Fprintln(w, fit(fmt.Sprintf("  %-8s %8s %8s %7s  %-18s %s", "agent", "peak", "now", "result", "most of it", "the call")))
	for i, sa := range subs {
		if i == pictureRows {
			fmt.Fprintf(w, "  … and %d more\n", len(subs)-i)
			break
		}
		result, task := "-", "none"
		if t := sa.Task; t != nil {
			result = human.Thousands(t.ResultTokens)
			task = t.Tool
			if t.Message >= 0 {
				task += fmt.Sprintf(" #%d", t.Message)
			}
			if t.Description != "" {
				task += " " + strconv.Quote(t.Description)
			}
		}
		id := cmp.Or(sa.AgentID, sa.Thread) // (a subagent of 1.x is named by its first line)
		if len(id) > 8 {
			id = id[:8]
		}
		text := fmt.Sprintf("  %-8s %8s %8s %7s  %-18s %s", human.SafeLabel(id, 8), human.Thousands(sa.Peak.Tokens), human.Thousands(sa.Tokens),
			result, human.SafeLabel(filledBy(sa.SubagentContext), 18), human.Safe(task))
		fmt.Fprintln(w, fit(text))
	}
}

// filledBy names what fills most of a subagent's context besides what every request
// holds (the hidden part, the schemas): the tool whose results cost the most, or the
// user's, the assistant's, thinking or attachments when larger.
func filledBy(c *SubagentContext) string {
	name, most := "", 0
	for _, tc := range c.ByTool {
		if tc.ResultTokens > most {
			name, most = human.OneLine(tc.Name), tc.ResultTokens
		}
	}
	k := c.Categories
	for _, cat := range []struct {
		name   string
		tokens int
	}{{"user", k.User}, {"assistant", k.Assistant}, {"thinking", k.Thinking}, {"attachments", k.Attachments}} {
		if cat.tokens > most {
			name, most = cat.name, cat.tokens
		}
	}
	if most == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %s", name, human.Thousands(most))
}

// renderServers writes one line per MCP server, with its most expensive tools where there
// is room.
func renderServers(w io.Writer, r *Report, paint func(code, s string) string, width int) {
	if len(r.ByServer) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", paint("1", "MCP servers"))
	nameWidth := min(max(width-40, 10), 22)
	for i, s := range r.ByServer {
		if i == pictureRows {
			fmt.Fprintf(w, "  … %d more\n", len(r.ByServer)-i)
			break
		}
		calls := column(s.Calls, "call")
		text := fmt.Sprintf("  %-*s %4d %s  %10s tokens  %5.1f%%", nameWidth, human.SafeLabel(s.Server, nameWidth), s.Calls, calls,
			human.Thousands(s.Tokens), measure.Ratio(s.Tokens, r.Tokens)*100)
		var names []string
		for _, tc := range s.Tools {
			names = append(names, tc.Name)
		}
		what := strings.Join(names, ", ")
		if len(names) == 0 {
			what = "not called" // (declared only: its definitions are what it costs)
		}
		if room := width - utf8.RuneCountInString(text) - 2; room >= 10 {
			text += "  " + human.SafeLabel(what, room)
		}
		fmt.Fprintln(w, text)
	}
}

// RenderComparison writes the human view of a comparison.
func RenderComparison(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "before  %-40s %10s tokens  %d messages\n", human.Clip(human.Safe(c.Before.File), 40), human.Thousands(c.Before.Tokens), c.Before.Messages)
	fmt.Fprintf(w, "after   %-40s %10s tokens  %d messages\n", human.Clip(human.Safe(c.After.File), 40), human.Thousands(c.After.Tokens), c.After.Messages)
	fmt.Fprintf(w, "saved   %s tokens (%.1f%%)\n", human.Thousands(c.Saved), c.SavedRatio*100)
	fmt.Fprintf(w, "messages  %d unchanged, %d changed, %d removed, %d added\n", c.Unchanged, c.Changed, c.Removed, c.Added)
	fmt.Fprintf(w, "cache prefix  %d messages sent identical, %s tokens of whole messages (%.1f%% of before); %s bytes of the files identical\n",
		c.PrefixMessages, human.Thousands(c.PrefixTokens), c.PrefixRatio*100, human.Thousands(c.PrefixBytes))
}

// wrap writes text word by word in lines of at most width columns, the first after first,
// the others after indent (a word longer than a line gets a line of its own).
func wrap(w io.Writer, text string, width int, first, indent string) {
	line, empty := first, true
	for _, word := range strings.Fields(text) {
		if !empty && visibleWidth(line)+1+utf8.RuneCountInString(word) > width {
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}

// visibleWidth is how many columns s takes on a terminal: its characters, less the ANSI
// colour sequences.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			if j := strings.IndexByte(s[i:], 'm'); j >= 0 {
				i += j + 1
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// column is a word for a count's column: n "call " or "calls", the same width either way.
func column(n int, word string) string {
	if n == 1 {
		return word + " "
	}
	return word + "s"
}
