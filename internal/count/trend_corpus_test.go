package count

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// TestCorpusTrendAcrossCompaction: on real Claude Code sessions, the trend keeps every
// recorded figure. The corpus holds no compacted session, so one is made in memory: a
// compact_boundary and a compact summary are put before a user prompt in the middle of a
// real session, as Claude Code writes them. The session's figures are then those of the
// file as it was, the compaction sits after the figures before it, the live points are the
// figures after it, and the picture marks it at 60, 80 and 120 columns.
func TestCorpusTrendAcrossCompaction(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("corpus not found at %s", root)
	}
	counter, err := tokens.New("estimate")
	if err != nil {
		t.Fatal(err)
	}
	window := tokens.Budget{Window: 200_000, Reserve: 20_000, Effective: 180_000}
	tried := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transcript.Parse(data, transcript.Options{Name: f})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		whole := Measure(tr, Options{File: f, Counter: counter, Window: window})
		if whole.Trend == nil || len(whole.Trend.Session) < 6 {
			continue
		}
		if len(whole.Trend.Session) < len(whole.Trend.Points) {
			t.Errorf("%s: %d session figures, %d live", f, len(whole.Trend.Session), len(whole.Trend.Points))
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		at := compactionPoint(lines)
		if at < 0 {
			continue
		}
		tried++
		before := 0 // figures of the turns before the compaction
		seen := map[string]bool{}
		for _, l := range lines[:at] {
			if _, turn, ok := transcript.RecordUsage(transcript.ClaudeCode, l); ok && !seen[turn] {
				seen[turn] = true
				before++
			}
		}
		parent := gjson.Get(lines[at], "parentUuid").String()
		next := strings.Replace(lines[at], `"parentUuid":"`+parent+`"`, `"parentUuid":"cs-test"`, 1)
		spliced := append(append(append([]string{}, lines[:at]...),
			`{"type":"system","subtype":"compact_boundary","uuid":"cb-test","parentUuid":null,"logicalParentUuid":"`+parent+`","content":"Conversation compacted"}`,
			`{"type":"user","uuid":"cs-test","parentUuid":"cb-test","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation."}}`,
			next), lines[at+1:]...)
		ctr, err := transcript.Parse([]byte(strings.Join(spliced, "\n")+"\n"), transcript.Options{Name: f})
		if err != nil {
			t.Fatalf("%s compacted: %v", f, err)
		}
		r := Measure(ctr, Options{File: filepath.Base(f), Counter: counter, Window: window})
		tt := r.Trend
		if tt == nil || tt.Compactions != 1 {
			t.Fatalf("%s compacted: trend %+v", f, tt)
		}
		if fmt.Sprint(tt.Session) != fmt.Sprint(whole.Trend.Session) || fmt.Sprint(tt.SessionCompactedAfter) != fmt.Sprint([]int{before}) {
			t.Errorf("%s compacted: session %v after %v, want %v after [%d]", f, tt.Session, tt.SessionCompactedAfter, whole.Trend.Session, before)
		}
		if len(tt.Points) > len(tt.Session)-before {
			t.Errorf("%s compacted: %d live points, only %d figures after the compaction", f, len(tt.Points), len(tt.Session)-before)
		}
		for _, width := range []int{60, 80, 120} {
			var b bytes.Buffer
			Render(&b, &r, false, width)
			if !strings.Contains(b.String(), "┃ compaction\n") || !strings.Contains(b.String(), "compacted") {
				t.Errorf("%s compacted, %d columns: the compaction is not marked:\n%s", f, width, b.String())
			}
			for _, line := range strings.Split(b.String(), "\n") {
				if n := visibleWidth(line); n > width {
					t.Errorf("%s compacted, %d columns: a line of %d: %q", f, width, n, line)
				}
			}
			if width == 80 && testing.Verbose() {
				t.Logf("%s compacted before line %d, at 80 columns:\n%s", filepath.Base(f), at+1, b.String())
			}
		}
	}
	if tried == 0 {
		t.Skip("no corpus session with a prompt to compact before")
	}
}

// compactionPoint is the line of a user prompt (text, not a tool result) in the middle
// third of a session whose parent is the line before it, -1 when there is none.
func compactionPoint(lines []string) int {
	for i := len(lines) / 2; i < len(lines)*5/6; i++ {
		l, prev := gjson.Parse(lines[i]), gjson.Parse(lines[i-1])
		if l.Get("type").String() == "user" && !l.Get("isSidechain").Bool() && l.Get("message.content").Type == gjson.String &&
			!l.Get("isMeta").Bool() && l.Get("parentUuid").String() != "" && l.Get("parentUuid").String() == prev.Get("uuid").String() {
			return i
		}
	}
	return -1
}
