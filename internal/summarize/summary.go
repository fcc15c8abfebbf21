package summarize

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	kept "github.com/ctxkit/ctxkit/internal/offload" // (offload is this package's function)
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Headings are the fixed sections of a summary, in order: a snapshot of the work an agent
// can carry on from, not a story.
var Headings = []string{
	"Goal and user requests",
	"Decisions",
	"Files read",
	"Files changed",
	"Commands and tests",
	"Errors",
	"Pending tasks",
	"At the cut",
	"Next step",
	"Notes",
}

// cumulative sections grow across summaries; the others say where things stand and are
// replaced by the newer summary's.
var cumulative = map[string]bool{
	"Goal and user requests": true, "Decisions": true, "Files read": true,
	"Files changed": true, "Commands and tests": true, "Errors": true, "Notes": true,
}

// maxItems caps a cumulative section but the user's requests: the oldest items beyond it
// go (the first, always stays).
const maxItems = 60

// Sections is a summary's content: items per heading.
type Sections map[string][]string

// Fold puts the newer sections after the older ones: cumulative sections keep the older
// items and add the newer (an item already there is not repeated; an error that a newer
// item marks fixed replaces its unresolved form), the others take the newer items when
// there are any.
func Fold(older, newer Sections) Sections {
	out := Sections{}
	newer = goalCarried(older, newer)
	for _, h := range Headings {
		if !cumulative[h] {
			if len(newer[h]) > 0 {
				out[h] = newer[h]
			} else {
				out[h] = older[h]
			}
			continue
		}
		seen := map[string]int{}
		var items []string
		for _, it := range append(append([]string(nil), older[h]...), newer[h]...) {
			key := itemKey(it)
			if k, ok := seen[key]; ok {
				items[k] = it // the newer word on the same thing
				continue
			}
			seen[key] = len(items)
			items = append(items, it)
		}
		if len(items) > maxItems && h != "Goal and user requests" {
			// Requests are never left out: KeepUserWords shortens the older ones instead.
			first := items[0]
			items = append([]string{first, fmt.Sprintf("(%d older items left out)", len(items)-maxItems+1)}, items[len(items)-maxItems+2:]...)
		}
		out[h] = items
	}
	return out
}

// goalCarried keeps the session's goal: when an older summary states one, the newer
// part's first request is one of the user's requests, not the goal.
func goalCarried(older, newer Sections) Sections {
	const goal = "Goal and user requests"
	if !slices.ContainsFunc(older[goal], func(it string) bool { return strings.HasPrefix(it, "Goal: ") }) ||
		!slices.ContainsFunc(newer[goal], func(it string) bool { return strings.HasPrefix(it, "Goal: ") }) {
		return newer
	}
	out := maps.Clone(newer)
	out[goal] = slices.Clone(newer[goal])
	for i, it := range out[goal] {
		out[goal][i] = strings.TrimPrefix(it, "Goal: ")
	}
	return out
}

// EarlierSummary is another agent's compaction summary (Claude Code's, Codex's) as
// sections: its goal, when it states one, and its text, shortened.
func EarlierSummary(text string) Sections {
	var items []string
	if g := summaryGoal(text); g != "" {
		items = append(items, "Goal: "+quote(g))
	}
	return Sections{"Goal and user requests": append(items, "Earlier summary: "+shorten(text, 4000))}
}

// summaryGoal is the goal a compaction summary states: the section that names the
// request or the goal (Claude Code's "Primary Request and Intent"), else its first
// paragraph after the line that says it is a summary; "" when it has none.
func summaryGoal(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i, line := range lines {
		h := strings.ToLower(line)
		if len(line) > 80 || !strings.Contains(h, "primary request") && !strings.Contains(h, "goal") && !strings.Contains(h, "intent") {
			continue
		}
		var body []string
		if _, after, ok := strings.Cut(line, ":"); ok && strings.Trim(after, " *") != "" {
			body = append(body, strings.Trim(after, " *"))
		}
		for _, next := range lines[i+1:] {
			t := strings.TrimSpace(next)
			if t == "" && len(body) > 0 || numberedHeading(t) {
				break
			}
			if t != "" {
				body = append(body, strings.TrimLeft(t, "-* "))
			}
		}
		if g := strings.Join(body, " "); g != "" {
			return shorten(g, 600)
		}
	}
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		p = strings.TrimSpace(p)
		lower := strings.ToLower(p)
		if p == "" || strings.HasPrefix(lower, "this session is being continued") || strings.HasPrefix(lower, "analysis:") || strings.HasPrefix(lower, "<analysis>") {
			continue
		}
		return shorten(strings.Join(strings.Fields(strings.ReplaceAll(p, "*", "")), " "), 600)
	}
	return ""
}

