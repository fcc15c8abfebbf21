package trim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/repair"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

func estimate() tokens.Counter {
	c, _ := tokens.New("estimate")
	return c
}

// trimDoc is what ctx-trim does with one document at a window (or --max-tokens).
func trimDoc(name string, in []byte, o Options, window int) ([]byte, Stats, error) {
	t, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return nil, Stats{}, err
	}
	if o.Counter == nil {
		o.Counter = estimate()
	}
	b, err := tokens.Window("", window, 0)
	if err != nil {
		return nil, Stats{}, err
	}
	o.Effective = b.Effective
	o.Tokens, o.PerMessage = measure.PerMessage(t, o.Counter)
	out, st, _, err := Apply(t, o)
	return out, st, err
}

// capped is the default options with --max-tokens n.
func capped(n int) Options {
	o := Defaults()
	o.MaxTokens = n
	return o
}

func transform(name string, o Options, window int) invariant.Transform {
	return func(in []byte) ([]byte, error) {
		out, _, err := trimDoc(name, in, o, window)
		return out, err
	}
}

func parse(t *testing.T, doc string) *transcript.Transcript {
	t.Helper()
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// plan runs Plan with every message priced at 100 tokens.
func plan(t *testing.T, doc string, maxTokens int, strategy string) ([]int, *transcript.Transcript) {
	tr := parse(t, doc)
	o := Defaults()
	o.MaxTokens, o.Strategy = maxTokens, strategy
	o.PerMessage = make([]int, len(tr.Messages))
	for i := range o.PerMessage {
		o.PerMessage[i] = 100
		o.Tokens += 100
	}
	_, st := Plan(tr, o)
	var dropped []int
	for _, d := range st.Dropped {
		dropped = append(dropped, d.Message)
	}
	return dropped, tr
}

func TestPlan(t *testing.T) {
	// 0 system, 1 user, 2 assistant call a, 3 result a, 4 assistant call b+c, 5 result b,
	// 6 result c, 7 assistant text, 8 user, 9 assistant.
	doc := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"task"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"r"},{"role":"tool","tool_call_id":"c","content":"r"},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"next"},{"role":"assistant","content":"ok"}]}`
	cases := []struct {
		max      int
		strategy string
		want     string
	}{
		{1000, KeepLast, "[]"},             // fits
		{950, KeepLast, "[1]"},             // one message
		{750, KeepLast, "[1 2 3]"},         // a call goes with its result
		{500, KeepLast, "[1 2 3 4 5 6]"},   // both results of a two-call message
		{100, KeepLast, "[1 2 3 4 5 6 7]"}, // the system prompt and the newest exchange stay
		{750, KeepFirst, "[2 3 4 5 6]"},    // the opening task stays, the middle goes
		{100, KeepFirst, "[2 3 4 5 6 7]"},
	}
	for _, c := range cases {
		got, _ := plan(t, doc, c.max, c.strategy)
		if fmt.Sprint(got) != c.want && !(c.want == "[]" && got == nil) {
			t.Errorf("max %d %s: dropped %v, want %s", c.max, c.strategy, got, c.want)
		}
	}
}

func TestPlanKeepsSummaries(t *testing.T) {
	doc := `{"system":"s","messages":[{"role":"user","content":"<ctxkit-summary messages=\"40\">\nGoal: ship it\n</ctxkit-summary>"},{"role":"assistant","content":"ok"},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"}]}`
	got, _ := plan(t, doc, 300, KeepLast)
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Errorf("dropped %v, want [2 3 4] (the summary and the newest exchange stay)", got)
	}
	// --strategy first: the opening exchange is the first user message after the summary.
	got, _ = plan(t, doc, 300, KeepFirst)
	if fmt.Sprint(got) != "[2 4]" {
		t.Errorf("first: dropped %v, want [2 4] (the summary, the task and the newest exchange stay)", got)
	}
}

