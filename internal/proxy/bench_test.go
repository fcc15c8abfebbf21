package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// request200K is a generated Anthropic request of about 200,000 tokens (Claude estimate).
func request200K(b *testing.B) []byte {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: 560_000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	t, err := transcript.Parse(buf.Bytes(), transcript.Options{Format: transcript.Anthropic})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("request: %d bytes, %d messages, %d tokens", buf.Len(), len(t.Messages), measure.Total(t, tokens.Claude("")))
	return buf.Bytes()
}

// BenchmarkAddedLatency sends a conversation's requests of about 200K and 1M tokens, each
// extending the one before by two messages and marked as Claude Code marks them, straight
// to a fake upstream and through the proxy (on 127.0.0.1), with no pipeline and with the
// default one, and reports the time the proxy adds: each percentile of the time through
// the proxy less the median time straight.
func BenchmarkAddedLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}]}`)
	}))
	defer up.Close()
	send := func(url string, body []byte) time.Duration {
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Claude-Code-Session-Id", "latency")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	const samples = 40
	for _, size := range []struct {
		name   string
		tokens int
	}{{"200K", 200_000}, {"1M", 1_000_000}} {
		g := generate(b, size.tokens)
		grow := min(samples, len(g.msgs)/8)
		base := len(g.msgs) - 2*grow
		direct := make([]time.Duration, samples)
		for i := range direct {
			direct[i] = send(up.URL, g.marked(len(g.msgs)))
		}
		straight := pct(direct, 50)
		for _, mode := range []struct{ name, pipe string }{{"pipeline-off", ""}, {"pipeline-on", replay.DefaultPipe}} {
			b.Run(size.name+"/"+mode.name, func(b *testing.B) {
				srv, px, _ := proxyFor(b, up.URL, mode.pipe, b.TempDir())
				srv.Log, srv.Stats = nil, nil
				srv.Store = srv.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
				countAsStages(b, srv)            // and counts the log as ctx-proxy does
				var handler []time.Duration
				var mu sync.Mutex
				srv.Log = writerFunc(func(p []byte) (int, error) {
					var rec Record
					if json.Unmarshal(p, &rec) == nil && rec.Extended {
						mu.Lock()
						handler = append(handler, time.Duration(rec.AddedMS*float64(time.Millisecond)))
						mu.Unlock()
					}
					return len(p), nil
				})
				var took []time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j := 0; j < samples; j++ {
						k := j % grow
						if k == 0 { // the conversation as it was grow requests ago: not timed
							send(px.URL, g.marked(base))
						}
						body := g.marked(base + 2*(k+1))
						took = append(took, send(px.URL, body))
					}
				}
				b.StopTimer()
				b.ReportMetric(ms(pct(took, 50)-straight), "p50-added-ms")
				b.ReportMetric(ms(pct(took, 99)-straight), "p99-added-ms")
				b.ReportMetric(ms(straight), "direct-p50-ms")
				srv.Close() // every log line written
				// The time the proxy itself measures between reading a request and sending it on.
				b.ReportMetric(ms(pct(handler, 50)), "rewrite-p50-ms")
				b.ReportMetric(ms(pct(handler, 99)), "rewrite-p99-ms")
			})
		}
	}
}

// countAsStages makes s count its log line as ctx-proxy does: with its Context's
// counters, which are the stages' own, so that the stages' counts serve the log.
func countAsStages(t testing.TB, s *Server) {
	t.Helper()
	env, err := cli.StageEnv(replay.StageEnv(func(string) string { return "" }, s.Env))
	if err != nil {
		t.Fatal(err)
	}
	s.Counter = env.Counter
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkRewrite is the proxy's own work on a 200K-token request that extends the one
// before, without HTTP: what BenchmarkAddedLatency's rewrite figures are made of.
func BenchmarkRewrite(b *testing.B) {
	body := request200K(b)
	for _, mode := range []struct{ name, pipe string }{{"pipeline-off", ""}, {"pipeline-on", replay.DefaultPipe}} {
		b.Run(mode.name, func(b *testing.B) {
			s, _, _ := proxyFor(b, "http://127.0.0.1:1", mode.pipe, b.TempDir())
			s.Store = s.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
			countAsStages(b, s)          // and counts the log as ctx-proxy does
			r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
			s.rewrite(r, transcript.Anthropic, body)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec, _ := s.rewrite(r, transcript.Anthropic, body)
				if rec.Fallback != "" {
					b.Fatal(rec.Fallback)
				}
			}
		})
	}
}

// BenchmarkAddedLatencyWritingStore is issue 35's figure for a stage that writes to the
// store on the request path: each request extends the conversation with 7 new tool results
// of 40 KB, which ctx-persist offloads, and the time the proxy adds is reported (p50, p99).
// Set PROXY_BENCH_NEIGHBOUR=1GB for the loaded case: another writer fills the same file
// system with a gigabyte of dirty pages, again and again, while the requests run. The
// stages leave the store's syncing to the proxy (sync-deferred, what ctx-proxy does) or
// sync before they return (sync-in-request).
func BenchmarkAddedLatencyWritingStore(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"ok"}]}`)
	}))
	defer up.Close()
	dir := b.TempDir()
	if size := os.Getenv("PROXY_BENCH_NEIGHBOUR"); size != "" {
		n, err := strconv.Atoi(strings.TrimSuffix(size, "GB"))
		if err != nil {
			b.Fatalf("PROXY_BENCH_NEIGHBOUR=%q: want a size like 1GB", size)
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go benchload.Fill(dir, int64(n)<<30, stop, done)
		defer func() { close(stop); <-done }()
		time.Sleep(500 * time.Millisecond)
	}
	for _, mode := range []struct {
		name     string
		deferred bool
	}{{"sync-in-request", false}, {"sync-deferred", true}} {
		b.Run(mode.name, func(b *testing.B) {
			srv, px, _ := proxyFor(b, up.URL, "ctx-persist", filepath.Join(dir, mode.name+"-state"))
			storeDir := filepath.Join(dir, mode.name+"-store")
			srv.Env["CTX_STORE"] = storeDir
			if mode.deferred {
				srv.Store = storeDir
			}
			srv.Stats = nil
			var added []time.Duration
			var mu sync.Mutex
			srv.Log = writerFunc(func(p []byte) (int, error) {
				var rec Record
				if json.Unmarshal(p, &rec) == nil {
					mu.Lock()
					added = append(added, time.Duration(rec.AddedMS*float64(time.Millisecond)))
					mu.Unlock()
				}
				return len(p), nil
			})
			msgs := []string{userText("build it")}
			hdr := map[string]string{"x-api-key": "sk-ant-test", "X-Claude-Code-Session-Id": mode.name}
			turn := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := 0; j < 20; j++ {
					turn++
					for k := 0; k < 7; k++ {
						id := fmt.Sprintf("tu_%d_%d", turn, k)
						msgs = append(msgs, toolUse(id, "make"), toolResult(id, strings.Repeat(fmt.Sprintf("turn %d result %d: build output line\n", turn, k), 1100)))
					}
					post(b, px.URL+"/v1/messages", conversation(msgs...), hdr)
				}
			}
			b.StopTimer()
			srv.Close()
			b.ReportMetric(ms(pct(added, 50)), "p50-added-ms")
			b.ReportMetric(ms(pct(added, 99)), "p99-added-ms")
		})
	}
}