// numberedHeading tells a line that opens the next numbered section ("2. Key Technical
// Concepts:").
func numberedHeading(line string) bool {
	i := strings.IndexAny(line, ".)")
	return i > 0 && i <= 2 && strings.Trim(line[:i], "0123456789") == "" && strings.HasSuffix(line, ":")
}

// itemKey is what makes two items the same thing: an error or command is the same
// whether or not it was fixed since.
func itemKey(it string) string {
	for _, suffix := range []string{" [fixed]", " [unresolved]"} {
		it = strings.TrimSuffix(it, suffix)
	}
	return it
}

// Meta describes a summary for its opening tag.
type Meta struct {
	Messages, Tokens int
	Backend          string
	Offloaded        string // path of the full pre-summary document in the store, if kept
	Dropped          int    // oldest messages the summarizer could not take (prompt too long)
	Pinned           int    // pinned texts carried over before the summary's text (Place)
	Terse            bool   // say what it replaces in fewer words (Fit, at its last step)
}

// Render writes a summary message's text: the tag that marks it, a line saying what it
// stands for, the sections, and where the full history is when it was offloaded.
func Render(s Sections, m Meta) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s messages=\"%d\" tokens=\"%d\" backend=\"%s\">\n", transcript.SummaryTag, m.Messages, m.Tokens, m.Backend)
	if m.Terse {
		fmt.Fprintf(&b, "Summary of the first %d messages; the messages after it continue from here.\n", m.Messages)
	} else {
		fmt.Fprintf(&b, "This replaces the first %d messages of the conversation (about %d tokens), summarized by ctx-summarize; the messages after it continue from where it ends.\n", m.Messages, m.Tokens)
	}
	if m.Dropped > 0 {
		fmt.Fprintf(&b, "The oldest %d of them did not fit the summarizer and are not covered.\n", m.Dropped)
	}
	if m.Pinned > 0 {
		fmt.Fprintf(&b, "Pinned context (verbatim): the %d texts before this summary, in the same message, are the client's standing instructions from the messages it replaces, carried over unchanged.\n", m.Pinned)
	}
	for _, h := range Headings {
		items := s[h]
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n", h)
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(it, "\n", "\n  "))
		}
	}
	if m.Offloaded != "" {
		fmt.Fprintf(&b, "\nThe full conversation before this summary is stored at %s%s; read it with a file tool or cat, or find a detail in it with ctx-recall WORDS, if one is missing here.\n", m.Offloaded, kept.RecallNote)
	}
	b.WriteString("</ctxkit-summary>")
	return b.String()
}

// Parse reads the sections back from a summary's text (one Render wrote, or a model
// answering in much the same shape). Headings are read leniently (headingOf): a model that
// writes "## Goal" or "**Next steps:**" means the section all the same, and the items under
// a heading that names none of them go to Notes with the heading before them, rather than
// being lost. Text outside any section is returned as rest.
func Parse(text string) (Sections, string) {
	s := Sections{}
	var rest []string
	current, prefix := "", ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if h, ok := headingOf(line); ok {
			current, prefix = h, ""
			if h == "" {
				// A heading of none of the sections: its items are kept under Notes.
				current, prefix = "Notes", headingText(line)+": "
			}
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, transcript.SummaryTag), trimmed == "</ctxkit-summary>":
		case current == "":
			if trimmed != "" {
				rest = append(rest, trimmed)
			}
		case strings.HasPrefix(line, "  ") && len(s[current]) > 0:
			// A continuation line, even one that starts with "- " (a list quoted in a
			// request): read as an item of its own, it came back as "- - x".
			s[current][len(s[current])-1] += "\n" + strings.TrimPrefix(line, "  ")
		case strings.HasPrefix(trimmed, "- "), strings.HasPrefix(trimmed, "* "):
			s[current] = append(s[current], prefix+strings.TrimSpace(trimmed[2:]))
		case trimmed != "":
			s[current] = append(s[current], prefix+trimmed)
		}
	}
	return s, strings.Join(rest, "\n")
}

