package ctxkit_test

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/summarize"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
	"github.com/tidwall/gjson"
)

// TestSummaryProbes is issue 17's measure of ctx-summarize's local summary, read as the
// agent that has to carry on from it would read it. Each corpus conversation is
// summarized at several cut points (ctx-summarize --force --keep, run in process); the
// questions are answered from the part cut away, by this file's own reading of the
// transcript (not the summarizer's), and checked against the summary text plus the files
// it restores:
//
//   - every genuine user request: its substance (its first words) is in the text;
//   - no agent-injected wrapper (IDE selections, slash-command echoes, caveats, Cline's
//     environment details and result labels, Codex's environment context) is quoted as a
//     request;
//   - every file an edit changed: its path is there, and where its content is restored,
//     the newest edit's new text is in it;
//   - the errors listed as unresolved are open at the cut: none was fixed later by a
//     succeeding call of the same kind on the same target, none is a search that found
//     nothing (grep/rg exit 1), and no tool rejection text is listed as an error;
//   - the current work is stated: the last user request and the todo item in progress;
//     the next step is a step, not "continue from the messages that follow";
//   - the summary and what it restores are at most 15% of the tokens they replace.
//
// It reports per corpus folder with t.Logf and holds the floors the issue names. The
// files it reads are the conversations of at least 12 messages; cut points at 40%, 70%
// and 90% of the messages, so the run stays within a minute on two cores. It also counts
// the edits the kept part makes to files the summarized part read or changed (and did not
// read again first): how many of those files are restored ("later edits with content").
// PROBE_DEBUG=1 logs each miss.
func TestSummaryProbes(t *testing.T) {
	files := invariant.CorpusFiles(t)
	counter, err := tokens.New("estimate")
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]*probeTally{}
	all := &probeTally{}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(in, transcript.Options{Name: path})
		if err != nil || len(tr.Messages) < 12 {
			continue
		}
		_, perMsg := measure.PerMessage(tr, counter)
		folder := invariant.Folder(path)
		if per[folder] == nil {
			per[folder] = &probeTally{}
		}
		for _, frac := range []float64{0.4, 0.7, 0.9} {
			cut := int(frac * float64(len(tr.Messages)))
			keep := 0
			for _, n := range perMsg[cut:] {
				keep += n
			}
			p := probeOne(t, path, in, tr, max(keep, 1), counter)
			if p == nil {
				continue
			}
			per[folder].add(p)
			all.add(p)
		}
	}
	names := make([]string, 0, len(per))
	for name := range per {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Logf("%-12s %s", name, per[name])
	}
	t.Logf("%-12s %s", "all", all)
	if all.cases == 0 {
		t.Skip("no corpus conversation was summarized")
	}
	floor := func(what string, got, want float64, atLeast bool) {
		if atLeast && got < want || !atLeast && got > want {
			t.Errorf("%s: %.3f, want %s %.3f", what, got, map[bool]string{true: "at least", false: "at most"}[atLeast], want)
		}
	}
	floor("share of user requests present", all.requests.share(), 1, true)
	floor("share of edited files present", all.edited.share(), 1, true)
	floor("noise lines quoted as requests", float64(all.noise), 0, false)
	floor("rejection texts listed as errors", float64(all.rejections), 0, false)
	floor("precision of the unresolved errors", all.unresolved.share(), 0.95, true)
	floor("share stating the current work", all.current.share(), 1, true)
	floor("share with a next step", all.next.share(), 1, true)
	floor("summary and restored files over what they replace", all.ratio(), 0.15, false)
}

// probeTally adds up the probes of many summaries.
type probeTally struct {
	cases                                            int
	requests, edited, restoredNew, unresolved, later probeShare
	current, next                                    probeShare
	noise, rejections                                int
	summaryTokens, replacedTokens                    int
	worst                                            float64
}

type probeShare struct{ ok, of int }

func (s *probeShare) count(ok bool) {
	s.of++
	if ok {
		s.ok++
	}
}

func (s probeShare) share() float64 {
	if s.of == 0 {
		return 1
	}
	return float64(s.ok) / float64(s.of)
}

func (s probeShare) String() string { return fmt.Sprintf("%d/%d", s.ok, s.of) }

func (a *probeTally) add(b *probeTally) {
	a.cases += b.cases
	for _, p := range [][2]*probeShare{{&a.requests, &b.requests}, {&a.edited, &b.edited}, {&a.restoredNew, &b.restoredNew},
		{&a.unresolved, &b.unresolved}, {&a.later, &b.later}, {&a.current, &b.current}, {&a.next, &b.next}} {
		p[0].ok += p[1].ok
		p[0].of += p[1].of
	}
	a.noise += b.noise
	a.rejections += b.rejections
	a.summaryTokens += b.summaryTokens
	a.replacedTokens += b.replacedTokens
	a.worst = max(a.worst, b.worst)
}

