package ctxkit_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

// The figure every decision uses is what the model sees (DESIGN §5), and the transcript
// records what it saw at every request. These tests cut each session just before every
// reply it records a usage figure for, and hold ctx-count's headline on the rest to that
// figure: the request the agent was about to make when the file ended there.

// recordedRequest is one request a session records: the session cut just before its
// reply, and the prompt the agent recorded for it.
type recordedRequest struct {
	cut      int
	recorded int
	// compacted: the first request after a compaction; turn: the first of a new user turn.
	compacted, turn bool
}

// recordedRequests reads the requests a Claude Code or Codex session records from its
// lines, with a reader of its own (not transcript's): each Claude Code reply (the lines of
// one message.id) with a usage figure, each Codex token_count event with new totals (a
// repeated event with the same totals is the same request).
func recordedRequests(data []byte) (format string, out []recordedRequest) {
	type line struct {
		start int
		text  string
	}
	var lines []line
	for start := 0; start < len(data); {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data) - start
		}
		if l := strings.TrimSpace(string(data[start : start+end])); l != "" {
			lines = append(lines, line{start, l})
		}
		start += end + 1
	}
	for _, l := range lines {
		switch {
		case gjson.Get(l.text, "sessionId").Exists() || gjson.Get(l.text, "parentUuid").Exists():
			format = "claude-code"
		case gjson.Get(l.text, "payload").Exists():
			format = "codex"
		default:
			continue
		}
		break
	}
	compacted, turn := false, false
	switch format {
	case "claude-code":
		onlySide := true
		for _, l := range lines {
			if t := gjson.Get(l.text, "type").String(); (t == "user" || t == "assistant") && !gjson.Get(l.text, "isSidechain").Bool() {
				onlySide = false
			}
		}
		at := map[string]int{}
		for _, l := range lines {
			r := gjson.Parse(l.text)
			switch r.Get("type").String() {
			case "system":
				if r.Get("subtype").String() == "compact_boundary" {
					compacted = true
				}
			case "user":
				if c := r.Get("message.content"); c.Type == gjson.String && !r.Get("isMeta").Bool() && !r.Get("isCompactSummary").Bool() {
					turn = true
				}
			case "assistant":
				if r.Get("isSidechain").Bool() && !onlySide {
					continue
				}
				u := r.Get("message.usage")
				prompt := int(u.Get("input_tokens").Int() + u.Get("cache_read_input_tokens").Int() + u.Get("cache_creation_input_tokens").Int())
				if prompt == 0 || r.Get("message.model").String() == "<synthetic>" {
					continue
				}
				id := r.Get("message.id").String()
				if k, ok := at[id]; ok && id != "" {
					out[k].recorded = prompt // a turn's later lines carry the final figure
					continue
				}
				at[id] = len(out)
				out = append(out, recordedRequest{cut: l.start, recorded: prompt, compacted: compacted, turn: turn})
				compacted, turn = false, false
			}
		}
	case "codex":
		lastInput, firstOutput := -1, -1
		prevTotals := ""
		for i, l := range lines {
			r := gjson.Parse(l.text)
			p := r.Get("payload")
			switch r.Get("type").String() {
			case "compacted":
				compacted, lastInput, firstOutput = true, i, -1
			case "response_item":
				switch typ := p.Get("type").String(); {
				case typ == "message" && p.Get("role").String() == "user":
					if !strings.HasPrefix(p.Get("content.0.text").String(), "<environment_context>") {
						turn = true
					}
					lastInput, firstOutput = i, -1
				case typ == "message" && p.Get("role").String() != "assistant", strings.HasSuffix(typ, "_output"):
					lastInput, firstOutput = i, -1
				default:
					if firstOutput < 0 {
						firstOutput = i
					}
				}
			case "event_msg":
				if p.Get("type").String() != "token_count" || !p.Get("info").IsObject() {
					continue
				}
				totals := p.Get("info.total_token_usage").Raw
				if totals == prevTotals && totals != "" {
					continue
				}
				prevTotals = totals
				cut := l.start
				if firstOutput > lastInput {
					cut = lines[firstOutput].start
				}
				out = append(out, recordedRequest{cut: cut, recorded: int(p.Get("info.last_token_usage.input_tokens").Int()), compacted: compacted, turn: turn})
				compacted, turn = false, false
			}
		}
	}
	return format, out
}

// pointError is the headline's error at one request.
type pointError struct {
	session            string
	req                int
	err                float64 // (headline - recorded) / recorded
	headline, recorded int
	compacted, turn    bool
}

