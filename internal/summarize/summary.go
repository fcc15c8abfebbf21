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
}

// Render writes a summary message's text: the tag that marks it, a line saying what it
// stands for, the sections, and where the full history is when it was offloaded.
func Render(s Sections, m Meta) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s messages=\"%d\" tokens=\"%d\" backend=\"%s\">\n", transcript.SummaryTag, m.Messages, m.Tokens, m.Backend)
	fmt.Fprintf(&b, "This replaces the first %d messages of the conversation (about %d tokens), summarized by ctx-summarize; the messages after it continue from where it ends.\n", m.Messages, m.Tokens)
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
