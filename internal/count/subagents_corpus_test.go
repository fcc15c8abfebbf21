package count

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestCorpusSubagentContexts: on every real Claude Code session with subagents (both
// layouts), ctx-count gives each subagent its own context next to the parent's, tied to
// the call that started it. What the files record is read here with a reader of the
// test's own: a subagent whose log opens with another prompt than "Warmup" and whose id a
// result of the parent's records is tied to that call, by its id; its recorded peak is
// the largest prompt its log records; its tokens are what ctx-count says of its log
// alone, which reads it as a session (its requests, its trend); the call's result costs
// the parent something, and the picture names the call.
func TestCorpusSubagentContexts(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("corpus not found at %s", root)
	}
	cache := t.TempDir()
	env := func(k string) string { return map[string]string{"CTX_CACHE_DIR": cache}[k] }
	count := func(args ...string) Report {
		t.Helper()
		var out, errs bytes.Buffer
		if code := Main(append([]string{"--json"}, args...), nil, &out, &errs, env); code != 0 {
			t.Fatalf("ctx-count %v: exit %d: %s", args, code, errs.String())
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	sessionsSeen, linked := 0, 0
	for _, f := range files {
		subs := sessions.Subagents(f)
		if len(subs) == 0 {
			continue
		}
		sessionsSeen++
		agentOf := resultAgents(t, f)
		r := count(f)
		if r.Session == nil || len(r.Session.Subagents) != len(subs) || r.Session.Peak == nil {
			t.Fatalf("%s: session %+v; want its %d subagents and its peak", f, r.Session, len(subs))
		}
		var picture bytes.Buffer
		Render(&picture, &r, false, 200)
		for _, s := range r.Session.Subagents {
			c := s.SubagentContext
			if c == nil {
				t.Fatalf("%s: no context measured", s.File)
			}
			id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s.File), "agent-"), ".jsonl")
			if c.AgentID != id {
				t.Errorf("%s: agent id %q", s.File, c.AgentID)
			}
			if want := largestPrompt(t, s.File); c.Peak.Recorded != want || c.Peak.Tokens != want || c.Peak.Estimated <= 0 {
				t.Errorf("%s: peak %+v; its log records %d at most", s.File, c.Peak, want)
			}
			alone := count(s.File)
			if c.Tokens != alone.Tokens || c.Categories != alone.Categories {
				t.Errorf("%s: tokens %d %+v; ctx-count on its log says %d %+v", s.File, c.Tokens, c.Categories, alone.Tokens, alone.Categories)
			}
			// Its log read as a session: its own requests are its session's and its trend.
			if s.Requests > 0 && (alone.Session == nil || alone.Session.Requests != s.Requests || alone.Session.PromptTokens != s.PromptTokens ||
				alone.Trend == nil || len(alone.Trend.Session) != s.Requests) {
				t.Errorf("%s on its own: session %+v, trend %+v; its log records %d requests", s.File, alone.Session, alone.Trend, s.Requests)
			}
			call, started := agentOf[id]
			if !started {
				if c.Task != nil {
					t.Errorf("%s: tied to %+v, which no result of the parent's names", s.File, c.Task)
				}
				if !warmup(t, s.File) {
					t.Errorf("%s: no call of the parent's names it, yet it is no warm-up", s.File)
				}
				continue
			}
			linked++
			if c.Task == nil || c.Task.ID != call || c.Task.LinkedBy != "agent id" || !c.Task.Answered ||
				c.Task.ResultTokens <= 0 || c.Task.CallTokens <= 0 || c.Task.Message < 0 {
				t.Errorf("%s: task %+v; want call %s, answered, with what it costs the parent", s.File, c.Task, call)
				continue
			}
			if line := "#" + strconv.Itoa(c.Task.Message); !strings.Contains(picture.String(), c.Task.Tool+" "+line) {
				t.Errorf("%s: the picture does not name %s %s:\n%s", f, c.Task.Tool, line, picture.String())
			}
			t.Logf("%s: parent peak %d; subagent %s peak %d (estimated %d), now %d, result %d tokens to the parent",
				filepath.Base(f), r.Session.Peak.Tokens, id, c.Peak.Tokens, c.Peak.Estimated, c.Tokens, c.Task.ResultTokens)
		}
	}
	if sessionsSeen < 4 || linked < 9 {
		t.Errorf("%d sessions with subagents, %d subagents tied to a call; the corpus has 17 and 9", sessionsSeen, linked)
	}
}