func (a *probeTally) ratio() float64 {
	return float64(a.summaryTokens) / float64(max(a.replacedTokens, 1))
}

func (a *probeTally) String() string {
	return fmt.Sprintf("%3d cuts: requests %s, noise %d, edited files %s (restored newest %s), unresolved precise %s, rejections %d, "+
		"current work %s, next step %s, later edits with content %s, tokens %d/%d = %.1f%% (worst %.1f%%)",
		a.cases, a.requests, a.noise, a.edited, a.restoredNew, a.unresolved, a.rejections, a.current, a.next, a.later,
		a.summaryTokens, a.replacedTokens, 100*a.ratio(), 100*a.worst)
}

// probeNoise is what agents write into user messages: never a request. The probe's own
// list, kept apart from the summarizer's.
var probeNoise = regexp.MustCompile(`^\s*(?:<(?:ide_selection|ide_opened_file|ide_diagnostics|command-name|command-message|command-args|local-command-stdout|local-command-stderr|local-command-caveat|system-reminder|bash-input|bash-stdout|bash-stderr|environment_details|environment_context|user_instructions|user-prompt-submit-hook|turn_aborted)>|Caveat: The messages below|\[Request interrupted|\[[a-z_]+(?: for [^\]]*)?\] Result:|# AGENTS\.md instructions)`)

var probeRejection = regexp.MustCompile(`STOP what you are doing|doesn't want to (?:proceed|take this action)`)

// probeWords normalizes text for a substring test: white space collapsed, the summary's
// quotes and continuation indents gone.
func probeWords(s string) string { return strings.Join(strings.Fields(s), " ") }

// probeSubstance is the part of a request that must be found: its first words, without a
// Cline <task> wrapper.
func probeSubstance(s string) string {
	s = strings.TrimSpace(s)
	for _, tag := range []string{"task", "feedback", "answer", "user_message"} {
		s = strings.TrimPrefix(s, "<"+tag+">")
	}
	s = probeWords(s)
	if len(s) > 60 {
		s = strings.ToValidUTF8(s[:60], "")
		if i := strings.LastIndexByte(s, ' '); i > 20 {
			s = s[:i]
		}
	}
	return s
}

// probeCall is one call of the cut part with how it ended.
type probeCall struct {
	tool, key, path string
	failed          bool
	newText         string // what an edit wrote (new_string, content), "" if unknown
	edit, read      bool
}

var probeEditTools = map[string]bool{"edit": true, "multiedit": true, "write": true, "notebookedit": true, "write_to_file": true,
	"replace_in_file": true, "apply_diff": true, "edit_file": true, "create_file": true, "insert_content": true, "search_replace": true}

// probeCalls reads the calls of messages [from, to) with their results.
func probeCalls(tr *transcript.Transcript, from, to int) []probeCall {
	var calls []probeCall
	byID := map[string][]int{}
	for mi := from; mi < to; mi++ {
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			switch b.Kind {
			case transcript.ToolCall:
				args := tr.BodyText(b)
				lower := strings.ToLower(b.ToolName)
				c := probeCall{tool: b.ToolName}
				for _, k := range []string{"file_path", "path", "notebook_path", "target_file"} {
					if p := gjson.Get(args, k).String(); p != "" {
						c.path = p
						break
					}
				}
				cmd := gjson.Get(args, "command").String()
				switch {
				case probeEditTools[lower], (lower == "str_replace_editor" || lower == "str_replace_based_edit_tool") && cmd != "view":
					c.edit = c.path != ""
					for _, k := range []string{"new_string", "content", "new_str", "file_text"} {
						if v := gjson.Get(args, k).String(); v != "" {
							c.newText = v
						}
					}
					if v := gjson.Get(args, "edits.@reverse.0.new_string").String(); v != "" {
						c.newText = v
					}
				case lower == "read" || lower == "read_file" || lower == "str_replace_editor" && cmd == "view":
					c.read = c.path != ""
				}
				c.key = b.ToolName + "(" + c.path + ")"
				if cmd != "" && c.path == "" {
					c.key = probeCommandKey(cmd)
				}
				byID[b.ToolID] = append(byID[b.ToolID], len(calls))
				calls = append(calls, c)
			case transcript.ToolResult:
				ids := b.ToolIDs
				if len(ids) == 0 {
					ids = []string{b.ToolID}
				}
				for _, id := range ids {
					if w := byID[id]; len(w) > 0 {
						calls[w[0]].failed = b.IsError
						byID[id] = w[1:]
					}
				}
			}
		}
	}
	return calls
}

