package index

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchload"
	"github.com/ctxkit/ctxkit/internal/testgen"
)

// refTerms is Terms as it was before its fast paths (a word of one kind of byte, a word
// too long to be cut): the specification the index's bytes must keep.
func refTerms(text []byte, emit func(h uint64)) {
	var parts [maxParts]uint64
	n := len(text)
	for i := 0; i < n; {
		for i < n && class[text[i]] == cSep {
			i++
		}
		if i >= n {
			return
		}
		start := i
		h := uint64(fnvOffset)
		ph := uint64(fnvOffset)
		plen, np, prev := 0, 0, uint8(cSep)
		endPart := func() {
			if plen >= 2 && np < maxParts {
				parts[np] = ph
				np++
			}
			ph, plen = fnvOffset, 0
		}
		nparts := 0 // parts seen, short ones too
		for i < n {
			c := text[i]
			k := class[c]
			if k == cSep {
				break
			}
			lc := c
			if k == cUpper {
				lc = c + 'a' - 'A'
			}
			h = (h ^ uint64(lc)) * fnvPrime
			if k == cUnder {
				if plen > 0 {
					endPart()
					nparts++
				}
				prev = k
				i++
				continue
			}
			// a part ends at lower→Upper, before the capital that starts a word after an
			// acronym (HTTPServer: HTTP, Server), and between letters and digits
			if plen > 0 && (k == cUpper && prev == cLower ||
				k == cDigit && prev != cDigit || k != cDigit && prev == cDigit ||
				k == cUpper && prev == cUpper && i+1 < n && class[text[i+1]] == cLower) {
				endPart()
				nparts++
			}
			ph = (ph ^ uint64(lc)) * fnvPrime
			plen++
			prev = k
			i++
		}
		if plen > 0 {
			endPart()
			nparts++
		}
		if i-start >= 2 {
			emit(h | zero(h))
		}
		if nparts > 1 && i-start <= maxWord {
			for j := 0; j < np; j++ {
				emit(parts[j] | zero(parts[j]))
			}
		}
	}
}

func checkTerms(t *testing.T, name string, text []byte) {
	t.Helper()
	var want []uint64
	refTerms(text, func(h uint64) { want = append(want, h) })
	got := appendTerms(nil, text)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d terms, want %d; first difference at term %d", name, len(got), len(want), i)
	}
	var viaEmit []uint64
	Terms(text, func(h uint64) { viaEmit = append(viaEmit, h) })
	if !slices.Equal(viaEmit, want) {
		t.Fatalf("%s: Terms and appendTerms differ", name)
	}
}

// The index's terms are those of the reference scanner on every kind of text: generated
// sessions of every format (code, logs, JSON, base64 images), the real corpus when it is
// there, and random bytes drawn from the classes' edges. The segments, and so what
// ctx-recall finds and how it ranks it, are a function of the terms.
func TestTermsAreTheReference(t *testing.T) {
	for _, f := range []string{"claude-code", "codex", "anthropic", "openai", "responses"} {
		var b bytes.Buffer
		if err := testgen.Generate(&b, testgen.Options{Format: f, Size: 1 << 20, Seed: 7, Images: true}); err != nil {
			t.Fatal(err)
		}
		checkTerms(t, f, b.Bytes())
	}
	if files, _ := filepath.Glob("/work/shared/corpus/*/*"); len(files) > 0 {
		for _, p := range files[:min(len(files), 40)] {
			if b, err := os.ReadFile(p); err == nil {
				checkTerms(t, p, b)
			}
		}
	}
	alphabet := []byte("aZzA09_ -./\\xé\x80\xffHTTPServer")
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		text := make([]byte, rng.IntN(90))
		for i := range text {
			text[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkTerms(t, string(text), text)
	}
	long := bytes.Repeat([]byte("aB3_"), 40)
	for n := 60; n < len(long); n++ {
		checkTerms(t, string(long[:n]), long[:n])
		checkTerms(t, "x "+string(long[:n])+" y", []byte("x "+string(long[:n])+" y"))
	}
}

func FuzzTerms(f *testing.F) {
	f.Add([]byte("parseConfig HTTPServer sha256sum été_naïve"))
	f.Fuzz(func(t *testing.T, text []byte) { checkTerms(t, "fuzz", text) })
}

// BenchmarkTerms cuts a generated session of each format into terms. cpu-ns/op is the
// process's CPU time an op (benchload), which a loaded machine changes less than the wall
// time.
func BenchmarkTerms(b *testing.B) {
	for _, f := range []string{"claude-code", "openai"} {
		b.Run(f, func(b *testing.B) {
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, testgen.Options{Format: f, Size: 4 << 20, Seed: 7}); err != nil {
				b.Fatal(err)
			}
			text := buf.Bytes()
			b.SetBytes(int64(len(text)))
			var dst []uint64
			cpu, n := benchload.CPUTime(), 0
			for b.Loop() {
				dst = appendTerms(dst[:0], text)
				n++
			}
			b.ReportMetric(float64(benchload.CPUTime()-cpu)/float64(n), "cpu-ns/op")
		})
	}
}
