package tokens

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Benchmarks of issue 7, to run on one core:
//
//	go test -run '^$' -bench 'Mixed|Pathological' -cpu 1 ./internal/tokens
//
// BenchmarkMixed counts every distinct string of four generated sessions (prose, code,
// JSON, logs, shell output, diffs, CJK), 13 MB, with a fresh counter per iteration so
// neither cache starts warm; cpu-MB/s is the same by CPU time, steadier on a busy
// machine. The tiktoken-go rows take five seconds an iteration; -benchtime=3x keeps the
// run short. BenchmarkPathological counts one text with no break the pre-tokenizers
// recognise (or, for base64 and digits, nothing but short pieces), at sizes from 10 KB
// to 5 MB, to show linear growth; its cpu-MB/s is measured over the counting alone (not
// the fresh piece cache each iteration makes), and -benchtime 1s gives the small sizes
// enough iterations for it to be steady:
//
//	go test -run '^$' -bench Pathological -benchtime 1s -cpu 1 ./internal/tokens

var mixedCorpus = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	var texts []string
	for i, format := range []string{"claude-code", "openai", "responses", "anthropic"} {
		var doc bytes.Buffer
		if err := testgen.Generate(&doc, testgen.Options{Format: format, Size: 4 << 20, Seed: int64(100 + i)}); err != nil {
			panic(err)
		}
		texts = append(texts, jsonStrings(doc.Bytes(), seen)...)
	}
	return texts
})

// benchCount counts texts (size bytes in all) with a fresh counter named name each
// iteration, reporting throughput by CPU time too.
func benchCount(b *testing.B, name string, texts []string, size int64) {
	vocabFor(name).table()
	b.SetBytes(size)
	start := benchload.CPUTime()
	for b.Loop() {
		c, _ := New(name)
		for _, s := range texts {
			c.Count(s)
		}
	}
	reportCPU(b, start, size)
}

// reportCPU adds the throughput by CPU time since start: with -cpu 1 that is the
// throughput of one core, however busy the machine.
func reportCPU(b *testing.B, start time.Duration, bytes int64) {
	if d := benchload.CPUTime() - start; d > 0 && start > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/1e6/d.Seconds(), "cpu-MB/s")
	}
}

func BenchmarkMixed(b *testing.B) {
	texts := mixedCorpus()
	var size int64
	for _, s := range texts {
		size += int64(len(s))
	}
	for _, name := range []string{"o200k", "cl100k"} {
		b.Run(name, func(b *testing.B) { benchCount(b, name, texts, size) })
		b.Run("tiktoken-go-"+name, func(b *testing.B) {
			ref := reference(b, name)
			b.SetBytes(size)
			start := benchload.CPUTime()
			for b.Loop() {
				for _, s := range texts {
					_ = len(ref.EncodeOrdinary(s))
				}
			}
			reportCPU(b, start, size)
		})
	}
	b.Run("estimate", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			c, _ := New("estimate")
			for _, s := range texts {
				c.Count(s)
			}
		}
	})
}

// commonHan is text of frequent Chinese characters for the no-space CJK input.
const commonHan = "的一是不了人我在有他这为之大来以个中上们到说时地也子就道要出会可你对生能而那得于着下自之年过发后作里用如家手学多天所然心无行方成者都二又三小事经去高同部于把理头长当本起意现老已回与因没分最问然前外日山定些只很"

// pathological returns n bytes of one of the inputs that defeat splitting: CJK with no
// spaces or punctuation (one piece), base64, digits, a run of spaces (one piece),
// lowercase letters and punctuation (one piece each).
func pathological(kind string, n int) string {
	r := rand.New(rand.NewPCG(uint64(n), 9))
	var b strings.Builder
	b.Grow(n + 4)
	switch kind {
	case "cjk":
		han := []rune(commonHan)
		for b.Len() < n {
			b.WriteRune(han[r.IntN(len(han))])
		}
	case "base64":
		return base64Text(n, uint64(n))
	case "digits":
		for b.Len() < n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	case "spaces":
		return strings.Repeat(" ", n)
	case "letters":
		for b.Len() < n {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
	case "punct":
		// Punctuation with no space, one piece as well: what a minified bundle's
		// closing brackets and operators look like at their worst.
		const marks = "!#$%&()*+,-./:;<=>?@[]^_`{|}~"
		for b.Len() < n {
			b.WriteByte(marks[r.IntN(len(marks))])
		}
	}
	return b.String()
}

func BenchmarkPathological(b *testing.B) {
	for _, name := range []string{"o200k", "cl100k"} {
		for _, kind := range []string{"cjk", "base64", "digits", "spaces", "letters", "punct"} {
			for _, size := range []int{10 << 10, 100 << 10, 1 << 20, 5 << 20} {
				text := pathological(kind, size)
				b.Run(fmt.Sprintf("%s/%s/%dKB", name, kind, size>>10), func(b *testing.B) {
					v := vocabFor(name)
					v.table()
					b.SetBytes(int64(len(text)))
					var cpu time.Duration // of the counting alone
					cache, memo := newPieceCache(), new(pieceMemo)
					for b.Loop() {
						b.StopTimer()
						// A counter's, made once per run: empty, as a new one would be
						// (without the 2 MB of garbage a new one each time would make,
						// whose collection a small text would pay for).
						cache.clear()
						memo.reset(v.table())
						start := benchload.CPUTime()
						b.StartTimer()
						countText(v, text, cache, memo)
						b.StopTimer()
						cpu += benchload.CPUTime() - start
						b.StartTimer()
					}
					if cpu > 0 {
						b.ReportMetric(float64(len(text))*float64(b.N)/1e6/cpu.Seconds(), "cpu-MB/s")
					}
				})
			}
		}
	}
}

func (c *pieceCache) clear() {
	for i := range c.shards {
		clear(c.shards[i].e[:])
	}
}

// BenchmarkLoad is the cost of making a vocabulary ready at start (the embedded table,
// used in place) against building the same table from the .tiktoken text.
func BenchmarkLoad(b *testing.B) {
	for _, v := range []*vocab{o200k, cl100k} {
		b.Run(v.encoding+"/embedded", func(b *testing.B) {
			for b.Loop() {
				if _, err := loadTable(v.data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(v.encoding+"/parse", func(b *testing.B) {
			src, err := assets.Assets.ReadFile(v.encoding + ".tiktoken")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := parseTiktoken(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkClassTable(b *testing.B) {
	for b.Loop() {
		_ = buildClassTable()
	}
}