// headingOf reads a heading line: "## Name" (any level), "**Name**" or "**Name:**" on a
// line of its own, not indented (an indented one is part of a quoted item). It returns the
// section the heading names, "" for a heading that names none.
func headingOf(line string) (string, bool) {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return "", false
	}
	text := headingText(line)
	if text == "" {
		return "", false
	}
	return sectionNamed(text), true
}

// headingText is the text of a heading line, "" when the line is not one.
func headingText(line string) string {
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "#"):
		line = strings.TrimLeft(line, "#")
		if line == "" || line[0] != ' ' {
			return ""
		}
	case strings.HasPrefix(line, "**") && strings.HasSuffix(line, "**") && len(line) > 4:
		line = line[2 : len(line)-2]
	case strings.HasPrefix(line, "**") && strings.HasSuffix(line, "**:") && len(line) > 5:
		line = line[2 : len(line)-3]
	default:
		return ""
	}
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "*:"))
}

// sectionAliases name the sections the way models write them, most specific first.
var sectionAliases = []struct{ word, heading string }{
	{"at the cut", "At the cut"}, {"current work", "At the cut"}, {"current state", "At the cut"},
	{"in progress", "At the cut"}, {"where things stand", "At the cut"}, {"current status", "At the cut"},
	{"next", "Next step"},
	{"pending", "Pending tasks"}, {"todo", "Pending tasks"}, {"to do", "Pending tasks"}, {"remaining", "Pending tasks"}, {"open tasks", "Pending tasks"},
	{"files read", "Files read"}, {"read", "Files read"},
	{"files changed", "Files changed"}, {"changed", "Files changed"}, {"modified", "Files changed"}, {"edited", "Files changed"}, {"created", "Files changed"},
	{"command", "Commands and tests"}, {"test", "Commands and tests"},
	{"error", "Errors"}, {"problem", "Errors"}, {"issue", "Errors"},
	{"decision", "Decisions"}, {"decided", "Decisions"},
	{"goal", "Goal and user requests"}, {"request", "Goal and user requests"}, {"task", "Goal and user requests"}, {"objective", "Goal and user requests"},
	{"note", "Notes"},
}

// sectionNamed maps a heading's text to a section: the exact name, else the first alias
// it holds as a word; "" when none.
func sectionNamed(text string) string {
	lower := strings.ToLower(strings.TrimSpace(text))
	// "1. Goal", "A) Goal": a numbered heading.
	if i := strings.IndexAny(lower, ".)"); i > 0 && i <= 3 && strings.Trim(lower[:i], "0123456789abcdefghij") == "" {
		lower = strings.TrimSpace(lower[i+1:])
	}
	for _, h := range Headings {
		if lower == strings.ToLower(h) {
			return h
		}
	}
	for _, a := range sectionAliases {
		if i := strings.Index(lower, a.word); i >= 0 && (i == 0 || !isLetter(lower[i-1])) {
			return a.heading
		}
	}
	return ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }

// shorten keeps the head and tail of a long text.
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3-5
	// Cutting may split a character: drop the broken bytes.
	return strings.ToValidUTF8(s[:head], "") + " [...] " + strings.ToValidUTF8(s[len(s)-tail:], "")
}

// KeepUserWords holds the user's requests to a budget of about budget tokens: the newest
// are kept verbatim while they fit (as Codex keeps the newest user messages), the older
// ones are cut to their first and last words so that each is still there.
//
// With keepFirst the first request, the goal, is kept verbatim too, outside the budget.
func KeepUserWords(s Sections, budget int, keepFirst bool) Sections {
	items := s["Goal and user requests"]
	if len(items) == 0 {
		return s
	}
	out := maps.Clone(s)
	kept := slices.Clone(items)
	left := budget * 4 // bytes: about 4 a token, as the estimate counts text
	first := 0
	if keepFirst {
		first = 1
	}
	for i := len(kept) - 1; i >= first; i-- {
		if len(kept[i]) <= left {
			left -= len(kept[i])
			continue
		}
		left = 0
		kept[i] = shortenQuoted(kept[i], olderRequest)
	}
	out["Goal and user requests"] = kept
	return out
}

