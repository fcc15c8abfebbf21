package transcript

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
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
	}
}