// TestApplyStaysValid: dropping the opening user message of an Anthropic conversation
// leaves it opening with an assistant message, which the API refuses: the tier puts a
// user message first.
func TestApplyStaysValid(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"task"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ls","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + strings.Repeat("x", 4000) + `"}]},{"role":"assistant","content":[{"type":"text","text":"done"}]},{"role":"user","content":"thanks"},{"role":"assistant","content":"ok"}]}`
	out, st, err := trimDoc("doc.json", []byte(doc), capped(200), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Dropped) != 3 {
		t.Errorf("dropped %v, want the task and the call with its result", st.Dropped)
	}
	after := parse(t, string(out))
	if ps := repair.Check(after); len(ps) > 0 {
		t.Errorf("output breaks the API's rules: %v\n%s", ps, out)
	}
	if !strings.Contains(string(out), `{"role":"assistant","content":[{"type":"text","text":"done"}]},{"role":"user","content":"thanks"},{"role":"assistant","content":"ok"}`) {
		t.Errorf("the kept messages changed:\n%s", out)
	}
}

// TestClaudeCodeChain: what is kept of a session is still one live branch.
func TestClaudeCodeChain(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "..", "testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	before := parse(t, string(in))
	// The goal leaves 5,000 tokens beside what the session's agent sends that the file
	// does not hold.
	goal := measure.Of(before, estimate(), false).Hidden + 5000
	out, st, err := trimDoc("session.jsonl", in, capped(goal), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Noted {
		t.Error("no note where the dropped messages were")
	}
	after := parse(t, string(out))
	if got, want := len(after.Messages), len(before.Messages)-len(st.Dropped)+1; got != want {
		t.Errorf("the trimmed session reads as %d messages, want %d with the note (the chain broke?)", got, want)
	}
	if got := measure.Total(after, estimate()); got > goal {
		t.Errorf("%d tokens after trimming to %d", got, goal)
	}
}

// TestCorpus: the invariant checker (structural and lossy) on every corpus file and sample
// at two small windows, with both strategies; outputs of valid inputs pass ctx-repair's
// check; the newest user and assistant messages survive whole; the tier never leaves a
// document above its goal when there was something it could drop.
func TestCorpus(t *testing.T) {
	files := invariant.Samples(t)
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "corpus")); err == nil {
		files = append(files, invariant.CorpusFiles(t)...)
	}
	type key struct{ folder, setting string }
	before, after, acted, unfit := map[key]int{}, map[key]int{}, map[key]int{}, map[key]int{}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		src, err := transcript.Parse(in, transcript.Options{Name: path})
		if err != nil {
			t.Fatal(err)
		}
		if len(src.Messages) == 0 {
			continue // an empty session log: nothing to trim
		}
		valid := len(repair.Check(src)) == 0
		for _, window := range []int{20_000, 8_000} {
			for _, strategy := range []string{KeepLast, KeepFirst} {
				o := Defaults()
				o.Strategy = strategy
				label := fmt.Sprintf("%s %dk %s", name, window/1000, strategy)
				out := invariant.Check(t, label, in, transform(path, o, window), invariant.Options{Structural: true, Lossy: true, Drops: true, Added: []string{repair.FirstUserText, transcript.TrimNote}})
				if out == nil {
					continue
				}
				res, err := transcript.Parse(out, transcript.Options{Name: path})
				if err != nil {
					continue // reported by Check
				}
				if valid {
					if ps := repair.Check(res); len(ps) > 0 {
						t.Errorf("%s: output breaks %d rules, first %s", label, len(ps), ps[0])
					}
				} else {
					// The tier leaves an input's own problems to ctx-repair, but adds none
					// of the pairing kind; after ctx-repair, the output passes.
					pb, pa := repair.Counts(repair.Check(src)), repair.Counts(repair.Check(res))
					for _, r := range []repair.Rule{repair.MissingResult, repair.OrphanResult, repair.MisplacedResult} {
						if pa[r] > pb[r] {
							t.Errorf("%s: %d %s problems, the input had %d", label, pa[r], r, pb[r])
						}
					}
					fix, _, err := repair.Plan(src)
					if err != nil {
						t.Fatal(err)
					}
					fixed, err := src.Apply(fix)
					if err != nil {
						t.Fatal(err)
					}
					piped, _, err := trimDoc(path, fixed, o, window)
					if err != nil {
						t.Fatal(err)
					}
					if ps := repair.Check(parse(t, string(piped))); len(ps) > 0 {
						t.Errorf("%s: ctx-repair | ctx-trim breaks %d rules, first %s", label, len(ps), ps[0])
					}
				}
				if src.Format == transcript.Anthropic && firstRole(src) == "user" && firstRole(res) != "user" {
					t.Errorf("%s: the output opens with a %s message", label, firstRole(res))
				}
				_, st, err := trimDoc(path, in, o, window)
				if err != nil {
					t.Fatal(err)
				}
				if got := measure.Total(res, estimate()); st.Acts && st.Fits && got > st.Goal {
					t.Errorf("%s: %d tokens after trimming, above the goal of %d the stats say it fits", label, got, st.Goal)
				}
				for i := range src.Protected() {
					if m := &src.Messages[i]; !m.Header {
						for bi := range m.Blocks {
							if raw := src.Slice(m.Blocks[bi].Span); !strings.Contains(string(out), raw) {
								t.Errorf("%s: protected message %d lost block %d", label, i, bi)
							}
						}
					}
				}
				k := key{invariant.Folder(path), fmt.Sprintf("%dk %s", window/1000, strategy)}
				b, a := measure.Total(src, estimate()), measure.Total(res, estimate())
				before[k] += b
				after[k] += a
				if a < b {
					acted[k]++
				}
				if st.Acts && !st.Fits {
					unfit[k]++
				}
			}
		}
	}
	keys := make([]key, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].folder < keys[j].folder || keys[i].folder == keys[j].folder && keys[i].setting > keys[j].setting
	})
	for _, k := range keys {
		t.Logf("%s, window %s: %d files trimmed (%d could not get down to the goal), tokens %d -> %d", k.folder, k.setting, acted[k], unfit[k], before[k], after[k])
	}
}