// olderRequest is what a request beyond the budget keeps, in bytes.
const olderRequest = 400

// shortenQuoted shortens the quoted words of an item (“...”), keeping what is before them.
func shortenQuoted(item string, n int) string {
	open := strings.Index(item, "“")
	if open < 0 || !strings.HasSuffix(item, "”") {
		return shorten(item, n)
	}
	body := item[open+len("“") : len(item)-len("”")]
	return item[:open] + "“" + shorten(body, n) + "”"
}

// SummaryShare is the most a summary and the files it restores take of the tokens they
// replace: 15%. A summary of so little history that even its smallest form (the frame, each
// request's first words, the files changed, the open errors) is more is not written: it
// would save little and break the prompt cache all the same (Fit's ok).
const SummaryShare = 0.15

// Fit shrinks a summary's sections and the files restored after it until the text of both
// (Render's, then RenderRestored's) counts at most budget tokens, in steps that each give
// up less than the next: the fixed errors and the commands that only ran first, then the
// older decisions and files read counted rather than listed; then the restored files, the
// last of them (the least recently touched) first, cut to fit before it goes: an agent can
// read a file again, not what the summary leaves out, so they go before the requests, the
// goal and the open errors are shortened; then those shortened, and every request cut to
// its first words; last, what another section says already, the counts of what was left
// out and the notes. What is never given up: each request's first words, each file
// changed, each open error, the state at the cut and the next step. At the last two steps
// (the frame's), the line that says what the summary replaces is said in fewer words
// (Meta.Terse). With keepGoal (--keep-first) the goal stays whole, and
// is held to no share: it is carried over, not summarized (the budget grows by what it
// takes beyond its share).
//
// It returns the sections, meta and files as they are when they fit already, and ok false
// when even the last step leaves the sections alone over the budget.
func Fit(s Sections, m Meta, rs []Restored, budget int, count func(string) int, keepGoal bool) (Sections, Meta, []Restored, bool) {
	const g = "Goal and user requests"
	goal := ""
	if keepGoal && len(s[g]) > 0 && strings.HasPrefix(s[g][0], "Goal: ") {
		goal = s[g][0]
		n := count(goal)
		budget += n - int(SummaryShare*float64(n))
	}
	over := func(s Sections, m Meta, rs []Restored) int { return count(Render(s, m)+RenderRestored(rs)) - budget }
	fits := func(s Sections, m Meta, rs []Restored) bool { return over(s, m, rs) <= 0 }
	if fits(s, m, rs) {
		return s, m, rs, true
	}
	out := maps.Clone(s)
	for i, step := range fitSteps {
		step(out)
		if goal != "" {
			out[g] = slices.Clone(out[g])
			out[g][0] = goal
		}
		m.Terse = i >= terseFrom
		if i == restoreAfter && len(rs) > 0 {
			rs = fitRestored(rs, func(rs []Restored) int { return over(out, m, rs) })
		}
		if fits(out, m, rs) {
			return out, m, rs, true
		}
	}
	return out, m, rs, false
}

// terseFrom is the step of fitSteps from which the line that says what the summary
// replaces is said in fewer words.
const terseFrom = 6

// restoreAfter is the step of fitSteps after which the restored files give way.
const restoreAfter = 1

// fitRestored keeps the first of the files that fit: over tells by how many tokens a
// choice of them is over the budget (0 or less when it fits). The last one kept is cut
// around its last edit to the room left, when that room holds at least minCut tokens of it,
// as ChooseRestored cuts a file to its share.
func fitRestored(rs []Restored, over func([]Restored) int) []Restored {
	for n := len(rs); n > 0; n-- {
		kept := rs[:n]
		excess := over(kept)
		if excess <= 0 {
			return kept
		}
		// What the n-th file's block takes, and what is left of it once the excess goes.
		block := excess - over(kept[:n-1])
		room := block - excess
		if room < minCut {
			continue
		}
		last := kept[n-1]
		size := len(last.Content) * room / block
		for size >= len(last.Content)*minCut/block {
			cut := append(slices.Clone(rs[:n-1]), cutAround(last, size))
			if over(cut) <= 0 {
				return cut
			}
			size = size * 9 / 10
		}
	}
	return nil
}

