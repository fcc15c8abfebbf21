package recall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/human"
)

// An outline is the shape of one stored text, one entry a line it starts at: the
// definitions of code, the headings of Markdown, the keys of JSON (of JSON Lines: its
// kinds of record), the failures, errors and diagnostics of command output (ctx-budget's
// classifier, budget.Classify), and of other text its paragraphs.

// Kinds of text an outline tells apart.
const (
	kindJSON     = "json"
	kindJSONL    = "jsonl"
	kindMarkdown = "markdown"
	kindCode     = "code"
	kindLog      = "output"
	kindText     = "text"
)

// entry is one line of an outline.
type entry struct {
	Line  int    `json:"line"`            // 1-based line of the text it starts at
	End   int    `json:"end,omitempty"`   // its last line, when it is a part (--section)
	Level int    `json:"level"`           // 0 outermost
	Class string `json:"class,omitempty"` // of output: test, error, diagnostic, warning
	Name  string `json:"name,omitempty"`  // what --section takes: a heading, a definition's name, a key path
	Text  string `json:"text"`            // what is shown
}

// shape is a text's outline.
type shape struct {
	Kind    string         `json:"kind"`
	Lines   int            `json:"lines"`
	Counts  map[string]int `json:"counts,omitempty"`
	Entries []entry        `json:"entries"`
}

// splitLines cuts text into lines without their line breaks (a final one ends the last
// line, it does not start another).
func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// lineNumbered is the prefix a file tool writes before each line it shows: Claude Code's
// "    12→", cat -n's "    12\t".
var lineNumbered = regexp.MustCompile(`^\s*[0-9]+(?:→|\t)`)

// bare is a line without a file tool's line number.
func bare(line string) string {
	if loc := lineNumbered.FindStringIndex(line); loc != nil {
		return line[loc[1]:]
	}
	return line
}

// definitions of the common languages: each names the defined thing in its group "name"
// (and its indentation in "in", when a definition may sit inside another).
var definitions = []*regexp.Regexp{
	regexp.MustCompile(`^func (?:\([^)]*\) )?(?P<name>\w+)`),                                                                                                               // Go
	regexp.MustCompile(`^type (?P<name>\w+)[ \[]`),                                                                                                                         // Go
	regexp.MustCompile(`^(?P<in>\s*)(?:async )?def (?P<name>\w+)\s*\(`),                                                                                                    // Python
	regexp.MustCompile(`^(?P<in>\s*)class (?P<name>\w+)\s*[(:{<]`),                                                                                                         // Python, JS, TS, Java...
	regexp.MustCompile(`^(?P<in>\s*)(?:export )?(?:default )?(?:async )?function\*? ?(?P<name>[\w$]+)\s*[(<]`),                                                             // JS, TS
	regexp.MustCompile(`^(?P<in>\s*)(?:export )?(?:default )?(?:abstract )?class (?P<name>[\w$]+)`),                                                                        // JS, TS
	regexp.MustCompile(`^(?:export )?(?:const|let|var) (?P<name>[\w$]+)\s*(?::[^=]+)?=\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)\s*=>`),                                          // JS arrow functions
	regexp.MustCompile(`^(?:export )?(?:declare )?(?:interface|enum|type) (?P<name>[\w$]+)`),                                                                               // TS
	regexp.MustCompile(`^(?P<in>\s*)(?:pub(?:\([\w:]+\))? )?(?:async )?(?:unsafe )?(?:fn|struct|enum|trait|mod|union) (?P<name>\w+)`),                                      // Rust
	regexp.MustCompile(`^(?P<in>\s*)impl(?:<[^>]*>)? (?P<name>[\w:<>, ]+?)(?: for [\w:<>, ]+)?\s*\{`),                                                                      // Rust
	regexp.MustCompile(`^(?P<in>\s*)(?:(?:public|private|protected|internal|static|final|abstract|sealed|data|open) )*(?:interface|enum|record|object|fun) (?P<name>\w+)`), // Java, Kotlin, C#
	regexp.MustCompile(`^(?P<in>\s+)(?:(?:public|private|protected|static|final|synchronized|override|async|virtual) )+[\w<>\[\],. ?]+ (?P<name>\w+)\s*\(`),                // methods
	regexp.MustCompile(`^(?P<in>\s*)(?:def|module) (?P<name>[\w:.?!]+)`),                                                                                                   // Ruby
	regexp.MustCompile(`^(?:function )?(?P<name>[\w-]+)\s*\(\)\s*\{?$`),                                                                                                    // shell
	regexp.MustCompile(`^[A-Za-z_][\w \*]*[ \*](?P<name>[A-Za-z_]\w*)\((?:[^;]*)$`),                                                                                        // C, C++
}