// resultAgents reads, from a session's log, the agent id each result of a call records
// (toolUseResult.agentId), by agent id: the call's id.
func resultAgents(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	eachLine(t, path, func(line []byte) {
		id := gjson.GetBytes(line, "toolUseResult.agentId").String()
		call := gjson.GetBytes(line, "message.content.0.tool_use_id").String()
		if id != "" && call != "" {
			out[id] = call
		}
	})
	return out
}

// largestPrompt is the largest prompt (input, cache reads, cache writes) a log records.
func largestPrompt(t *testing.T, path string) int {
	t.Helper()
	most := 0
	eachLine(t, path, func(line []byte) {
		u := gjson.GetBytes(line, "message.usage")
		if gjson.GetBytes(line, "type").String() != "assistant" || !u.Exists() {
			return
		}
		most = max(most, int(u.Get("input_tokens").Int()+u.Get("cache_read_input_tokens").Int()+u.Get("cache_creation_input_tokens").Int()))
	})
	return most
}

// warmup reports whether a subagent's log opens with Claude Code 2.0's warm-up prompt,
// or with its reply to one (a log without its first request).
func warmup(t *testing.T, path string) bool {
	t.Helper()
	first := ""
	eachLine(t, path, func(line []byte) {
		if first == "" {
			first = gjson.GetBytes(line, "message.content").String()
		}
	})
	return first == "Warmup" || gjson.Get(first, "0.type").String() == "text"
}

