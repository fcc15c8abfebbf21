package transcript

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestApply(t *testing.T) {
	doc := `{"messages":[{"role":"user","content":"aaaa","x":1},{"role":"assistant","content":"bbbb"}]}`
	tr := mustParse(t, doc, Options{})
	a, b := tr.Messages[0].Blocks[0].Body, tr.Messages[1].Blocks[0].Body
	out, err := tr.Apply([]Edit{{Span: b, With: Quote("<B & \"b\">")}, {Span: a, With: Quote("A")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"A","x":1},{"role":"assistant","content":"<B & \"b\">"}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := Parse(out, Options{}); err != nil {
		t.Errorf("output does not parse: %v", err)
	}
	var w bytes.Buffer // the streamed form writes the same bytes
	if err := tr.WriteApplied(&w, []Edit{{Span: b, With: Quote("<B & \"b\">")}, {Span: a, With: Quote("A")}}); err != nil || w.String() != want {
		t.Errorf("WriteApplied: %v\ngot  %s\nwant %s", err, w.String(), want)
	}
	if _, err := tr.Apply([]Edit{{Span: Span{2, 10}}, {Span: Span{5, 12}}}); err == nil {
		t.Error("overlapping edits accepted")
	}
	if err := tr.WriteApplied(io.Discard, []Edit{{Span: Span{2, 10}}, {Span: Span{5, 12}}}); err == nil {
		t.Error("WriteApplied: overlapping edits accepted")
	}
	if _, err := tr.Apply([]Edit{{Span: Span{2, len(doc) + 1}}}); err == nil {
		t.Error("edit past the end accepted")
	}
	same, _ := tr.Apply(nil)
	if string(same) != doc {
		t.Error("no edits must give the input back")
	}
}

// Quote must spell strings exactly as encoding/json does without HTML escaping (what
// Go 1.22+ writes), and decode back to the same text.
func TestQuoteMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "plain", "a\"b\\c", "\n\r\t\b\f\x00\x1f\x7f", "<tag> & </tag>", "日本語 🎉", "\u2028\u2029", "bad\xffutf8\xc3"}
	for _, seed := range texts[1:] {
		for off := range 17 { // in, across and after the words Quote crosses whole
			texts = append(texts, strings.Repeat("abcdefgh", 3)[:off]+seed+"ijklmnopqrstuvwx")
		}
	}
	for _, s := range texts {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := Quote(s); got != want {
			t.Errorf("Quote(%q) = %s, encoding/json gives %s", s, got, want)
		}
	}
}

// quotedSeeds are texts whose spelling takes each of Quote's branches.
var quotedSeeds = []string{"", "plain", "a\"b\\c", "\n\r\t\b\f\x00\x1f\x7f", "<tag> & </tag>", "日本語 🎉", "\u2028\u2029", "bad\xffutf8\xc3", "x\u2028y\\u2028", `\ufffd`}

// TestQuoted: Quoted(s, lit) is exactly Quote(s) == lit, for Quote's own spelling and for
// spellings a byte away from it (other escapes of the same text, cut or longer ones).
func TestQuoted(t *testing.T) {
	for _, s := range quotedSeeds {
		checkQuoted(t, s)
	}
	// Each seed at each offset in a long plain text, so that it falls in, across and
	// after the eight-byte words Quoted crosses whole.
	for _, seed := range quotedSeeds {
		for off := range 17 {
			checkQuoted(t, strings.Repeat("abcdefgh", 3)[:off]+seed+"ijklmnopqrstuvwx")
		}
	}
}

func FuzzQuoted(f *testing.F) {
	for _, s := range quotedSeeds {
		f.Add(s)
	}
	f.Fuzz(checkQuoted)
}

func checkQuoted(t *testing.T, s string) {
	want := Quote(s)
	lits := []string{want, want[:len(want)-1], want + `"`, `"` + s + `"`, strings.ToUpper(want), "", `"`}
	for i := 1; i < len(want)-1; i++ {
		lits = append(lits, want[:i]+want[i+1:], want[:i]+"x"+want[i+1:])
	}
	for _, lit := range lits {
		if got := Quoted(s, lit); got != (lit == want) {
			t.Fatalf("Quoted(%q, %q) = %v, Quote gives %s", s, lit, got, want)
		}
		checkQuotedLit(t, lit)
	}
}

// quotedLitSeeds are literals whose escapes take each of quoteSpelled's branches: Quote's own
// and every other escape of the same characters, surrogates, bytes above ASCII.
var quotedLitSeeds = []string{`""`, `"plain text, long enough for a word or two"`, `"a\"b\\c\n\r\t\b\f"`,
	`"\u0000\u001f\u001F\u000a\u0008\u0022\u005c\u002f\/"`, `"\u2028\u2029\u202a\u2028x"`, "\"raw \u2028 and \u2029\"",
	`"\ufffd \ud800 \udc00 \ud83d\ude00 \u00e9 \u00zz"`, "\"bad\xffutf8\xc3\"", "\"caf\u00e9 日本語 🎉 \xe2\x80\"",
	`"\x"`, `"ab\"`, `"\u12"`, "\"a\nb\"", "\"tab\there\"", `"12345678\n12345678\\"`, `"a"b"`, `"`, `x`,
	`"0123456789abcdef\n01234567\u00e9 caf` + "é" + ` 0123456789\u2028 0123456789abcdef` + "\u2029" + ` 0123456789abcdef\t"`,
	"\"0123456789abcdef\x01 0123456789abcdef\"0123456789abcdef \xff 0123456789abcdef\""}

// TestQuotedLit: DecodeQuotedInto says lit is Quote's spelling exactly when Quoted of the
// text lit stands for does, on literals spelled every way.
func TestQuotedLit(t *testing.T) {
	for _, lit := range quotedLitSeeds {
		checkQuotedLit(t, lit)
	}
	for _, s := range quotedSeeds {
		if _, _, quoted := DecodeQuotedInto(nil, Quote(s)); utf8.ValidString(s) && !quoted { // (invalid UTF-8 is spelled \ufffd, which reads back as U+FFFD)
			t.Errorf("DecodeQuotedInto(Quote(%q)) says it is not Quote's", s)
		}
	}
}

func FuzzQuotedLit(f *testing.F) {
	for _, lit := range quotedLitSeeds {
		f.Add(lit)
	}
	f.Fuzz(checkQuotedLit)
}

// checkQuotedLit holds DecodeQuotedInto to the text lit stands for, as BodyTextInto
// decodes it (into scratch that held another text before, or none), and to Quoted of
// that text.
func checkQuotedLit(t *testing.T, lit string) {
	want := Quoted(decodeString(lit), lit)
	body := &Block{Body: Span{End: len(lit)}}
	for _, scratch := range [][]byte{nil, []byte("an earlier text, longer than most")} {
		wantText, _ := (&Transcript{Doc: lit}).BodyTextInto(append([]byte(nil), scratch...), body)
		text, _, quoted := DecodeQuotedInto(scratch, lit)
		if text != wantText || quoted != want {
			t.Fatalf("DecodeQuotedInto(%q) = %q, %v; want %q, %v", lit, text, quoted, wantText, want)
		}
	}
}
