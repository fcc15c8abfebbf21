package measure

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/human"
)

// previewLineSlow is what previewLine stands for.
func previewLineSlow(s string) string {
	return human.Clip(human.OneLine(human.Clip(s, 4*previewMax)), previewMax)
}

// TestPreviewLine: previewLine is the composition of human's Clip and OneLine it replaces,
// on words and white space of every kind around both cuts (320 bytes in, 80 out), text
// of other scripts cut inside a character, and invalid UTF-8.
func TestPreviewLine(t *testing.T) {
	units := []string{"a", "word", "longerword", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "é", "中文", "🙂", "…", "\xff", "\xe4\xb8", "x"}
	r := rand.New(rand.NewPCG(7, 8))
	texts := []string{"", " ", strings.Repeat(" ", 400), strings.Repeat("x", 81), strings.Repeat("x", 80), strings.Repeat("é", 200), strings.Repeat("ab ", 200)}
	for range 20000 {
		var b strings.Builder
		for b.Len() < r.IntN(500) {
			b.WriteString(units[r.IntN(len(units))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		if got, want := previewLine(s), previewLineSlow(s); got != want {
			t.Fatalf("previewLine(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzPreviewLine(f *testing.F) {
	f.Add("hello  world\n" + strings.Repeat("é ", 200))
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := previewLine(s), previewLineSlow(s); got != want {
			t.Fatalf("previewLine(%q) = %q, want %q", s, got, want)
		}
	})
}

func BenchmarkPreviewLine(b *testing.B) {
	s := strings.Repeat("The quick brown fox\n  jumps over the lazy dog. ", 12)
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			previewLine(s)
		}
	})
	b.Run("human", func(b *testing.B) {
		for b.Loop() {
			previewLineSlow(s)
		}
	})
}
