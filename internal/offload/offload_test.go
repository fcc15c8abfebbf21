package offload

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

func TestEncodeIsQuote(t *testing.T) {
	cases := []string{"", "a", "\"\\/", "\b\f\n\r\t\x00\x01\x1f\x7f", "<>&", "\u2028\u2029", "é😀", "\ufffd", strings.Repeat("ab\n", 100)}
	r := rand.New(rand.NewSource(1))
	alphabet := []rune{'a', '"', '\\', '\n', 0, 0x1f, 0x7f, '<', 'é', 0x2028, 0x2029, 0x1F600, '/', '\t', 0xfffd}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for j := r.Intn(20); j > 0; j-- {
			b.WriteRune(alphabet[r.Intn(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		got, ok := Encode(s)
		if !ok || got != transcript.Quote(s) {
			t.Fatalf("Encode(%q) = %q, %v; Quote gives %q", s, got, ok, transcript.Quote(s))
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != s {
			t.Fatalf("Encode(%q) does not decode back: %q %v", s, back, err)
		}
	}
	for _, s := range []string{"\xff", "a\xc3", "\xed\xa0\x80"} {
		if _, ok := Encode(s); ok {
			t.Errorf("Encode(%q) accepted invalid UTF-8", s)
		}
	}
}
