package tokens

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMemoKey: a piece has one key wherever it lies in its text (read 16 bytes at a time
// in the middle, byte by byte near the end), and two pieces have the same key only when
// they are the same bytes: the length tells apart pieces that differ in trailing zero
// bytes.
func TestMemoKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[[2]uint64]string{}
	for range 20000 {
		n := 3 + r.IntN(memoMaxBytes-2)
		b := make([]byte, n)
		for i := range b {
			b[i] = "\x00a\xffZ "[r.IntN(5)] // few distinct bytes: many near misses
		}
		piece := string(b)
		text := "xy" + piece + strings.Repeat("\xee", 20)
		a1, b1 := memoKey(text, 2, 2+n)
		a2, b2 := memoKey(text[:2+n], 2, 2+n)
		if a1 != a2 || b1 != b2 {
			t.Fatalf("%q: key %x %x in the middle of a text, %x %x at its end", piece, a1, b1, a2, b2)
		}
		if b1&memoCountBits != 0 {
			t.Fatalf("%q: key %x %x has bits in the count's place", piece, a1, b1)
		}
		k := [2]uint64{a1, b1}
		if other, ok := seen[k]; ok && other != piece {
			t.Fatalf("%q and %q have the same key", piece, other)
		}
		seen[k] = piece
	}
}

// TestMemoLong: pieces of 16 to longMemoMaxBytes bytes, tokens and not, counted through
// the memo's second table (in the middle of a text and at its end, where the key is
// read byte by byte) count what they count without it, found or not.
func TestMemoLong(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"concurrent", "Config", "remote", "Worker", "x", "qz", "_", "é", "0"}
	m := new(pieceMemo)
	for _, v := range []*vocab{o200k, cl100k} {
		tab := v.table()
		m.reset(tab)
		var pieces []string
		for len(pieces) < 3000 {
			var b strings.Builder
			for b.Len() < 16 {
				b.WriteString(words[r.IntN(len(words))])
			}
			if p := b.String(); len(p) <= longMemoMaxBytes {
				pieces = append(pieces, p, p) // the second time from the memo
			}
		}
		for _, p := range pieces {
			want := tab.countPiece(p, nil, &cacheGate{})
			for _, text := range []string{p + strings.Repeat(" ", 40), p} {
				if got := m.countLong(tab, text, 0, len(p), nil, &cacheGate{}); got != want {
					t.Fatalf("%s: %q: %d tokens through the memo, %d without", v.encoding, p, got, want)
				}
			}
		}
	}
}

// TestMemoAcrossTables: a memo counts for the table it was last used with; a counter of
// the other vocabulary using it gets its own counts, not the memo's.
func TestMemoAcrossTables(t *testing.T) {
	texts := append(handTexts(), mixedTexts(30)...)
	m := new(pieceMemo)
	for round := range 3 {
		for _, name := range []string{"o200k", "cl100k"} {
			v := vocabFor(name)
			for _, text := range texts {
				if got, want := countText(v, text, nil, m), countText(v, text, nil, nil); got != want {
					t.Fatalf("round %d, %s: %q: %d through a shared memo, %d without", round, name, clip(text), got, want)
				}
			}
		}
	}
}

// TestMemoPool: a counter's memos go to one goroutine at a time; with every slot taken a
// goroutine counts without one.
func TestMemoPool(t *testing.T) {
	var p memoPool
	taken := map[*pieceMemo]bool{}
	var slots []int
	for range memoSlots {
		m, k := p.get()
		if m == nil || taken[m] {
			t.Fatalf("slot %d: memo %p handed out twice or not at all", k, m)
		}
		taken[m] = true
		slots = append(slots, k)
	}
	if m, k := p.get(); m != nil || k != -1 {
		t.Fatalf("with every slot taken, get = %p, %d", m, k)
	}
	p.put(slots[3])
	if m, k := p.get(); m == nil || k != slots[3] || !taken[m] {
		t.Fatalf("after slot %d came back, get = %p, %d", slots[3], m, k)
	}
	p.put(-1) // a goroutine that counted without a memo gives nothing back
}

// memoKey packs text[i:j] (3 to memoMaxBytes bytes) as memoEntry does, count 0: the key
// countText writes out, as a function for the tests.
func memoKey(text string, i, j int) (a, b uint64) {
	n := j - i
	if i+16 <= len(text) {
		// Load 16 bytes and clear those past the piece: two loads, no loop.
		a, b = le64(text[i:]), le64(text[i+8:])
		if n < 8 {
			a &= 1<<(8*n) - 1
			b = 0
		} else {
			b &= 1<<(8*(n-8)) - 1
		}
		return a, b | uint64(n)<<60
	}
	return memoKeyEnd(text[i:j])
}