// notDefinition are words that start lines the C pattern would take for a definition.
var notDefinition = []string{"if ", "else", "for ", "while ", "switch ", "return ", "case ", "do ", "printf", "echo "}

// definition returns the name a line defines and its depth, if it defines one.
func definition(line string) (name string, level int, ok bool) {
	if len(line) > 300 || strings.TrimSpace(line) == "" {
		return "", 0, false
	}
	for i, re := range definitions {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if i == len(definitions)-1 {
			for _, w := range notDefinition {
				if strings.HasPrefix(line, w) {
					return "", 0, false
				}
			}
		}
		for j, g := range re.SubexpNames() {
			switch g {
			case "name":
				name = strings.TrimSpace(m[j])
			case "in":
				if m[j] != "" {
					level = 1
				}
			}
		}
		return name, level, name != ""
	}
	return "", 0, false
}

// headingLine reads a Markdown heading: its level (1-6) and text.
func headingLine(line string) (level int, text string, ok bool) {
	n := 0
	for n < len(line) && n < 7 && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0, "", false
	}
	return n, strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#")), true
}

// outlineOf reads the shape of text.
func outlineOf(text string) shape {
	trimmed := strings.TrimSpace(text)
	lines := splitLines(text)
	if trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid([]byte(trimmed)) {
		return jsonOutline(text, len(lines))
	}
	if s, ok := jsonlOutline(lines); ok {
		return s
	}
	var defs, heads []entry
	fence := false
	for i, raw := range lines {
		line := bare(raw)
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if !fence {
			if lv, h, ok := headingLine(line); ok {
				heads = append(heads, entry{Line: i + 1, Level: lv - 1, Name: h, Text: line})
			}
		}
		if name, lv, ok := definition(line); ok {
			defs = append(defs, entry{Line: i + 1, Level: lv, Name: name, Text: strings.TrimSpace(line)})
		}
	}
	bareLines := make([]string, len(lines))
	for i, l := range lines {
		bareLines[i] = bare(l)
	}
	classes := budget.Classify(bareLines)
	counts := map[string]int{}
	var said []entry
	signal := 0
	for i, c := range classes {
		if c == budget.Other {
			continue
		}
		counts[c.String()]++
		if c != budget.Frame && c != budget.Warning {
			signal++
		}
		said = append(said, entry{Line: i + 1, Class: c.String(), Text: strings.TrimSpace(bareLines[i])})
	}
	switch {
	case len(defs) >= 2 && len(defs)*3 >= signal:
		return withEnds(shape{Kind: kindCode, Lines: len(lines), Counts: map[string]int{"definition": len(defs)}, Entries: defs}, len(lines))
	case signal > 0:
		// the failures first: what a reader looks for, then the rest in order
		sort.SliceStable(said, func(i, j int) bool { return classRank(said[i].Class) < classRank(said[j].Class) })
		return shape{Kind: kindLog, Lines: len(lines), Counts: counts, Entries: said}
	case len(heads) > 0:
		return withEnds(shape{Kind: kindMarkdown, Lines: len(lines), Counts: map[string]int{"heading": len(heads)}, Entries: heads}, len(lines))
	case len(defs) > 0:
		return withEnds(shape{Kind: kindCode, Lines: len(lines), Counts: map[string]int{"definition": len(defs)}, Entries: defs}, len(lines))
	}
	// other text: where each paragraph starts
	var paras []entry
	for i, l := range bareLines {
		if strings.TrimSpace(l) != "" && (i == 0 || strings.TrimSpace(bareLines[i-1]) == "") {
			paras = append(paras, entry{Line: i + 1, Text: strings.TrimSpace(l)})
		}
	}
	return withEnds(shape{Kind: kindText, Lines: len(lines), Counts: map[string]int{"paragraph": len(paras)}, Entries: paras}, len(lines))
}