// firstRole is the role of a conversation's first message after its header.
func firstRole(t *transcript.Transcript) string {
	for i := range t.Messages {
		if !t.Messages[i].Header {
			return t.Messages[i].Role
		}
	}
	return ""
}

// TestNoDropThatFitsNothingAndDoesNotRepay: where what must stay (here the newest
// assistant message) is over the window, dropping makes nothing fit; it breaks the cache
// from the first dropped message on, so it is done only where the saving repays that
// within --repay requests (corpus session 5ed31c36 at 0.6 of its final prompt: the floor
// 162% of the window, ctx-trim dropped 80 and 338 tokens and billed 1.004).
func TestNoDropThatFitsNothingAndDoesNotRepay(t *testing.T) {
	doc := `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"task"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"next"},{"role":"assistant","content":"a long answer"}]}`
	tr := parse(t, doc)
	run := func(newest, repay int) Stats {
		o := Defaults()
		o.Repay, o.Effective = repay, 1000
		o.PerMessage = []int{100, 100, 100, 100, 100, 100, newest}
		for _, n := range o.PerMessage {
			o.Tokens += n
		}
		_, st := Plan(tr, o)
		return st
	}
	st := run(5000, 10) // saving 400 of the 5,500 tokens from message 1 on
	if len(st.Dropped) != 0 || !st.HeldBack || st.Repay == nil || st.Repay.Repays || !strings.Contains(st.Trigger, "stays over the window after dropping") {
		t.Errorf("not repaid: dropped %v, held back %v, repay %+v, trigger %q", st.Dropped, st.HeldBack, st.Repay, st.Trigger)
	}
	if st := run(5000, 0); len(st.Dropped) != 4 {
		t.Errorf("--repay 0: dropped %v", st.Dropped)
	}
	if st := run(600, 10); len(st.Dropped) == 0 || st.Repay != nil {
		t.Errorf("a drop that makes the request fit: dropped %v, repay %+v", st.Dropped, st.Repay)
	}
}
