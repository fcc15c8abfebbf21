package summarize

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
}

// cumulative sections grow across summaries; the others say where things stand and are
// replaced by the newer summary's.
var cumulative = map[string]bool{
	"Goal and user requests": true, "Decisions": true, "Files read": true,
	"Files changed": true, "Commands and tests": true, "Errors": true,
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
		fmt.Fprintf(&b, "\nThe full conversation before this summary is stored at %s; read it with a file tool or cat if a detail is missing here.\n", m.Offloaded)
	}
	b.WriteString("</ctxkit-summary>")
	return b.String()
}

// Parse reads the sections back from a summary's text (one Render wrote, or a model
// answering in the same shape). Text outside any section is returned as rest.
func Parse(text string) (Sections, string) {
	s := Sections{}
	var rest []string
	current := ""
	known := map[string]bool{}
	for _, h := range Headings {
		known[h] = true
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(trimmed, "## "); ok {
			if known[strings.TrimSpace(h)] {
				current = strings.TrimSpace(h)
				continue
			}
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
		case strings.HasPrefix(trimmed, "- "):
			s[current] = append(s[current], strings.TrimPrefix(trimmed, "- "))
		case trimmed != "":
			s[current] = append(s[current], trimmed)
		}
	}
	return s, strings.Join(rest, "\n")
}

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