// fitSteps shrink sections in place, each more than the one before.
var fitSteps = []func(Sections){
	func(s Sections) {
		s["Errors"] = slices.DeleteFunc(slices.Clone(s["Errors"]), func(it string) bool { return strings.HasSuffix(it, " [fixed]") })
		s["Commands and tests"] = newestAnd(s["Commands and tests"], 8, failedCommand, "commands that ran")
		shortenAll(s, "Commands and tests", 200)
		shortenAll(s, "Notes", 400)
	},
	func(s Sections) {
		s["Decisions"] = newestAnd(s["Decisions"], 6, userDecision, "decisions")
		s["Files read"] = newestAnd(s["Files read"], 15, nil, "files read")
		s["Commands and tests"] = newestAnd(s["Commands and tests"], 4, failedCommand, "commands that ran")
		shortenAll(s, "Commands and tests", 120)
		shortenAll(s, "At the cut", 200)
		shortenAll(s, "Notes", 200)
	},
	// (The restored files give way here: restoreAfter.)
	func(s Sections) {
		shortenRequests(s, 200, 600)
		shortenErrors(s, 200)
	},
	func(s Sections) {
		shortenRequests(s, 100, 300)
		s["Decisions"] = newestAnd(s["Decisions"], 3, userDecision, "decisions")
		s["Files read"] = newestAnd(s["Files read"], 6, nil, "files read")
		s["Commands and tests"] = newestAnd(s["Commands and tests"], 1, failedCommand, "commands that ran")
		shortenErrors(s, 140)
		shortenAll(s, "At the cut", 140)
		shortenAll(s, "Pending tasks", 140)
		shortenAll(s, "Notes", 120)
	},
	func(s Sections) {
		shortenRequests(s, 100, 100)
		s["Decisions"] = newestAnd(s["Decisions"], 1, userDecision, "decisions")
		s["Files read"] = newestAnd(s["Files read"], 2, nil, "files read")
		s["Commands and tests"] = newestAnd(s["Commands and tests"], 0, failedCommand, "commands that ran")
		s["Notes"] = newestAnd(s["Notes"], 2, nil, "notes")
		shortenErrors(s, 100)
		shortenAll(s, "At the cut", 100)
	},
	func(s Sections) {
		// Each request to its first words: a long dialog of short turns.
		items := slices.Clone(s["Goal and user requests"])
		for i, it := range items {
			if !strings.HasPrefix(it, "Goal: ") {
				items[i] = firstWords(it, 64)
			}
		}
		s["Goal and user requests"] = items
		shortenAll(s, "At the cut", 80)
	},
	func(s Sections) {
		// The frame: a latest request already answered need not be said, nor one the next
		// step says to answer.
		answer := len(s["Next step"]) > 0 && strings.HasPrefix(s["Next step"][0], "Answer the user's latest request")
		s["At the cut"] = slices.DeleteFunc(slices.Clone(s["At the cut"]), func(it string) bool {
			return strings.HasPrefix(it, "The user's latest request") && (strings.HasSuffix(it, ": answered") || answer)
		})
		s["At the cut"] = slices.DeleteFunc(s["At the cut"], func(it string) bool { return strings.HasPrefix(it, "Last tool call: ") })
		shortenAll(s, "At the cut", 60)
		items := slices.Clone(s["Goal and user requests"])
		for i, it := range items {
			items[i] = firstWords(it, 100)
		}
		s["Goal and user requests"] = items
		s["Decisions"] = newestAnd(s["Decisions"], 0, userDecision, "decisions")
		s["Files read"] = newestAnd(s["Files read"], 0, nil, "files read")
	},
	func(s Sections) {
		// The smallest: what another section says already goes (a failed command the
		// errors list), and so do the counts of what was left out and the notes; the
		// errors, pending tasks and state at the cut are said in their first words.
		listed := map[string]bool{}
		for _, it := range s["Errors"] {
			if cmd, _, ok := strings.Cut(strings.TrimPrefix(it, "`"), "`: "); ok && strings.HasPrefix(it, "`") {
				listed[cmd] = true
			}
		}
		s["Commands and tests"] = slices.DeleteFunc(slices.Clone(s["Commands and tests"]), func(it string) bool {
			cmd, _, _ := strings.Cut(strings.TrimPrefix(it, "`"), "` → ")
			return !failedCommand(it) || listed[cmd]
		})
		for _, h := range []string{"Decisions", "Files read", "Files changed", "Notes"} {
			s[h] = slices.DeleteFunc(slices.Clone(s[h]), func(it string) bool {
				return h == "Notes" || strings.HasPrefix(it, "(") && strings.HasSuffix(it, " left out)")
			})
		}
		shortenErrors(s, 60)
		shortenAll(s, "Pending tasks", 60)
		shortenAll(s, "At the cut", 40)
	},
}