// classRank orders the classes of output lines in an outline.
func classRank(c string) int {
	switch c {
	case "test":
		return 0
	case "error":
		return 1
	case "diagnostic":
		return 2
	case "warning":
		return 3
	}
	return 4
}

// withEnds sets where each entry's part ends: before the next entry as deep or shallower.
func withEnds(s shape, lines int) shape {
	for i := range s.Entries {
		s.Entries[i].End = lines
		for j := i + 1; j < len(s.Entries); j++ {
			if s.Entries[j].Level <= s.Entries[i].Level {
				s.Entries[i].End = s.Entries[j].Line - 1
				break
			}
		}
	}
	return s
}

// jsonDepth is how deep a JSON outline goes.
const jsonDepth = 3

// jsonOutline lists a JSON document's keys to jsonDepth, each with what its value is and
// the lines it spans; of an array, its length and the keys of its first element.
func jsonOutline(text string, lines int) shape {
	starts := []int{0} // offset where each line starts
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineAt := func(off int) int { return sort.SearchInts(starts, off+1) }
	var out []entry
	var walk func(v gjson.Result, path string, depth int)
	walk = func(v gjson.Result, path string, depth int) {
		if depth >= jsonDepth {
			return
		}
		switch {
		case v.IsObject():
			v.ForEach(func(k, val gjson.Result) bool {
				p := k.String()
				if path != "" {
					p = path + "." + p
				}
				out = append(out, entry{Line: lineAt(val.Index), End: lineAt(val.Index + len(val.Raw) - 1), Level: depth, Name: p,
					Text: p + ": " + describe(val)})
				walk(val, p, depth+1)
				return true
			})
		case v.IsArray():
			first := true
			v.ForEach(func(_, val gjson.Result) bool {
				if first {
					walk(val, path+"[0]", depth)
					first = false
				}
				return false
			})
		}
	}
	root := gjson.Parse(text)
	if root.IsArray() {
		out = append(out, entry{Line: 1, End: lines, Text: describe(root)})
	}
	walk(root, "", 0)
	return shape{Kind: kindJSON, Lines: lines, Counts: map[string]int{"key": len(out)}, Entries: out}
}

// describe says what a JSON value is, briefly.
func describe(v gjson.Result) string {
	switch {
	case v.IsObject():
		n := 0
		v.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		return fmt.Sprintf("{%d %s}", n, plural(n, "key"))
	case v.IsArray():
		n := len(v.Array())
		return fmt.Sprintf("[%d %s]", n, plural(n, "item"))
	case v.Type == gjson.String:
		return fmt.Sprintf("%q", human.Label(v.String(), 60))
	}
	return human.Label(v.Raw, 60)
}

