package tokens

import (
	"strings"
	"testing"
)

// nextASCIIDiffers returns a description of how nextASCII disagrees with the general
// splitter of name at s[0], or "" when it agrees or gives up.
func nextASCIIDiffers(p splitter, v *vocab, s string) (got, want int, bad bool) {
	got = nextASCII(s, 0, v.o200k)
	if got < 0 {
		return got, 0, false
	}
	want = v.next(p, s, 0)
	return got, want, got != want
}

// TestNextASCIIAgrees: on every string of up to three characters over all 128 ASCII bytes
// and characters past ASCII of each class the patterns tell apart (letters of both cases
// and of no case, a mark, digits, spaces), and of four over the bytes whose meaning
// differs most, nextASCII ends the first piece where the general splitter does, or gives
// it up. A piece starts wherever the one before it ends and depends only on the text from
// there, so the first piece of every short string covers every decision nextASCII makes
// in up to three bytes.
func TestNextASCIIAgrees(t *testing.T) {
	var alphabet []string
	for c := range 128 {
		alphabet = append(alphabet, string(rune(c)))
	}
	alphabet = append(alphabet, "é", "É", "中", "\u0301", "٣", "\u00a0", "\u0085", "\u2003", "ǅ", "🙂")
	small := strings.Split("a|z|A|Z|s|S|t|T|l|L|e|r|v|m|d|0|9|'| |\t|\n|\r|/|.|-|\x00|é|\u00a0|٣|\u0301", "|")
	p := newSplitter()
	gaveUp, checked := 0, 0
	check := func(v *vocab, s string) {
		checked++
		got, want, bad := nextASCIIDiffers(p, v, s)
		if got < 0 {
			gaveUp++
		}
		if bad {
			t.Fatalf("%s: %q: nextASCII ends the first piece at %d, the splitter at %d", v.encoding, s, got, want)
		}
	}
	for _, v := range []*vocab{o200k, cl100k} {
		for _, a := range alphabet {
			check(v, a)
			for _, b := range alphabet {
				check(v, a+b)
				for _, c := range alphabet {
					check(v, a+b+c)
				}
			}
		}
		for _, a := range small {
			for _, b := range small {
				for _, c := range small {
					for _, d := range small {
						check(v, a+b+c+d)
					}
				}
			}
		}
	}
	t.Logf("%d strings, %d given up to the general splitter", checked, gaveUp)
}

// FuzzSplitAgrees: any text splits into the same pieces with nextASCII first as with the
// general splitter alone.
func FuzzSplitAgrees(f *testing.F) {
	for _, s := range handTexts() {
		f.Add(s)
	}
	for _, s := range paletteTexts(50, 30, 5) {
		f.Add(s)
	}
	p := newSplitter()
	f.Fuzz(func(t *testing.T, text string) {
		text = strings.ToValidUTF8(text, "\ufffd")
		for _, v := range []*vocab{o200k, cl100k} {
			for i := 0; i < len(text); {
				j, want := v.split(p, text, i), v.next(p, text, i)
				if j != want {
					t.Fatalf("%s: %q at %d: split ends the piece at %d, the splitter at %d", v.encoding, text, i, j, want)
				}
				i = j
			}
		}
	})
}

// TestASCIIRun: the run asciiRun finds eight bytes at a time is the one a byte loop finds,
// for every byte value at every place of a word of eight and beyond.
func TestASCIIRun(t *testing.T) {
	slow := func(s string, i int, first, fold byte) int {
		for i < len(s) && (s[i]|fold)-first < 26 {
			i++
		}
		return i
	}
	for _, run := range []struct{ first, fold byte }{{'A', 0}, {'a', 0}, {'a', 0x20}} {
		for c := range 256 {
			for at := range 20 {
				b := []byte(strings.Repeat(string(rune(run.first+3)), 20))
				b[at] = byte(c)
				s := string(b)
				for i := 0; i <= len(s); i++ {
					if got, want := asciiRun(s, i, run.first, run.fold), slow(s, i, run.first, run.fold); got != want {
						t.Fatalf("asciiRun(%q, %d, %q, %#x) = %d, want %d", s, i, run.first, run.fold, got, want)
					}
				}
			}
		}
	}
}

// TestASCIIWordsAgree: words of every mix of capitals and small letters up to a dozen of
// each, after each kind of prefix and before each character of the alphabet of
// TestNextASCIIAgrees and a tail, end where the general splitter ends them: the first
// eight bytes of a word are tested at once, and past them asciiRun goes on.
func TestASCIIWordsAgree(t *testing.T) {
	var next []string
	for c := range 128 {
		next = append(next, string(rune(c)))
	}
	next = append(next, "é", "É", "中", "\u0301", "٣", "\u00a0", "'s", "'LL", "'re")
	p := newSplitter()
	checked := 0
	for _, v := range []*vocab{o200k, cl100k} {
		for _, prefix := range []string{"", " ", "\t", "(", "'"} {
			for caps := range 13 {
				for small := range 13 {
					word := prefix + strings.Repeat("Q", caps) + strings.Repeat("q", small)
					for _, n := range next {
						for _, tail := range []string{"", " tail of the text"} {
							s := word + n + tail
							checked++
							if got, want, bad := nextASCIIDiffers(p, v, s); bad {
								t.Fatalf("%s: %q: nextASCII ends the first piece at %d, the splitter at %d", v.encoding, s, got, want)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d words checked", checked)
}

// split returns the end of the piece of s that starts at i by v's pattern: what
// countText splits text with (written out there, without a call).
func (v *vocab) split(p splitter, s string, i int) int {
	if j := nextASCII(s, i, v.o200k); j >= 0 {
		return j
	}
	return v.next(p, s, i)
}