func eachLine(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// The picture gives one line per subagent, the largest peak first, at most pictureRows,
// then how many more; a subagent no call started says so, and a description from the
// transcript is shown escaped.
func TestRenderSubagents(t *testing.T) {
	r := Report{File: "s.jsonl", Window: 200_000, EffectiveWindow: 180_000, Session: &SessionFigures{Peak: &Peak{Tokens: 66_603}}}
	for i := range pictureRows + 2 {
		c := &SubagentContext{AgentID: "agent" + strconv.Itoa(i) + "xxxxxxxx", Peak: Peak{Tokens: 1000 * (i + 1)}, Tokens: 1000*(i+1) + 5,
			ByTool: []ToolCount{{Name: "Read", ResultTokens: 700}}}
		if i != 3 {
			c.Task = &TaskCall{ID: "t", Tool: "Agent", Message: 10 + i, Description: "job \x1b[31m" + strconv.Itoa(i), ResultTokens: 100 + i}
		}
		r.Session.Subagents = append(r.Session.Subagents, SubagentFigures{File: "f", SubagentContext: c})
	}
	var b bytes.Buffer
	renderSubagents(&b, &r, func(_, s string) string { return s }, 120)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var narrow bytes.Buffer
	renderSubagents(&narrow, &r, func(_, s string) string { return s }, 60)
	for _, l := range strings.Split(strings.TrimSpace(narrow.String()), "\n") {
		if n := utf8.RuneCountInString(l); n > 60 {
			t.Errorf("at 60 columns, a line of %d: %q", n, l)
		}
	}
	want := []string{
		"Subagents, each a context of its own (the main log's peak 66,603)",
		"  agent        peak      now  result  most of it         the call",
		`  agent6xx    7,000    7,005     106  Read 700           Agent #16 "job \x1b[31m6"`,
		`  agent5xx    6,000    6,005     105  Read 700           Agent #15 "job \x1b[31m5"`,
		`  agent4xx    5,000    5,005     104  Read 700           Agent #14 "job \x1b[31m4"`,
		`  agent3xx    4,000    4,005       -  Read 700           none`,
		`  agent2xx    3,000    3,005     102  Read 700           Agent #12 "job \x1b[31m2"`,
		"  … and 2 more",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("picture:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// The same on generated sessions in Claude Code's two layouts of subagents' logs (2.1's
// folder, 2.0's beside the session): each subagent is tied to its call (Agent, Task) by
// its id, its peak is its log's largest prompt, and its call and result cost the parent;
// and in 1.x's, whose subagents' lines are in the session's log with no id anywhere, each
// read as --sidechains reads it and tied to its call by its prompt.
func TestGeneratedSubagentContexts(t *testing.T) {
	for _, layout := range []string{testgen.LayoutFolder, testgen.LayoutBeside, testgen.LayoutInline} {
		dir := t.TempDir()
		session, subs, err := testgen.Session(testgen.Options{Format: "claude-code", Size: 80_000, Seed: 11}, 3, layout)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, gjson.GetBytes(session, "sessionId").String()+".jsonl")
		write := func(p string, b []byte) {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(path, session)
		for _, s := range subs {
			write(filepath.Join(dir, s.Path), s.Log)
		}
		var out, errs bytes.Buffer
		if code := Main([]string{"--json", path}, nil, &out, &errs, func(string) string { return "" }); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Session == nil || len(r.Session.Subagents) != 3 {
			t.Fatalf("%s: session %+v", layout, r.Session)
		}
		tied := map[string]bool{}
		for _, s := range r.Session.Subagents {
			c := s.SubagentContext
			by, tool := "agent id", map[string]string{testgen.LayoutFolder: "Agent", testgen.LayoutBeside: "Task", testgen.LayoutInline: "Task"}[layout]
			if layout == testgen.LayoutInline {
				by = "prompt"
				if s.File != path || s.Thread == "" || c == nil || c.AgentID != "" {
					t.Fatalf("inline: %+v", s)
				}
			}
			if c == nil || c.Task == nil || c.Task.LinkedBy != by || c.Task.Tool != tool || tied[c.Task.ID] {
				t.Fatalf("%s: %s: %+v", layout, s.File, c)
			}
			tied[c.Task.ID] = true
			if layout == testgen.LayoutInline {
				continue // (its largest prompt is among the session's and the others')
			}
			if want := largestPrompt(t, s.File); c.Peak.Recorded != want || c.Tokens < want {
				t.Errorf("%s: %s: peak %+v, now %d; its log records %d at most", layout, s.File, c.Peak, c.Tokens, want)
			}
			if c.Task.ResultTokens <= 0 || c.Task.CallTokens <= 0 || c.Task.Message < 0 {
				t.Errorf("%s: %s: %+v", layout, s.File, c.Task)
			}
		}
	}
}

// ctx-count --sidechains on a session that holds its subagents' lines (1.x) reports the
// newest subagent's conversation: its requests and trend, not the session's.
func TestSidechainsCountTheSubagent(t *testing.T) {
	session, _, err := testgen.Session(testgen.Options{Format: "claude-code", Size: 80_000, Seed: 8}, 2, testgen.LayoutInline)
	if err != nil {
		t.Fatal(err)
	}
	side, err := transcript.Parse(session, transcript.Options{Sidechains: true})
	if err != nil || !side.Subagent || len(side.Usage) < 2 {
		t.Fatalf("the subagent read: %v, %d figures", err, len(side.Usage))
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, session, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := Main([]string{"--json", "--sidechains", path}, nil, &out, &errs, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, u := range side.Usage {
		want += u.Input
	}
	if r.Session == nil || r.Session.Requests != len(side.Usage) || r.Session.PromptTokens != want || r.Trend == nil || len(r.Trend.Session) != len(side.Usage) {
		t.Errorf("session %+v, trend %+v; the subagent records %d requests, %d prompt tokens", r.Session, r.Trend, len(side.Usage), want)
	}
}
