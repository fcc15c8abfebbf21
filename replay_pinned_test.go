package ctxkit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestReplayKeepsPinnedContext is issue 35's rule that pinned context is never summarized
// or cleared, held on the loop: documents replayed request by request through the default
// pipeline, the window at 0.6 times the final prompt (--reserve 0), and every request sent
// holds, byte for byte, the pinned context of the session's own request at that point
// (invariant.Pinned: the instructions, developer messages, AGENTS.md and environment
// messages, Claude Code's first-message reminders, the tools).
//
// The documents: every Codex rollout and every Claude Code session of the corpus that
// records two usage figures. Claude Code's logs do not record the reminders it puts at the
// head of the first user message of each request, so each session is replayed with a
// CLAUDE.md reminder and a second one put there, as Claude Code sends them (the corpus
// holds no Codex rollout yet). And generated documents as the clients send them
// (testgen's Pinned): Codex 0.171 rollouts, the Responses and Chat Completions requests
// Codex sends, the Anthropic requests and session logs of Claude Code. The quick loop
// replays 6 of the corpus's smaller sessions and the generated documents at half their
// size, CTXKIT_LONG=1 every session at full size.
func TestReplayKeepsPinnedContext(t *testing.T) {
	type doc struct {
		name   string
		data   []byte
		window int
		format string // of a generated document
	}
	var docs []doc
	for _, folder := range []string{"claude-code", "codex"} {
		root := filepath.Join("..", "shared", "corpus", folder)
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := transcript.Parse(data, transcript.Options{})
			if err != nil || len(tr.Usage) < 2 {
				return nil
			}
			if tr.Format == transcript.ClaudeCode {
				if data = withReminders(t, data); data == nil {
					return nil
				}
			}
			docs = append(docs, doc{name: folder + "/" + filepath.Base(path), data: data, window: int(0.6 * float64(tr.Usage[len(tr.Usage)-1].Input))})
			return nil
		})
	}
	if !invariant.IsLong() { // the quick loop: 6 sessions spread over all but the 8 largest
		sessions := map[string][]byte{}
		for _, d := range docs {
			sessions[d.name] = d.data
		}
		keep := map[string]bool{}
		for _, name := range invariant.Quick(bySize(sessions)[min(8, len(docs)):], 6) {
			keep[name] = true
		}
		docs = slices.DeleteFunc(docs, func(d doc) bool { return !keep[d.name] })
	}
	corpus := len(docs)
	if corpus == 0 {
		t.Logf("no corpus at ../shared/corpus: generated documents only")
	}
	counter, _ := tokens.New("estimate")
	for _, g := range []struct {
		format string
		size   int
		seed   int64
	}{
		{"codex", 600 << 10, 1}, {"codex", 300 << 10, 2}, {"responses", 400 << 10, 3}, {"openai", 300 << 10, 4},
		{"anthropic", 400 << 10, 5}, {"claude-code", 400 << 10, 6}, {"claude-code", 250 << 10, 7},
	} {
		if !invariant.IsLong() {
			g.size /= 2
		}
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: g.format, Size: g.size, Seed: g.seed, Pinned: true}); err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(buf.Bytes(), transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		final := measure.Total(tr, counter)
		if len(tr.Usage) > 0 {
			final = tr.Usage[len(tr.Usage)-1].Input
		}
		for _, share := range []float64{0.6, 0.3} {
			docs = append(docs, doc{name: fmt.Sprintf("generated/%s-%d at %.1f", g.format, g.seed, share), data: buf.Bytes(), window: int(share * float64(final)), format: g.format})
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return len(docs[i].data) > len(docs[j].data) })

	type result struct {
		requests, pinned, firings, summaries int
		bytes                                int // of pinned context in the requests, in all
	}
	results := make([]result, len(docs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, d := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			orig, err := transcript.Parse(d.data, transcript.Options{})
			if err != nil {
				t.Errorf("%s: %v", d.name, err)
				return
			}
			points := replay.Points(orig)
			r := &results[i]
			sent := func(turn int, request []byte) error {
				own, err := transcript.Parse(sessionAt(orig, points[turn-1].Cut), transcript.Options{Format: orig.Format})
				if err != nil {
					return fmt.Errorf("the session's own request %d: %w", turn, err)
				}
				got, err := transcript.Parse(request, transcript.Options{Format: orig.Format})
				if err != nil {
					return fmt.Errorf("request %d: %w", turn, err)
				}
				want := invariant.Pinned(own)
				for _, p := range invariant.MissingPinned(want, invariant.Pinned(got)) {
					t.Errorf("%s: request %d lost the pinned context at byte %d: %.80q", d.name, turn, p.At, p.Text)
				}
				r.requests++
				for _, p := range want {
					r.bytes += len(p.Text)
				}
				if len(want) > 0 {
					r.pinned++
				}
				return nil
			}
			var stdout, stderr bytes.Buffer
			args := []string{"--json", "--window", strconv.Itoa(d.window), "--reserve", "0", "-"}
			if code := replay.MainSent(args, bytes.NewReader(d.data), &stdout, &stderr, noEnv, sent); code != 0 {
				t.Errorf("ctx-replay %v %s: exit %d: %s", args, d.name, code, stderr.String())
				return
			}
			var rep replay.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Errorf("%s: %v", d.name, err)
			}
			for _, n := range rep.Firings {
				r.firings += n
			}
			r.summaries = rep.Firings["ctx-summarize"]
		}()
	}
	wg.Wait()
	var all result
	summarized := map[string]int{} // ctx-summarize's firings on each client's generated documents
	for i, r := range results {
		if docs[i].format != "" {
			summarized[docs[i].format] += r.summaries
		}
		if r.requests == 0 {
			t.Errorf("%s: no request replayed", docs[i].name)
		}
		if docs[i].format != "" && r.pinned < r.requests {
			t.Errorf("%s: %d of its %d requests hold no pinned context", docs[i].name, r.requests-r.pinned, r.requests)
		}
		all.requests += r.requests
		all.pinned += r.pinned
		all.bytes += r.bytes
		all.firings += r.firings
	}
	for _, format := range []string{"codex", "responses", "anthropic", "claude-code"} {
		if summarized[format] == 0 {
			t.Errorf("ctx-summarize never fired on the generated %s documents: the test does not test it there", format)
		}
	}
	t.Logf("%d documents (%d of the corpus, %d generated): %d requests, %d of them with pinned context (%d bytes of it in all, kept byte for byte), %d firings of the tiers",
		len(docs), corpus, len(docs)-corpus, all.requests, all.pinned, all.bytes, all.firings)
}

