package recall

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/recall/index"
	"github.com/ctxkit/ctxkit/internal/store"
)

// BenchmarkRecall is issue 40's measure: a store of CTX_RECALL_BENCH_MB megabytes of
// tool results in CTX_RECALL_BENCH_ITEMS items (default 20 MB in 2,000; the figure
// is 1024 and 100000), made in the benchmark's temp dir, then its index built from scratch
// (build_MB/s: the stored bytes over the time, as ctx-recall builds a missing index), then
// 200 searches of 3 words of a line of a random item, each a whole ctx-recall run (opening
// the index, ranking, reading the best items, excerpts, output within --max-tokens):
// p50_ms and p95_ms (and p50_cpu_ms, the CPU time of the median search; build_MB/cpu-s,
// the build's bytes per second of CPU: what they cost on a machine shared with other
// work, where the wall clock measures the others too). peak_heap_MB is the most heap in use, sampled every 10 ms, during the
// build and during the searches (search_heap_MB).
//
//	CTX_RECALL_BENCH_MB=1024 CTX_RECALL_BENCH_ITEMS=100000 go test -run - -bench Recall -benchtime 1x ./internal/recall/
func BenchmarkRecall(b *testing.B) {
	mb, items := envInt("CTX_RECALL_BENCH_MB", 20), envInt("CTX_RECALL_BENCH_ITEMS", 2000)
	dir := filepath.Join(b.TempDir(), "store")
	st, err := store.Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	st.DeferSync() // (a benchmark's store need not survive a crash of the machine)
	queries := fillStore(b, st, mb<<20, items)
	for i := 0; i < b.N; i++ {
		os.RemoveAll(filepath.Join(dir, index.Dir))
		peak := sampleHeap()
		start, cpu := time.Now(), benchload.CPUTime()
		if err := index.Update(st); err != nil {
			b.Fatal(err)
		}
		build, buildCPU := time.Since(start), benchload.CPUTime()-cpu
		b.ReportMetric(float64(mb)/build.Seconds(), "build_MB/s")
		if buildCPU > 0 {
			// per second of one core: what the build costs, whatever else the machine runs
			b.ReportMetric(float64(mb)/buildCPU.Seconds(), "build_MB/cpu-s")
		}
		b.ReportMetric(float64(peak()>>20), "peak_heap_MB")
		runtime.GC()
		peak = sampleHeap()
		var took, cpus []time.Duration
		for _, q := range queries {
			start, cpu := time.Now(), benchload.CPUTime()
			code, _, errs := recallB(b, "--store", dir, "--json", q)
			if code > 1 {
				b.Fatalf("%q: exit %d: %s", q, code, errs)
			}
			took, cpus = append(took, time.Since(start)), append(cpus, benchload.CPUTime()-cpu)
		}
		slices.Sort(cpus)
		if cpus[len(cpus)-1] > 0 {
			b.ReportMetric(float64(cpus[len(cpus)/2].Microseconds())/1000, "p50_cpu_ms")
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95_ms")
		b.ReportMetric(float64(peak()>>20), "search_heap_MB")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func recallB(b *testing.B, args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := Main(args, strings.NewReader(""), &out, &errb, func(k string) string {
		if k == "CTX_CACHE_DIR" {
			return "off"
		}
		return ""
	})
	return code, out.String(), errb.String()
}

// sampleHeap samples the heap in use every 10 ms until the function it returns is called,
// which returns the most it saw.
func sampleHeap() func() uint64 {
	var most atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > most.Load() {
				most.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(stop); wg.Wait(); return most.Load() }
}

// fillStore stores size bytes of generated tool results in n items, as the tiers store
// them (a batch of files, then their index lines), and returns 200 queries: 3 words of a
// line of a random item. The words follow a Zipf law over a vocabulary of 50,000, with
// identifiers, paths and a few ids of each item's own, as tool output has.
func fillStore(b *testing.B, st *store.Store, size, n int) []string {
	rng := rand.New(rand.NewSource(1))
	vocab := make([]string, 50000)
	for i := range vocab {
		w := make([]byte, 3+rng.Intn(8))
		for j := range w {
			w[j] = byte('a' + rng.Intn(26))
		}
		switch i % 10 {
		case 0:
			vocab[i] = string(w[:len(w)/2]) + strings.ToUpper(string(w[len(w)/2:len(w)/2+1])) + string(w[len(w)/2+1:]) // camelCase
		case 1:
			vocab[i] = string(w[:len(w)/2]) + "_" + string(w[len(w)/2:])
		case 2:
			vocab[i] = "src/" + string(w) + ".go"
		default:
			vocab[i] = string(w)
		}
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	per := size / n
	var queries []string
	batch := st.Batch()
	var entries []store.Entry
	var line []string
	for i := 0; i < n; i++ {
		var sb strings.Builder
		lines := 0
		for sb.Len() < per {
			line = line[:0]
			for k := 4 + rng.Intn(12); k > 0; k-- {
				line = append(line, vocab[zipf.Uint64()])
			}
			if rng.Intn(20) == 0 {
				line = append(line, fmt.Sprintf("id_%x", rng.Uint64()))
			}
			if len(queries) < 200 && rng.Intn(n*per/80/200+1) == 0 {
				queries = append(queries, strings.Join(line[:3], " "))
			}
			sb.WriteString(strings.Join(line, " "))
			sb.WriteByte('\n')
			lines++
		}
		text := sb.String()
		h, err := batch.Add([]byte(text))
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, store.Entry{Hash: h, Tool: "Bash", ToolCallID: fmt.Sprintf("toolu_%06d", i), Source: "/bench/session.jsonl",
			Bytes: len(text), Lines: lines, Tokens: len(text) / 4, Time: time.Unix(1_700_000_000+int64(i), 0)})
		if len(entries) == 5000 || i == n-1 {
			if _, err := batch.Commit(); err != nil {
				b.Fatal(err)
			}
			if err := st.Append(entries...); err != nil {
				b.Fatal(err)
			}
			batch, entries = st.Batch(), entries[:0]
		}
	}
	for len(queries) < 200 {
		queries = append(queries, vocab[rng.Intn(len(vocab))]+" "+vocab[rng.Intn(len(vocab))])
	}
	return queries
}
