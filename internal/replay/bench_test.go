package replay

import (
	"bytes"
	"context"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// generated is a generated document of about size bytes. The corpus's Claude Code
// sessions are far below 200K tokens (the largest, 1.2 MB of JSONL, is about 14K tokens
// as a request), so generated ones stand for issue #21's 213K-token turn: an Anthropic
// request of about 196K tokens, as ctx-replay and ctx-proxy send one through the pipeline,
// and a 3.7 MB Claude Code session, the size of the issue's.
func generated(b *testing.B, format string, size int) []byte {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: size, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	t, err := transcript.Parse(buf.Bytes(), transcript.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d bytes, %d messages, %d tokens", format, buf.Len(), len(t.Messages), measure.Total(t, tokens.Claude("")))
	return buf.Bytes()
}

// BenchmarkDefaultPipe is one turn of ctx-replay or ctx-proxy: the five tiers run in this
// process on a 200K-token document. "cold" has no count cache (CTX_CACHE_DIR=off); "warm"
// has a disk count cache filled by a run before the timer starts. "commands" runs each
// stage's command on the bytes (as before package pipeline), "tiers" the in-process
// pipeline over one parsed document, as ctx-replay and ctx-proxy run it now.
func BenchmarkDefaultPipe(b *testing.B) {
	p, err := ParsePipe(DefaultPipe, Tools())
	if err != nil {
		b.Fatal(err)
	}
	docs := map[string][]byte{
		"request":     generated(b, "anthropic", 560_000),
		"claude-code": generated(b, "claude-code", 3_700_000),
	}
	for _, c := range []struct{ doc, cache string }{
		{"request", "off"}, {"request", b.TempDir()}, {"claude-code", "off"}, {"claude-code", b.TempDir()},
	} {
		body, name := docs[c.doc], c.doc+"/warm"
		if c.cache == "off" {
			name = c.doc + "/cold"
		}
		for _, how := range []string{"commands", "tiers", "next"} {
			if how == "next" && c.doc != "claude-code" {
				continue // a session log's next request is its lines and the new ones
			}
			b.Run(name+"/"+how, func(b *testing.B) {
				env := map[string]string{"CTX_STORE": b.TempDir(), "CTX_CACHE_DIR": c.cache}
				getenv := func(string) string { return "" }
				run := func() error {
					_, err := p.Run(context.Background(), body, getenv, env)
					return err
				}
				switch how {
				case "tiers":
					run = tiersRun(b, p, body, StageEnv(getenv, env))
				case "next":
					run = nextRun(b, p, body, StageEnv(getenv, env))
				}
				if err := run(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := benchload.CPUTime()
				for i := 0; i < b.N; i++ {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
				cpu = benchload.CPUTime() - cpu
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/turn")
				// CPU time, the garbage collector's included: steadier than wall time when
				// the machine is shared.
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/turn")
			})
		}
	}
}

// tiersRun is a run of p's in-process pipeline on body, as ctx-replay makes one: the
// document parsed once, the tiers planning on it.
func tiersRun(b *testing.B, p *Pipeline, body []byte, getenv func(string) string) func() error {
	stages, err := p.Stages(getenv, "")
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
		d, err := pipeline.New(body, transcript.Options{}, stages.Env, pipeline.Clock{})
		if err != nil {
			return err
		}
		_, _, err = stages.Run(context.Background(), d, getenv)
		return err
	}
}

// nextRun is a turn of the live loop on body, a session log: the request before it (body
// without its last lines) went through the pipeline, and this one is what the pipeline
// sent then with the session's new lines, read from it (pipeline.NewFrom), as ctx-replay
// and ctx-proxy run the next request of a conversation.
func nextRun(b *testing.B, p *Pipeline, body []byte, getenv func(string) string) func() error {
	stages, err := p.Stages(getenv, "")
	if err != nil {
		b.Fatal(err)
	}
	cut := len(body)
	for range 4 { // the newest exchange: a few records
		cut = bytes.LastIndexByte(body[:cut-1], '\n') + 1
	}
	first, err := pipeline.New(body[:cut], transcript.Options{}, stages.Env, pipeline.Clock{})
	if err != nil {
		b.Fatal(err)
	}
	prev, _, err := stages.Run(context.Background(), first, getenv)
	if err != nil {
		b.Fatal(err)
	}
	in := append(bytes.Clone(prev.Raw), body[cut:]...)
	return func() error {
		d, err := pipeline.NewFrom(prev, in, transcript.Options{}, stages.Env, pipeline.Clock{})
		if err != nil {
			return err
		}
		_, _, err = stages.Run(context.Background(), d, getenv)
		return err
	}
}