// withReminders is a Claude Code session with the reminders Claude Code puts at the head
// of the first user message of a request (CLAUDE.md, and another), as text blocks before
// what the message holds; nil when it has no user message.
func withReminders(t *testing.T, data []byte) []byte {
	t.Helper()
	const claudeMd = "<system-reminder>\nUse the context below where it helps with the user's request:\n# claudeMd\nInstructions for this codebase and from the user follow. Follow them; they override the defaults.\n\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\n## Commands\n- Build with `make`, test with `make test`; run one test with `go test -run NAME ./pkg/...`.\n- Lint with `golangci-lint run` before every commit.\n\n## Conventions\n- Errors are wrapped with %w and say which step failed.\n- No new dependency without a note in the pull request.\n- Keep functions short; comments say why, not what.\n</system-reminder>\n"
	const other = "<system-reminder>\nThe todo list is empty; use TodoWrite when a task has several steps.\n</system-reminder>"
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		rec := gjson.ParseBytes(line)
		if rec.Get("type").String() != "user" || rec.Get("message.role").String() != "user" {
			continue
		}
		content := rec.Get("message.content")
		var blocks []string
		switch {
		case content.Type == gjson.String:
			blocks = []string{`{"type":"text","text":` + content.Raw + `}`}
		case content.IsArray():
			if strings.Contains(content.Raw, `"tool_result"`) {
				continue
			}
			content.ForEach(func(_, b gjson.Result) bool {
				blocks = append(blocks, b.Raw)
				return true
			})
		default:
			continue
		}
		q := func(s string) string { return `{"type":"text","text":` + transcript.Quote(s) + `}` }
		blocks = append([]string{q(claudeMd), q(other)}, blocks...)
		trail := bytes.HasSuffix(line, []byte("\n"))
		out, err := sjson.SetRawBytes(bytes.TrimSuffix(line, []byte("\n")), "message.content", []byte("["+strings.Join(blocks, ",")+"]"))
		if err != nil {
			t.Fatal(err)
		}
		if trail {
			out = append(out, '\n')
		}
		lines[i] = out
		return bytes.Join(lines, nil)
	}
	return nil
}

// sessionAt is the session's own request at a cut: the lines before it (JSONL), or the
// document with its message array closed there.
func sessionAt(t *transcript.Transcript, cut int) []byte {
	if t.Array.IsZero() {
		return []byte(t.Doc[:cut])
	}
	closeAt := strings.LastIndexByte(t.Doc[:t.Array.End], ']')
	return []byte(t.Doc[:cut] + t.Doc[closeAt:])
}