// firstWords keeps the first words of an item's quoted text, up to n bytes ending at a
// word, white space folded.
func firstWords(item string, n int) string {
	open := strings.Index(item, "“")
	if open < 0 || !strings.HasSuffix(item, "”") {
		return item
	}
	body := strings.Join(strings.Fields(item[open+len("“"):len(item)-len("”")]), " ")
	if len(body) <= n {
		return item[:open] + "“" + body + "”"
	}
	cut := strings.ToValidUTF8(body[:n], "")
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return item[:open] + "“" + cut + " […]”"
}

// userDecision is a decision the user made (a refused call), kept while the others go.
func userDecision(it string) bool { return strings.HasPrefix(it, "The user refused") }

// failedCommand is a command item whose outcome is a failure, kept while the others go.
func failedCommand(it string) bool {
	_, outcome, _ := strings.Cut(it, "` → ")
	return !strings.HasPrefix(outcome, "ran") && !strings.HasPrefix(outcome, "exit 0")
}

// newestAnd keeps a section's newest n items and those keep says to keep, in order, and
// says how many others it left out.
func newestAnd(items []string, n int, keep func(string) bool, what string) []string {
	var out []string
	left := 0
	for i, it := range items {
		switch {
		case strings.HasSuffix(it, " left out)"):
			left += leftOut(it)
		case i >= len(items)-n || keep != nil && keep(it):
			out = append(out, it)
		default:
			left++
		}
	}
	if left == 0 {
		return out
	}
	return append([]string{fmt.Sprintf("(%d older %s left out)", left, what)}, out...)
}

// leftOut reads the count of a "(N older ... left out)" item.
func leftOut(it string) int {
	n := 0
	for _, c := range strings.TrimPrefix(it, "(") {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func shortenAll(s Sections, h string, n int) {
	items := slices.Clone(s[h])
	for i, it := range items {
		if !strings.HasPrefix(it, "The user's latest request") { // a state, said in full
			items[i] = shortenQuoted(it, n)
		}
	}
	s[h] = items
}

// shortenErrors cuts the error line of each Errors item to n bytes, keeping the command
// or call it names and whether it was fixed.
func shortenErrors(s Sections, n int) {
	items := slices.Clone(s["Errors"])
	for i, it := range items {
		sep := ": "
		if strings.HasPrefix(it, "`") {
			sep = "`: "
		} else if strings.Contains(it, "): ") {
			sep = "): "
		}
		head, rest, ok := strings.Cut(it, sep)
		if !ok {
			continue
		}
		state := ""
		for _, suffix := range []string{" [fixed]", " [unresolved]"} {
			if r, ok := strings.CutSuffix(rest, suffix); ok {
				rest, state = r, suffix
			}
		}
		items[i] = head + sep + shorten(rest, n) + state
	}
	s["Errors"] = items
}

// shortenRequests cuts the user's requests to n bytes, the goal to goal bytes, keeping
// each one's first words (white space folded, so that they are words, not indents).
func shortenRequests(s Sections, n, goal int) {
	const h = "Goal and user requests"
	items := slices.Clone(s[h])
	for i, it := range items {
		limit := n
		if strings.HasPrefix(it, "Goal: ") {
			limit = goal
		}
		if len(it) > limit {
			items[i] = shortenQuoted(strings.Join(strings.Fields(it), " "), limit)
		}
	}
	s[h] = items
}
