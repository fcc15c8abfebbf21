package ctxkit_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// sidechainTiers are the filters run with --sidechains, with flags that make each act on
// a small subagent's conversation.
var sidechainTiers = []struct {
	tool string
	args []string
	o    invariant.Options
}{
	{"ctx-persist", []string{"--threshold", "600B"}, invariant.Options{Lossy: true}},
	{"ctx-budget", []string{"--cap", "500"}, invariant.Options{Lossy: true, ProtectedResults: true}},
	{"ctx-snip", []string{"--keep", "1", "--window", "6k", "--reserve", "0"}, invariant.Options{Lossy: true}},
	{"ctx-summarize", []string{"--window", "6k", "--reserve", "0"}, invariant.Options{Lossy: true, Structural: true}},
	{"ctx-trim", []string{"--window", "5k", "--reserve", "0"}, invariant.Options{Lossy: true, Structural: true, Drops: true, Added: []string{"[ctx-trim: "}}},
	{"ctx-repair", nil, invariant.Options{Structural: true}},
}

// TestSidechainsTreatASubagentLikeASession: --sidechains on a session that holds its
// subagents' lines among its own (Claude Code 1.x, generated with two subagents) makes
// every filter act on the newest subagent's conversation as it acts on a session: the
// invariants of DESIGN §4 hold on that conversation read so, the subagent's context gets
// smaller where the tier acts, and every line of the session's own conversation and of
// the other subagent is written back byte for byte, in its place.
func TestSidechainsTreatASubagentLikeASession(t *testing.T) {
	in, _, err := testgen.Session(testgen.Options{Format: "claude-code", Size: 120_000, Seed: 21}, 2, testgen.LayoutInline)
	if err != nil {
		t.Fatal(err)
	}
	counter, _ := tokens.New("estimate")
	side, err := transcript.Parse(in, transcript.Options{Sidechains: true})
	if err != nil {
		t.Fatal(err)
	}
	if !side.Subagent || len(side.Messages) < 4 {
		t.Fatalf("the subagent's conversation: %d messages (subagent %v)", len(side.Messages), side.Subagent)
	}
	// The lines the subagent's conversation is not made of, which no tier may touch.
	untouched := func(doc []byte) []string {
		tr, err := transcript.Parse(doc, transcript.Options{Sidechains: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range tr.Records {
			if r.Left == transcript.MainThread || r.Left == transcript.Sidechain {
				out = append(out, tr.Slice(r.Span))
			}
		}
		return out
	}
	others := untouched(in)
	if len(others) < 10 {
		t.Fatalf("only %d lines of the session's and the other subagent's", len(others))
	}
	store := t.TempDir()
	for _, c := range sidechainTiers {
		run := func(doc []byte) ([]byte, error) {
			var out, errb bytes.Buffer
			args := append(append([]string{"--sidechains", "--tokenizer", "estimate"}, c.args...), "-")
			code := mains[c.tool](args, bytes.NewReader(doc), &out, &errb, func(k string) string {
				return map[string]string{"CTX_STORE": store, "CTX_CACHE_DIR": "off"}[k]
			})
			if code != 0 {
				return nil, fmt.Errorf("exit %d: %s", code, errb.String())
			}
			return out.Bytes(), nil
		}
		o := c.o
		o.Sidechains, o.Counter = true, counter
		out := invariant.Check(t, c.tool, in, run, o)
		if out == nil {
			continue
		}
		if got := untouched(out); strings.Join(got, "\n") != strings.Join(others, "\n") {
			t.Errorf("%s: the session's lines or the other subagent's changed", c.tool)
		}
		after, err := transcript.Parse(out, transcript.Options{Sidechains: true})
		if err != nil {
			t.Fatal(err)
		}
		before, now := measure.Total(side, counter), measure.Total(after, counter)
		if c.tool != "ctx-repair" && now >= before {
			t.Errorf("%s: the subagent's context went from %d to %d tokens: the tier did not act on it", c.tool, before, now)
		}
		// Without the flag the session reads as it did: its conversation is untouched.
		main, _ := transcript.Parse(in, transcript.Options{})
		mainAfter, _ := transcript.Parse(out, transcript.Options{})
		if len(main.Messages) != len(mainAfter.Messages) {
			t.Errorf("%s: the session's conversation has %d messages, had %d", c.tool, len(mainAfter.Messages), len(main.Messages))
		}
		for i := range min(len(main.Messages), len(mainAfter.Messages)) {
			if main.MessageBytes(i) != mainAfter.MessageBytes(i) {
				t.Errorf("%s: the session's message %d changed", c.tool, i)
				break
			}
		}
		if c.tool == "ctx-persist" {
			// What a run with --sidechains offloads, --restore puts back, byte for byte.
			var back, errb bytes.Buffer
			if code := mains["ctx-persist"]([]string{"--restore", "-"}, bytes.NewReader(out), &back, &errb, func(k string) string {
				return map[string]string{"CTX_STORE": store, "CTX_CACHE_DIR": "off"}[k]
			}); code != 0 || !bytes.Equal(back.Bytes(), in) {
				t.Errorf("ctx-persist --restore: exit %d, %s; the original back: %v", code, errb.String(), bytes.Equal(back.Bytes(), in))
			}
		}
		t.Logf("%s --sidechains: the subagent's context %d → %d tokens", c.tool, before, now)
	}
}

// On the corpus's subagents' own logs, --sidechains changes nothing: a subagent's log is
// read as its conversation with or without it, and every filter writes the same bytes.
func TestSidechainsOnSubagentLogs(t *testing.T) {
	root := filepath.Join("..", "shared", "corpus", "claude-code")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	var logs []string
	for _, f := range files {
		for _, s := range sessions.Subagents(f) {
			if st, err := os.Stat(s); err == nil && st.Size() > 20_000 {
				logs = append(logs, s)
			}
		}
	}
	if len(logs) == 0 {
		t.Skipf("no corpus subagent logs under %s", root)
	}
	store := t.TempDir()
	for _, f := range logs {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sidechainTiers {
			var outs [2]string
			for i, flags := range [][]string{nil, {"--sidechains"}} {
				var out, errb bytes.Buffer
				args := append(append(append(flags, "--tokenizer", "estimate"), c.args...), "-")
				if code := mains[c.tool](args, bytes.NewReader(doc), &out, &errb, func(k string) string {
					return map[string]string{"CTX_STORE": store, "CTX_CACHE_DIR": "off"}[k]
				}); code != 0 {
					t.Fatalf("%s %v %s: exit %d: %s", c.tool, flags, f, code, errb.String())
				}
				outs[i] = out.String()
			}
			if outs[0] != outs[1] {
				t.Errorf("%s %s: --sidechains changes the output of a subagent's own log", c.tool, f)
			}
		}
	}
}