// generated is a generated Anthropic request of about tokens tokens (Claude estimate), cut
// into what precedes its messages, its messages and what follows them, so that a benchmark
// can send its first n messages as a client would.
type generated struct {
	head, tail string
	msgs       []string
}

func generate(b *testing.B, tokens int) generated {
	return generateAnthropic(b, tokens*28/10, 1)
}

// generateAnthropic is testgen's Anthropic request of size bytes (seed), split around its
// messages.
func generateAnthropic(tb testing.TB, size int, seed int64) generated {
	tb.Helper()
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: size, Seed: seed}); err != nil {
		tb.Fatal(err)
	}
	body := buf.String()
	arr := gjson.Get(body, "messages")
	g := generated{head: body[:arr.Index], tail: body[arr.Index+len(arr.Raw):]}
	for _, m := range arr.Array() {
		g.msgs = append(g.msgs, m.Raw)
	}
	return g
}

// body is the request of the first n messages.
func (g generated) body(n int) []byte {
	return g.join(g.msgs[:n], "")
}

// join is the request of the messages msgs, the last replaced by last unless it is "":
// made in one allocation, as a server reads a body, so that the benchmark's own garbage
// does not run the collector in the requests it times.
func (g generated) join(msgs []string, last string) []byte {
	size := len(g.head) + len(g.tail) + 1 + len(msgs)
	for _, m := range msgs {
		size += len(m)
	}
	if last != "" {
		size += len(last) - len(msgs[len(msgs)-1])
	}
	out := make([]byte, 0, size)
	out = append(out, g.head...)
	out = append(out, '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		if i == len(msgs)-1 && last != "" {
			m = last
		}
		out = append(out, m...)
	}
	out = append(out, ']')
	return append(out, g.tail...)
}