// jsonlOutline reads JSON Lines (a session log ctx-summarize --offload kept): its kinds of
// record (their "type", else "role"), how many of each and the first line of each.
func jsonlOutline(lines []string) (shape, bool) {
	if len(lines) < 2 {
		return shape{}, false
	}
	first := map[string]int{}
	counts := map[string]int{}
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if l[0] != '{' || (i < 200 && !gjson.Valid(l)) {
			return shape{}, false
		}
		kind := gjson.Get(l, "type").String()
		if kind == "" {
			kind = gjson.Get(l, "role").String()
		}
		if kind == "" {
			kind = "(record)"
		}
		if counts[kind] == 0 {
			first[kind] = i + 1
		}
		counts[kind]++
	}
	var out []entry
	for k, n := range counts {
		out = append(out, entry{Line: first[k], Name: k, Text: fmt.Sprintf("%s: %d %s", k, n, plural(n, "record"))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return shape{Kind: kindJSONL, Lines: len(lines), Counts: counts, Entries: out}, true
}

// section finds the part of text an outline names: the entry whose name is name (else
// the first whose name holds it, case folded), and the lines it spans.
func section(s shape, name string) (entry, bool) {
	for _, e := range s.Entries {
		if e.Name == name && e.End >= e.Line {
			return e, true
		}
	}
	low := strings.ToLower(name)
	for _, e := range s.Entries {
		if e.End >= e.Line && strings.Contains(strings.ToLower(e.Name), low) {
			return e, true
		}
	}
	return entry{}, false
}

// names lists the names an outline offers --section, for a hint.
func names(s shape, n int) string {
	var out []string
	for _, e := range s.Entries {
		if e.Name != "" && e.End >= e.Line {
			out = append(out, e.Name)
			if len(out) == n {
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

// renderOutline writes the outline of item ref within maxTokens: its kind and counts, then
// its entries, indented by level, each with its line number, as many as fit.
func (r *recaller) renderOutline(ref string, data []byte, s shape, maxTokens int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %s, %s %s, %s bytes", ref, kindName(s.Kind), human.Thousands(s.Lines), plural(s.Lines, "line"), human.Thousands(len(data)))
	if len(s.Counts) > 0 {
		var keys []string
		for k := range s.Counts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return classRank(keys[i]) < classRank(keys[j]) || classRank(keys[i]) == classRank(keys[j]) && keys[i] < keys[j]
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s", human.Thousands(s.Counts[k]), plural(s.Counts[k], countName(k))))
		}
		fmt.Fprintf(&b, "; %s", strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	footer := fmt.Sprintf("read a part: ctx-recall --read %s --lines A-B", ref)
	if s.Kind != kindLog && s.Kind != kindText && s.Kind != kindJSONL {
		footer += " (or --section NAME)"
	}
	footer += "\n"
	used := r.count.Count(b.String()) + r.count.Count(footer)
	shown := 0
	for _, e := range s.Entries {
		line := fmt.Sprintf("%sL%d", strings.Repeat("  ", e.Level+1), e.Line)
		if e.Class != "" {
			line += " " + e.Class
		}
		line += ": " + clipLine(e.Text, 160) + "\n"
		n := r.count.Count(line)
		if used+n > maxTokens {
			break
		}
		used += n
		b.WriteString(line)
		shown++
	}
	if left := len(s.Entries) - shown; left > 0 {
		fmt.Fprintf(&b, "  … %s more not shown (--max-tokens %d)\n", human.Thousands(left), maxTokens)
	}
	b.WriteString(footer)
	return b.Bytes()
}

// countName is what an outline's count counts.
func countName(k string) string {
	switch k {
	case "test":
		return "failing-test line"
	case "frame":
		return "stack frame"
	}
	return human.Safe(k) // (a JSON Lines record's type comes from the text)
}

func kindName(k string) string {
	switch k {
	case kindJSON:
		return "JSON"
	case kindJSONL:
		return "JSON Lines"
	case kindMarkdown:
		return "Markdown"
	case kindCode:
		return "code"
	case kindLog:
		return "command output"
	}
	return "text"
}

// clipLine is a line of stored text as shown: tabs as spaces, clipped, control characters
// escaped (human.Safe).
func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\t", "    ")
	s = strings.TrimRight(s, "\r")
	return human.Safe(human.Clip(s, n))
}
