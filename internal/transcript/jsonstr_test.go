package transcript

import (
	"encoding/json"
	"github.com/ctxkit/ctxkit/internal/human"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// jsonStringSeeds are literals with every kind of escape, surrogate pairs, lone and
// reversed surrogates, invalid UTF-8 and multi-byte text next to escapes.
var jsonStringSeeds = []string{
	`""`, `"plain"`, `"a\nb\tc\\d\"e\/f\bg\fh\ri"`, `"\u00e9t\u00E9"`, `"\ud83d\ude00 smile"`,
	`"\ud83d"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"caf\u00e9 \u2028 \u0000"`,
	"\"\xff\xfe\\n\xe2\x82\"", "\"\xe2\x82\\u00ac\xac\"", `"日本語\n\u65e5本"`, `"\\\\\\"`,
}

// FuzzDecodeString checks the decoder and stringSize against gjson on every valid JSON
// string literal: the texts every reader, tier and stored file were made from before.
func FuzzDecodeString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Add(`"` + string(mustJSON(f, "<tag> & \x01 \u2029")) + `"`)
	f.Fuzz(func(t *testing.T, raw string) {
		v := gjson.Parse(raw)
		if !gjson.Valid(raw) || v.Type != gjson.String || v.Raw != raw {
			return // a span always holds exactly one literal
		}
		want := v.String()
		if got := decodeString(raw); got != want {
			t.Fatalf("decodeString(%q) = %q, gjson %q", raw, got, want)
		}
		if n := stringLen(raw); n != len(want) {
			t.Fatalf("stringLen(%q) = %d, want %d", raw, n, len(want))
		}
		// A prefix clips as the whole text does.
		for _, n := range []int{0, 1, 3, 10} {
			if got, whole := human.Clip(doc0(raw).BodyTextPrefix(&Block{Body: Span{0, len(raw)}}, n), n), human.Clip(want, n); got != whole {
				t.Fatalf("Clip(BodyTextPrefix(%q, %d)) = %q, want %q", raw, n, got, whole)
			}
		}
		// BodyTextInto decodes the same, into scratch that held another text before.
		doc := &Transcript{Doc: raw}
		scratch := []byte("a longer text decoded before this one, whose bytes must not show")
		if got, _ := doc.BodyTextInto(scratch, &Block{Body: Span{0, len(raw)}}); got != want {
			t.Fatalf("BodyTextInto(%q) = %q, want %q", raw, got, want)
		}
		size, runes := stringSize(raw)
		if size != len(want) || runes != utf8.RuneCountInString(want) {
			t.Fatalf("stringSize(%q) = %d bytes %d runes, want %d, %d", raw, size, runes, len(want), utf8.RuneCountInString(want))
		}
	})
}

func TestDecodeStringSeeds(t *testing.T) {
	for _, raw := range jsonStringSeeds {
		if !gjson.Valid(raw) {
			t.Fatalf("seed %q is not valid JSON", raw)
		}
		want := gjson.Parse(raw).String()
		if got := decodeString(raw); got != want {
			t.Errorf("decodeString(%q) = %q, want %q", raw, got, want)
		}
		if n := stringLen(raw); n != len(want) {
			t.Errorf("stringLen(%q) = %d, want %d", raw, n, len(want))
		}
		doc := &Transcript{Doc: raw}
		if got, _ := doc.BodyTextInto(make([]byte, 3, 100), &Block{Body: Span{0, len(raw)}}); got != want {
			t.Errorf("BodyTextInto(%q) = %q, want %q", raw, got, want)
		}
		if size, runes := stringSize(raw); size != len(want) || runes != utf8.RuneCountInString(want) {
			t.Errorf("stringSize(%q) = %d, %d; want %d, %d", raw, size, runes, len(want), utf8.RuneCountInString(want))
		}
	}
}

func mustJSON(f *testing.F, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		f.Fatal(err)
	}
	return b[1 : len(b)-1]
}

// canonicalSeeds add to jsonStringSeeds the spellings Canonical must tell apart.
var canonicalSeeds = []string{
	`"\u001f"`, `"\u001F"`, `"\u000a"`, `"\u0008"`, `"\u0000"`, `"\u007f"`, `"\u0020"`,
	`"\u2028"`, `"\u2029"`, "\"\u2028\"", `"\ufffd"`, "\"\ufffd\"", `"a\/b"`, `"\"`, `"`, ``,
	`x`, `"ab`, `"a"b"`, "\"\x01\"", `"\x"`, `"\u12"`, `"\uzzzz"`, `"\u00e9"`, "\"\xed\xa0\x80\"",
}

// FuzzCanonical holds Canonical to its definition, Quote(decodeString(lit)) == lit, on
// any string at all, literal or not.
func FuzzCanonical(f *testing.F) {
	for _, s := range append(append([]string{}, jsonStringSeeds...), canonicalSeeds...) {
		f.Add(s)
		f.Add(Quote(decodeString(s)))
	}
	f.Fuzz(func(t *testing.T, lit string) {
		want := Quote(decodeString(lit)) == lit
		if got := Canonical(lit); got != want {
			t.Fatalf("Canonical(%q) = %v, want %v (Quote(decode) = %q)", lit, got, want, Quote(decodeString(lit)))
		}
	})
}

func doc0(raw string) *Transcript { return &Transcript{Doc: raw} }