// headlineErrors runs ctx-count on every cut of every session but each session's first
// request (nothing recorded before it: the figure is then the user's --overhead), two at
// a time.
func headlineErrors(t *testing.T, sessions map[string][]byte) map[string][]pointError {
	t.Helper()
	out := map[string][]pointError{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for name, data := range sessions {
		_, reqs := recordedRequests(data)
		for k := 1; k < len(reqs); k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				q := reqs[k]
				r := countReport(t, data[:q.cut])
				e := pointError{session: name, req: k, headline: r.Tokens, recorded: q.recorded, compacted: q.compacted, turn: q.turn,
					err: float64(r.Tokens-q.recorded) / float64(q.recorded)}
				mu.Lock()
				out[name] = append(out[name], e)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for _, es := range out {
		sort.Slice(es, func(i, j int) bool { return es[i].req < es[j].req })
	}
	return out
}

// errorFigures are the mean |error|, its 99th percentile and the worst error of a set of
// points.
type errorFigures struct {
	n                 int
	mean, p99         float64
	worst             pointError
	compacted, turned []float64 // the errors at the first request after a compaction, of a turn
}

func figuresOf(es []pointError) errorFigures {
	f := errorFigures{n: len(es)}
	if len(es) == 0 {
		return f
	}
	abs := make([]float64, len(es))
	for i, e := range es {
		abs[i] = math.Abs(e.err)
		f.mean += abs[i]
		if abs[i] >= math.Abs(f.worst.err) {
			f.worst = e
		}
		if e.compacted {
			f.compacted = append(f.compacted, e.err)
		}
		if e.turn {
			f.turned = append(f.turned, e.err)
		}
	}
	f.mean /= float64(len(es))
	sort.Float64s(abs)
	f.p99 = abs[min(len(abs)-1, int(math.Ceil(0.99*float64(len(abs))))-1)]
	return f
}

// corpusSessions lists the corpus's Claude Code and Codex sessions that record at least
// two requests, and apart the subagents' logs (a subagent's second request carries
// ~2,500 tokens that no line of its log holds: see TestHeadlineIsWhatTheModelSaw).
func corpusSessions(t *testing.T) (sessions, subagents map[string][]byte) {
	t.Helper()
	root := filepath.Join("..", "shared", "corpus")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no corpus at %s", root)
	}
	sessions, subagents = map[string][]byte{}, map[string][]byte{}
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, reqs := recordedRequests(data); len(reqs) < 2 {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(filepath.Base(path), "agent-") {
			subagents[rel] = data
		} else {
			sessions[rel] = data
		}
		return nil
	})
	return sessions, subagents
}

// logTable writes one line per session: its requests, mean |error|, worst error, and the
// errors at the first request after each compaction and of each new user turn.
func logTable(t *testing.T, title string, errs map[string][]pointError) {
	t.Helper()
	var names []string
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("%s:", title)
	t.Logf("  %-58s %5s %7s %7s %8s  %s", "session", "reqs", "mean", "p99", "worst", "after compaction / first of a turn (mean)")
	for _, name := range names {
		f := figuresOf(errs[name])
		after := ""
		if len(f.compacted) > 0 {
			after += fmt.Sprintf("compaction %+.1f%% (%d)", 100*meanOf(f.compacted), len(f.compacted))
		}
		if len(f.turned) > 0 {
			after += fmt.Sprintf(" turn %+.1f%% (%d)", 100*meanOf(f.turned), len(f.turned))
		}
		t.Logf("  %-58s %5d %6.2f%% %6.2f%% %+7.2f%%  %s", clipName(name, 58), f.n, 100*f.mean, 100*f.p99, 100*f.worst.err, after)
	}
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func clipName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n+1:]
}

func pooled(errs map[string][]pointError) []pointError {
	var all []pointError
	for _, es := range errs {
		all = append(all, es...)
	}
	return all
}

// unforetold are the corpus requests whose prompt holds (or lacks) what no line of the
// session tells, by session file and request: held to no bound but the mean's, and
// checked still to miss, so that a change that accounts for them says so.
var unforetold = map[string]map[int]string{
	// The first request sent 2,587 tokens the second did not (a reminder Claude Code 2.0.5
	// sends once, with the IDE's opened file): the part learned from the first is high
	// by that at the second.
	"9e953218-585f-4692-89df-9e0747a31c68.jsonl": {2: "a reminder the first request alone sent"},
	// A PostToolUse hook reformatted the file just edited ("1 file reformatted", says the
	// system record), and Claude Code 1.0.51 sent the change without logging it.
	"326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl": {6: "a hook's reformatting, sent but not logged"},
}