// probeCommandKey is a command's kind and target: its first two words, after any cd.
func probeCommandKey(cmd string) string {
	if i := strings.LastIndex(cmd, "&& "); i >= 0 && strings.HasPrefix(strings.TrimSpace(cmd), "cd ") {
		cmd = cmd[i+3:]
	}
	f := strings.Fields(cmd)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

// probeSection is the items of one section of a summary.
func probeSection(text, heading string) []string {
	var items []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.EqualFold(strings.TrimSpace(line[3:]), heading)
			continue
		}
		if strings.HasPrefix(line, "<ctxkit-restored") {
			in = false
		}
		if in && strings.HasPrefix(line, "- ") {
			items = append(items, line[2:])
		}
	}
	return items
}

var probeRestored = regexp.MustCompile(`(?s)<ctxkit-restored path="([^"]*)"[^>]*>(.*?)</ctxkit-restored>`)

// probeOne summarizes one document keeping keep tokens and probes the summary. nil when
// ctx-summarize did not act.
func probeOne(t *testing.T, path string, in []byte, tr *transcript.Transcript, keep int, counter tokens.Counter) *probeTally {
	run := func(in []byte) ([]byte, error) {
		var out, errb bytes.Buffer
		code := summarize.Main([]string{"--force", "--keep", strconv.Itoa(keep), "--tokenizer", "estimate", "-"}, bytes.NewReader(in), &out, &errb, func(string) string { return "" })
		if code != 0 {
			return nil, fmt.Errorf("exit %d: %s", code, errb.String())
		}
		return out.Bytes(), nil
	}
	// The summary and its restored files keep every promise of a lossy tier (DESIGN §4:
	// the same format, parses again, no call without its result, idempotent, tokens not
	// up, the protected messages untouched).
	out := invariant.Check(t, fmt.Sprintf("%s keep %d", path, keep), in, run, invariant.Options{Lossy: true, Structural: true, Counter: counter})
	if out == nil || bytes.Equal(out, in) {
		return nil
	}
	after, err := transcript.Parse(out, transcript.Options{Format: tr.Format})
	if err != nil {
		t.Errorf("%s: the summarized document does not parse: %v", path, err)
		return nil
	}
	si := -1
	for mi := range after.Messages {
		if after.Messages[mi].Summary {
			si = mi
		}
	}
	if si < 0 {
		t.Errorf("%s: no summary in the output", path)
		return nil
	}
	var texts []string
	for bi := range after.Messages[si].Blocks {
		if b := &after.Messages[si].Blocks[bi]; b.Kind == transcript.Text {
			texts = append(texts, after.BodyText(b))
		}
	}
	summary := strings.Join(texts, "\n")
	words := probeWords(summary)
	_, afterPer := measure.PerMessage(after, counter)
	_, beforePer := measure.PerMessage(tr, counter)
	// The messages after the summary are the input's newest ones.
	kept := len(after.Messages) - si - 1
	cut := len(tr.Messages) - kept
	p := &probeTally{cases: 1}
	p.summaryTokens = afterPer[si]
	// Messages the output still holds stayed where they were (the system prompt, the
	// newest user message): they are not summarized.
	stayed := map[string]bool{}
	for mi := range after.Messages {
		if mi != si {
			stayed[after.Slice(after.Messages[mi].Span)] = true
		}
	}
	var summarized []int
	for mi := 0; mi < cut; mi++ {
		m := &tr.Messages[mi]
		if m.Header || m.Role == "system" || m.Role == "developer" || stayed[tr.Slice(m.Span)] {
			continue
		}
		summarized = append(summarized, mi)
		p.replacedTokens += beforePer[mi]
	}
	p.worst = float64(p.summaryTokens) / float64(max(p.replacedTokens, 1))

	// Requests.
	lastRequest := ""
	for _, mi := range summarized {
		m := &tr.Messages[mi]
		if m.Role != "user" || m.Summary {
			continue
		}
		for bi := range m.Blocks {
			b := &m.Blocks[bi]
			if b.Kind != transcript.Text || b.Agent {
				continue
			}
			text := tr.BodyText(b)
			if strings.TrimSpace(text) == "" || probeNoise.MatchString(text) {
				continue
			}
			s := probeSubstance(text)
			lastRequest = s
			p.requests.count(strings.Contains(words, s))
			if !strings.Contains(words, s) && os.Getenv("PROBE_DEBUG") != "" {
				t.Logf("%s: missing %q\n%s", path, s, summary)
			}
		}
	}
	for _, it := range probeSection(summary, "Goal and user requests") {
		it = strings.TrimPrefix(strings.TrimPrefix(it, "Goal: "), "“")
		if probeNoise.MatchString(it) {
			p.noise++
		}
	}
	// Edited files and their restored content.
	calls := probeCalls(tr, 0, cut)
	restored := map[string]string{}
	for _, m := range probeRestored.FindAllStringSubmatch(summary, -1) {
		restored[m[1]] = m[2]
	}
	lastEdit := map[string]string{}
	var edited []string
	for _, c := range calls {
		if c.edit && !c.failed {
			if _, ok := lastEdit[c.path]; !ok {
				edited = append(edited, c.path)
			}
			lastEdit[c.path] = c.newText
		}
	}
	for _, path := range edited {
		p.edited.count(strings.Contains(summary, path))
		if body, ok := restored[path]; ok && lastEdit[path] != "" {
			probe := lastEdit[path]
			if len(probe) > 200 {
				probe = strings.ToValidUTF8(probe[:200], "")
			}
			p.restoredNew.count(strings.Contains(body, probe))
			if !strings.Contains(body, probe) && os.Getenv("PROBE_DEBUG") != "" {
				t.Logf("%s: restored %s lacks %q\n%.600s", path, path, probe, body)
			}
		}
	}
	// Unresolved errors: open at the cut.
	lastFail, lastOK := map[string]int{}, map[string]int{}
	for i, c := range calls {
		if c.failed {
			lastFail[c.key] = i
		} else {
			lastOK[c.key] = i
		}
	}
	for _, it := range probeSection(summary, "Errors") {
		if probeRejection.MatchString(it) {
			p.rejections++
		}
		if !strings.HasSuffix(it, "[unresolved]") {
			continue
		}
		open := true
		if cmd, ok := strings.CutPrefix(it, "`"); ok {
			if i := strings.Index(cmd, "`"); i >= 0 {
				cmd = cmd[:i]
				k := probeCommandKey(cmd)
				if f, ok := lastFail[k]; ok {
					if o, ok := lastOK[k]; ok && o > f {
						open = false
					}
				}
				if w := strings.Fields(k); len(w) > 0 && (w[0] == "grep" || w[0] == "rg") && strings.Contains(it, "exit 1") {
					open = false
				}
			}
		} else if i := strings.Index(it, "): "); i >= 0 {
			for k, f := range lastFail {
				if strings.HasPrefix(it, k) {
					if o, ok := lastOK[k]; ok && o > f {
						open = false
					}
				}
			}
		}
		p.unresolved.count(open)
	}
	// The current work: the last request and the todo item in progress.
	current := lastRequest == "" || strings.Contains(words, lastRequest)
	for mi := cut - 1; mi >= 0; mi-- {
		done := false
		for bi := range tr.Messages[mi].Blocks {
			b := &tr.Messages[mi].Blocks[bi]
			if b.Kind == transcript.ToolCall && strings.EqualFold(b.ToolName, "TodoWrite") {
				done = true
				gjson.Get(tr.BodyText(b), "todos").ForEach(func(_, td gjson.Result) bool {
					if td.Get("status").String() == "in_progress" {
						current = current && strings.Contains(words, probeWords(td.Get("content").String()))
					}
					return true
				})
			}
		}
		if done {
			break
		}
	}
	p.current.count(current && len(probeSection(summary, "At the cut")) > 0)
	next := probeSection(summary, "Next step")
	p.next.count(len(next) > 0 && !strings.Contains(next[0], "Continue from the messages that follow"))
	// Edits after the cut to files the cut part read or changed, and not read again
	// before them: is the content they apply to there?
	before := map[string]bool{}
	for _, c := range calls {
		if (c.read || c.edit) && !c.failed {
			before[c.path] = true
		}
	}
	for _, c := range probeCalls(tr, cut, len(tr.Messages)) {
		if c.read {
			delete(before, c.path)
		}
		if c.edit && before[c.path] {
			_, ok := restored[c.path]
			p.later.count(ok)
			if !ok && os.Getenv("PROBE_DEBUG") != "" {
				var have []string
				for k := range restored {
					have = append(have, k)
				}
				t.Logf("%s: later edit of %s not restored; restored %v; replaced %d tokens", path, c.path, have, p.replacedTokens)
			}
			delete(before, c.path)
		}
	}
	return p
}
