package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A session the client compacted is replayed whole: every request it records, those
// before each compaction too, each segment as the client sent it, the compactions marked.
// A replay measured only the tail after the last compaction, without a word (a 3 MB
// session with 265 requests and 3 compactions replayed as 9).
func TestCompactedSessionIsReplayedWhole(t *testing.T) {
	for _, c := range []struct {
		name     string
		o        testgen.Options
		boundary string
	}{
		{"claude-code", testgen.Options{Format: "claude-code", Compactions: 3}, `"subtype":"compact_boundary"`},
		{"claude-code preserved", testgen.Options{Format: "claude-code", Compactions: 3, Preserve: true}, `"preservedSegment"`},
		{"codex", testgen.Options{Format: "codex", Compactions: 3}, `"type":"compacted"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Size, c.o.Seed = 400_000, 5
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, c.o); err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(buf.Bytes(), []byte(c.boundary)); n != 3 {
				t.Fatalf("the generated session has %d compactions (%s), want 3", n, c.boundary)
			}
			tr, err := transcript.Parse(buf.Bytes(), transcript.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Warnings) > 0 {
				t.Errorf("read with warnings: %v", tr.Warnings)
			}
			recorded := recordedFigures(buf.Bytes())
			tot, turns := identityReplay(t, tr)
			if tot.Requests != recorded || tot.Recorded != recorded {
				t.Errorf("%d requests replayed, %d recorded as the replay counts them; the session records %d", tot.Requests, tot.Recorded, recorded)
			}
			if tot.ClientCompactions != 3 {
				t.Errorf("%d client compactions, want 3", tot.ClientCompactions)
			}
			if tot.CacheBreaks != 0 || tot.BilledRatio != 1 {
				t.Errorf("a pipeline that changes nothing: %d cache breaks, billed %.4f", tot.CacheBreaks, tot.BilledRatio)
			}
			points, err := SessionPoints(tr, func(b []byte) (*transcript.Transcript, error) { return transcript.Parse(b, transcript.Options{}) })
			if err != nil {
				t.Fatal(err)
			}
			marked := 0
			for i, tn := range turns {
				if !tn.ClientCompaction {
					continue
				}
				marked++
				if i == 0 || tn.In != tn.Uncompacted || tn.Tokens != tn.Uncompacted {
					t.Errorf("turn %d after a compaction: in %d, sent %d, the session's own %d", tn.Turn, tn.In, tn.Tokens, tn.Uncompacted)
					continue
				}
				// The request after a compaction is the compacted history: fewer messages
				// than the one before, the summary among them.
				before, after := requestAt(t, tr, points[i-1]), requestAt(t, tr, points[i])
				summary := false
				for _, m := range after.Messages {
					summary = summary || m.Summary
				}
				if len(after.Messages) >= len(before.Messages) || !summary {
					t.Errorf("turn %d after a compaction: %d messages (a summary: %v), the request before %d", tn.Turn, len(after.Messages), summary, len(before.Messages))
				}
			}
			if marked != 3 {
				t.Errorf("%d turns marked client_compaction, want 3", marked)
			}
		})
	}
}

// requestAt is the session's own request at p, parsed.
func requestAt(t *testing.T, tr *transcript.Transcript, p Point) *transcript.Transcript {
	t.Helper()
	r, err := transcript.Parse(p.Request(tr), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recordedFigures counts the usage figures a generated Claude Code log or Codex rollout
// records, by their text: each turn's message id once, each token_count event.
func recordedFigures(doc []byte) int {
	ids := map[string]bool{}
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.Contains(line, `"type":"token_count"`):
			n++
		case strings.Contains(line, `"type":"assistant"`) && strings.Contains(line, `"usage":{`):
			i := strings.Index(line, `"id":"msg_`)
			id := line[i : i+40]
			if !ids[id] {
				ids[id] = true
				n++
			}
		}
	}
	return n
}

// Where a replay leaves requests out, it says so: a rewind leaves a branch whose requests
// the live conversation does not hold.
func TestRequestsLeftOutAreNamed(t *testing.T) {
	doc := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"first"},"timestamp":"2026-01-01T00:00:00Z"}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"one"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":5000,"cache_read_input_tokens":0,"output_tokens":5}},"timestamp":"2026-01-01T00:00:05Z"}`,
		`{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":"a branch left"},"timestamp":"2026-01-01T00:00:10Z"}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","sessionId":"s","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"two"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":20,"cache_read_input_tokens":5000,"output_tokens":5}},"timestamp":"2026-01-01T00:00:15Z"}`,
		`{"type":"user","uuid":"u3","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":"the rewound question"},"timestamp":"2026-01-01T00:00:20Z"}`,
		`{"type":"assistant","uuid":"a3","parentUuid":"u3","sessionId":"s","message":{"id":"m3","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"three"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":25,"cache_read_input_tokens":5000,"output_tokens":5}},"timestamp":"2026-01-01T00:00:25Z"}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--json", "--pipe", "ctx-count -p", "-"}, strings.NewReader(doc), &stdout, &stderr, testEnv); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"requests":2,"requests_recorded":3,"client_compactions":0,`) {
		t.Errorf("report %s", stdout.String())
	}
	if want := "ctx-replay: warning: stdin: 1 of the 3 requests the session records are not replayed"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}