// TestHeadlineAtEveryRequest holds ctx-count's headline to the prompt the agent recorded
// at every request of every corpus session and of generated Claude Code 2.1 and Codex
// 0.114 sessions, but each session's first: mean |error| at most 1%, 99th percentile at
// most 5%, worst at most 10%, the first request after each compaction and of each user
// turn included. The requests in unforetold are left out of the percentile and the
// worst. Subagents' logs (a subagent's second request carries ~2,500 tokens its log does
// not hold, and the tool schemas a ToolSearch loads are not priced) are measured, shown
// and held to looser bounds.
//
// The quick loop measures 12 corpus sessions, spread over their names (quickSessions),
// every subagent log (on fewer, one request is the p99) and the generated sessions of
// 200K and 800K; CTXKIT_LONG=1 every session, the generated ones of 2 MB too.
func TestHeadlineAtEveryRequest(t *testing.T) {
	sessions, subagents := corpusSessions(t)
	sessions = quickSessions(sessions, 12)
	for _, c := range []struct {
		name             string
		sessions         map[string][]byte
		mean, p99, worst float64
	}{
		{"corpus sessions", sessions, 0.01, 0.05, 0.10},
		{"corpus subagents", subagents, 0.03, 0.20, 0.30},
		{"generated sessions", generatedSessions(t), 0.01, 0.05, 0.10},
	} {
		errs := headlineErrors(t, c.sessions)
		logTable(t, c.name, errs)
		all := pooled(errs)
		var held []pointError
		for _, e := range all {
			if why, ok := unforetold[filepath.Base(e.session)][e.req]; ok {
				t.Logf("%s request %d: %+.2f%% (%d, recorded %d), left out of the bounds: %s", filepath.Base(e.session), e.req, 100*e.err, e.headline, e.recorded, why)
				if math.Abs(e.err) <= c.worst {
					t.Errorf("%s request %d is within %.0f%% now (%+.2f%%): take it out of unforetold", filepath.Base(e.session), e.req, 100*c.worst, 100*e.err)
				}
				continue
			}
			held = append(held, e)
		}
		f, fa := figuresOf(held), figuresOf(all)
		t.Logf("%s, %d requests: mean |error| %.2f%%; without the %d left out, %.2f%%, p99 %.2f%%, worst %+.2f%% (%s request %d: %d, recorded %d)", c.name, fa.n,
			100*fa.mean, fa.n-f.n, 100*f.mean, 100*f.p99, 100*f.worst.err, filepath.Base(f.worst.session), f.worst.req, f.worst.headline, f.worst.recorded)
		if fa.mean > c.mean || f.p99 > c.p99 || math.Abs(f.worst.err) > c.worst {
			t.Errorf("%s: mean |error| %.2f%% (at most %.0f%%), p99 %.2f%% (at most %.0f%%), worst %+.2f%% (at most %.0f%%)",
				c.name, 100*fa.mean, 100*c.mean, 100*f.p99, 100*c.p99, 100*f.worst.err, 100*c.worst)
		}
	}
}

// generatedSessions are Claude Code 2.1 and Codex 0.114 sessions written by testgen, their
// usage figures faithful to what the provider bills, counted with the counter ctx-count
// uses for the format: what their headline misses is what the file does not tell (the
// hidden part, thinking stored empty, what a compaction or a new turn drops), not the
// counter's error (the corpus measures that).
func generatedSessions(t *testing.T) map[string][]byte {
	t.Helper()
	o200k, err := tokens.New("o200k")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, c := range []struct {
		format, version string
		count           func(string) int
	}{
		{"claude-code", "2.1", tokens.Claude("claude-opus-4-7").Count},
		{"codex", "0.114", o200k.Count},
	} {
		sizes := []int{200 << 10, 800 << 10, 2 << 20}
		if !invariant.IsLong() {
			sizes = sizes[:2] // the quick loop's
		}
		for _, size := range sizes {
			for seed := int64(1); seed <= 3; seed++ {
				var b bytes.Buffer
				o := testgen.Options{Format: c.format, Version: c.version, Size: size, Seed: seed, Tokens: c.count}
				if err := testgen.Generate(&b, o); err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprintf("generated/%s-%s/%dK-seed%d", c.format, c.version, size>>10, seed)] = b.Bytes()
			}
		}
	}
	return out
}

// quickSessions is sessions with CTXKIT_LONG=1, n of them spread over their names
// otherwise (invariant.Quick).
func quickSessions(sessions map[string][]byte, n int) map[string][]byte {
	names := make([]string, 0, len(sessions))
	for name := range sessions {
		names = append(names, name)
	}
	picked := map[string][]byte{}
	for _, name := range invariant.Quick(names, n) {
		picked[name] = sessions[name]
	}
	return picked
}