// opening is the whole request as the first of conversation i: its first message names i,
// so that no conversation the proxy has seen begins as it does (a request beginning as a
// kept one is read against that one's messages, which a new conversation's is not).
func (g generated) opening(i int) []byte {
	first, err := sjson.Set(g.msgs[0], "content", fmt.Sprintf("Conversation %d. %s", i, gjson.Get(g.msgs[0], "content").String()))
	if err != nil {
		panic(err)
	}
	msgs := append([]string{first}, g.msgs[1:]...)
	return g.join(msgs, "")
}

// marked is the request of the first n messages as Claude Code sends it: the newest message
// carries a cache_control marker, on its last block (a string content sent as one text
// block), which the next request moves to its own newest.
func (g generated) marked(n int) []byte {
	last := g.msgs[n-1]
	content := gjson.Get(last, "content")
	if content.Type == gjson.String {
		last, _ = sjson.SetRaw(last, "content", `[{"type":"text","text":`+content.Raw+`}]`)
		content = gjson.Get(last, "content")
	}
	marker := `{"type":"ephemeral"}`
	last, _ = sjson.SetRaw(last, "content."+strconv.Itoa(int(content.Get("#").Int())-1)+".cache_control", marker)
	return g.join(g.msgs[:n], last)
}

// BenchmarkTurn is the proxy's whole work on one request (rewrite, then the finish step's
// counts, store sync and state write that follow the response), at 200K and 1M tokens: a
// conversation's first request (first: no pipeline; first-tiers: the default one), and a
// request that extends the one before by two messages, as a client sends them (extending:
// no cache_control marker; marked: the newest message marked, as Claude Code does), with
// no pipeline and with the default one (-tiers). ns/op is the time it takes, disk syncs
// included (the finish step's run after the response); cpu-ms/op the process's CPU time
// for it. parse is one transcript.Parse of the whole request.
//
// A first request's ns/op and cpu-ms/op are its request path alone (rewrite: what the
// proxy adds before the response starts); what follows the response (finish) is
// after-ms/op, after-cpu-ms/op its CPU (the wall time is mostly the state file's fsync);
// one parse of the same body, timed in the same loop, is parse-ms/op, so that x-parse,
// the request path in parses of the request, is read from one run.
func BenchmarkTurn(b *testing.B) {
	for _, size := range []struct {
		name   string
		tokens int
	}{{"200K", 200_000}, {"1M", 1_000_000}} {
		g := generate(b, size.tokens)
		grow := min(32, len(g.msgs)/8) // extending requests before the conversation starts again
		base := len(g.msgs) - 2*grow
		b.Logf("%s: %d messages", size.name, len(g.msgs))
		b.Run(size.name+"/parse", func(b *testing.B) {
			body := g.body(len(g.msgs))
			b.ResetTimer()
			cpu := benchload.CPUTime()
			for i := 0; i < b.N; i++ {
				if _, err := transcript.Parse(body, transcript.Options{Format: transcript.Anthropic}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchload.CPUTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
		for _, first := range []struct{ name, pipe string }{{"first", ""}, {"first-tiers", replay.DefaultPipe}} {
			b.Run(size.name+"/"+first.name, func(b *testing.B) {
				s, _, _ := proxyFor(b, "http://127.0.0.1:1", first.pipe, b.TempDir())
				s.Log, s.Stats = nil, nil
				s.Store = s.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
				countAsStages(b, s)          // and counts the log as ctx-proxy does
				b.ReportAllocs()
				var cpu, after, afterCPU, parse time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					body := g.opening(i)
					r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
					r.Header.Set("X-Claude-Code-Session-Id", "first-"+strconv.Itoa(i))
					b.StartTimer()
					start := benchload.CPUTime()
					rec, p := s.rewrite(r, transcript.Anthropic, body)
					cpu += benchload.CPUTime() - start
					b.StopTimer()
					if rec.Fallback != "" || rec.Extended {
						b.Fatalf("fallback %q, extended %v", rec.Fallback, rec.Extended)
					}
					t, c := time.Now(), benchload.CPUTime()
					s.finish(rec, p)
					after += time.Since(t)
					afterCPU += benchload.CPUTime() - c
					t = time.Now()
					if _, err := transcript.Parse(body, transcript.Options{Format: transcript.Anthropic}); err != nil {
						b.Fatal(err)
					}
					parse += time.Since(t)
					b.StartTimer()
				}
				n := float64(b.N)
				b.ReportMetric(float64(cpu)/n/1e6, "cpu-ms/op")
				b.ReportMetric(float64(after)/n/1e6, "after-ms/op")
				b.ReportMetric(float64(afterCPU)/n/1e6, "after-cpu-ms/op")
				b.ReportMetric(float64(parse)/n/1e6, "parse-ms/op")
				b.ReportMetric(float64(b.Elapsed())/float64(parse), "x-parse")
			})
		}
		for _, kind := range []struct {
			name string
			body func(int) []byte
			pipe string
		}{{"extending", g.body, ""}, {"marked", g.marked, ""}, {"extending-tiers", g.body, replay.DefaultPipe}, {"marked-tiers", g.marked, replay.DefaultPipe}} {
			b.Run(size.name+"/"+kind.name, func(b *testing.B) {
				s, _, _ := proxyFor(b, "http://127.0.0.1:1", kind.pipe, b.TempDir())
				s.Log, s.Stats = nil, nil
				s.Store = s.Env["CTX_STORE"] // as ctx-proxy runs: the store synced after the response
				countAsStages(b, s)          // and counts the log as ctx-proxy does
				r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
				r.Header.Set("X-Claude-Code-Session-Id", kind.name)
				b.ReportAllocs()
				b.ResetTimer()
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					k := i % grow
					if k == 0 { // the conversation as it was grow requests ago
						rec, p := s.rewrite(r, transcript.Anthropic, kind.body(base))
						s.finish(rec, p)
					}
					body := kind.body(base + 2*(k+1))
					b.StartTimer()
					start := benchload.CPUTime()
					// Labelled, so that a -cpuprofile tells the timed requests from the
					// untimed first ones (pprof -tagfocus turn=timed).
					pprof.Do(context.Background(), pprof.Labels("turn", "timed"), func(context.Context) {
						rec, p := s.rewrite(r, transcript.Anthropic, body)
						if rec.Fallback != "" || !rec.Extended {
							b.Fatalf("fallback %q, extended %v", rec.Fallback, rec.Extended)
						}
						s.finish(rec, p)
					})
					cpu += benchload.CPUTime() - start
				}
				b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
			})
		}
	}
}
