package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchload"
)

// BenchmarkCommitWhileWriting is issue 35's figure for the store on the request path: a
// batch of 7 results (what ctx-persist wrote in one proxied request) committed while
// another process's writes fill the same file system with dirty pages. Run with
// STORE_BENCH_NEIGHBOUR=1GB for the loaded case (a file of that size is written beside the
// store, again and again, until the benchmark ends), without it for the quiet one; compare
// the p50 and p99 it reports. Under syncfs the loaded commits waited for the neighbour's
// pages; with an fsync per file they wait for their own.
func BenchmarkCommitWhileWriting(b *testing.B) {
	dir := b.TempDir()
	if d := os.Getenv("STORE_BENCH_DIR"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "storebench-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	s, err := Create(filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	if size := os.Getenv("STORE_BENCH_NEIGHBOUR"); size != "" {
		n, err := strconv.Atoi(size[:len(size)-2])
		if err != nil || size[len(size)-2:] != "GB" {
			b.Fatalf("STORE_BENCH_NEIGHBOUR=%q: want a size like 1GB", size)
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go benchload.Fill(dir, int64(n)<<30, stop, done)
		defer func() { close(stop); <-done }()
		time.Sleep(500 * time.Millisecond) // let the dirty pages pile up
	}
	blob := make([]byte, 40<<10)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		batch := s.Batch()
		for k := range 7 {
			copy(blob, fmt.Sprintf("request %d result %d ", i, k))
			if _, err := batch.Add(blob); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkOpenHas is what a run pays to know the store's packs: open the store and ask Has
// once (the packs' indexes read), on a store holding one pack of 1,000 texts (ctx-snip's
// first clear of a 10 MB session). A run asks Has of every text it would keep; the first
// call reads the indexes, the others look them up in memory.
func BenchmarkOpenHas(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "store")
	s, err := Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	batch := s.Batch()
	var last []byte
	for i := range 1000 {
		last = fmt.Appendf(nil, "cleared result %d\n", i)
		if _, err := batch.Add(last); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := batch.Commit(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	h := Hash(last)
	b.ResetTimer()
	for range b.N {
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if !s.Has(h, len(last)) {
			b.Fatal("not stored")
		}
		s.Close()
	}
}
