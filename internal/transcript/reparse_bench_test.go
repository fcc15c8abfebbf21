package transcript_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// BenchmarkReparse reads a request that extends the one before (the last two requests
// ctx-replay builds of a generated session) by Parse, and by Reparse of the one before;
// "+count" adds counting it (measure.Of, measure.OfNext). An Anthropic request of 200K
// and 1M tokens (the Claude estimate; the sizes ctx-proxy's figures are set at), and a
// 3.7 MB Claude Code session (the tiers' per-turn figure). cpu-ms/op is the process's CPU
// time, the garbage collector's included.
func BenchmarkReparse(b *testing.B) {
	for _, c := range []struct {
		name, format string
		size         int
		many         bool // short messages, many of them (manyMessages)
	}{
		{"anthropic-200K", "anthropic", 560_000, false},
		{"anthropic-1M", "anthropic", 2_800_000, false},
		{"anthropic-1M-short-messages", "anthropic", 3_000_000, true},
		{"claude-code-3.7MB", "claude-code", 3_700_000, false},
	} {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: c.format, Size: c.size, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		doc := buf.Bytes()
		if c.many {
			doc = manyMessages(c.size)
		}
		reqs, _ := lastRequests(b, c.name, doc, 2)
		before, raw := reqs[len(reqs)-3], reqs[len(reqs)-2]
		o := transcript.Options{}
		prev, err := transcript.Parse(before, o)
		if err != nil {
			b.Fatal(err)
		}
		prevTally := measure.Of(prev, reparseCounter, false)
		b.Logf("%s: %d bytes, %d messages, %d tokens; %d bytes new", c.name, len(raw), len(prev.Messages), prevTally.Total(), len(raw)-len(before))
		for _, r := range []struct {
			name string
			run  func() error
		}{
			{"parse", func() error { _, err := transcript.Parse(raw, o); return err }},
			{"reparse", func() error { _, err := transcript.Reparse(prev, raw, o); return err }},
			{"parse+count", func() error {
				t, err := transcript.Parse(raw, o)
				if err == nil {
					measure.Of(t, reparseCounter, false)
				}
				return err
			}},
			{"reparse+count", func() error {
				t, err := transcript.Reparse(prev, raw, o)
				if err == nil {
					measure.OfNext(prev, prevTally, t, reparseCounter)
				}
				return err
			}},
		} {
			b.Run(c.name+"/"+r.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := benchload.CPUTime()
				for b.Loop() {
					if err := r.run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((benchload.CPUTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// manyMessages is an Anthropic request of about size bytes made of short turns (a
// question, a tool call, its result of a few hundred bytes, an answer): the many-message
// shape of an agent's request, where the cost per message shows.
func manyMessages(size int) []byte {
	words := strings.Fields("the of a read file line test go func error value cache token request message tool result block span parse count")
	text := func(n, seed int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n; i++ {
			sb.WriteString(words[(seed*7+i*i)%len(words)])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":32000,"system":"You are an agent.","messages":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := fmt.Sprintf("toolu_%06d", i)
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":%q}]},`, text(80, i))
		fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Read","input":{"file_path":"/repo/f%d.go"}}]},`, id, i)
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%q}]},`, id, text(400, i+1))
		fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"text","text":%q}]}`, text(60, i+2))
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
