package tokens

import (
	"math/rand/v2"
	"slices"
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

// TestMemoSetKeepsWays: memoWays pieces (of the first table's lengths, past the short
// memo's) that fall in one set all stay in it, and the
// piece that comes after them evicts the one used least recently, not one used since:
// pieces found past a set's first entry move to the front. Every count it returns is the
// piece's count.
func TestMemoSetKeepsWays(t *testing.T) {
	tab := o200k.table()
	m := new(pieceMemo)
	m.reset(tab)
	// memoWays+1 pieces of one set, found by trying words.
	r := rand.New(rand.NewPCG(7, 8))
	bySet := map[*[memoWays]memoEntry][]string{}
	var same []string
	for same == nil {
		b := make([]byte, shortMemoMaxBytes+1+r.IntN(memoMaxBytes-shortMemoMaxBytes))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		p := string(b)
		a, k := memoKey(p, 0, len(p))
		s := m.set(a, k)
		if bySet[s] = append(bySet[s], p); len(bySet[s]) == memoWays+1 {
			same = bySet[s]
		}
	}
	look := func(p string) (count int, hit bool) {
		a, k := memoKey(p, 0, len(p))
		set := m.set(a, k)
		for _, e := range set {
			if e.a == a && e.b&^memoCountBits == k {
				hit = true
			}
		}
		if e := &set[0]; e.a == a && e.b&^memoCountBits == k {
			return int(e.b >> 56 & 0xF), hit
		}
		var gate cacheGate
		return m.rest(set, a, k, tab, p, nil, &gate), hit
	}
	check := func(p string, wantHit bool) {
		t.Helper()
		n, hit := look(p)
		if want := tab.countPiece(p, nil, new(cacheGate)); n != want {
			t.Fatalf("%q: memo counts %d, want %d", p, n, want)
		}
		if hit != wantHit {
			t.Fatalf("%q: in the memo %v, want %v", p, hit, wantHit)
		}
	}
	for _, p := range same[:memoWays] {
		check(p, false)
	}
	for _, p := range same[:memoWays] {
		check(p, true) // all kept; each moves to the front in turn
	}
	check(same[0], true)         // same[1] is now the least recently used
	check(same[memoWays], false) // and makes room
	check(same[0], true)
	check(same[1], false)
}

// shortMemoKey is the key countText writes out for text[i:j] (3 to shortMemoMaxBytes
// bytes), as a function for the tests.
func shortMemoKey(text string, i, j int) uint64 {
	if i+8 <= len(text) {
		return le64(text[i:])&(1<<(8*(j-i))-1) | uint64(j-i)<<56
	}
	return shortKeyEnd(text[i:j])
}

// TestShortMemoKey: a short piece has one key wherever it lies in its text (read eight
// bytes at a time in the middle, byte by byte near the end), two pieces have the same key
// only when they are the same bytes, and no key has bits in the count's place.
func TestShortMemoKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[uint64]string{}
	for range 20000 {
		n := 3 + r.IntN(shortMemoMaxBytes-2)
		b := make([]byte, n)
		for i := range b {
			b[i] = "\x00a\xffZ "[r.IntN(5)]
		}
		piece := string(b)
		text := "xy" + piece + strings.Repeat("\xee", 10)
		k1, k2 := shortMemoKey(text, 2, 2+n), shortMemoKey(text[:2+n], 2, 2+n)
		if k1 != k2 {
			t.Fatalf("%q: key %x in the middle of a text, %x at its end", piece, k1, k2)
		}
		if k1&shortCountBits != 0 {
			t.Fatalf("%q: key %x has bits in the count's place", piece, k1)
		}
		if other, ok := seen[k1]; ok && other != piece {
			t.Fatalf("%q and %q have the same key", piece, other)
		}
		seen[k1] = piece
	}
}

// TestShortMemoKeepsWays is TestMemoSetKeepsWays for the short memo.
func TestShortMemoKeepsWays(t *testing.T) {
	tab := o200k.table()
	m := new(pieceMemo)
	m.reset(tab)
	r := rand.New(rand.NewPCG(9, 10))
	bySet := map[*[shortWays]uint64][]string{}
	var same []string
	for same == nil {
		b := make([]byte, 3+r.IntN(shortMemoMaxBytes-2))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		p := string(b)
		s := m.shortSet(shortMemoKey(p, 0, len(p)))
		if bySet[s] = append(bySet[s], p); len(bySet[s]) == shortWays+1 {
			same = bySet[s]
		}
	}
	check := func(p string, wantHit bool) {
		t.Helper()
		k := shortMemoKey(p, 0, len(p))
		set := m.shortSet(k)
		hit := slices.ContainsFunc(set[:], func(e uint64) bool { return e&^shortCountBits == k })
		var n int
		if set[0]&^shortCountBits == k {
			n = int(set[0] >> 59)
		} else {
			n = m.shortRest(set, k, tab, p, nil, new(cacheGate))
		}
		if want := tab.countPiece(p, nil, new(cacheGate)); n != want {
			t.Fatalf("%q: memo counts %d, want %d", p, n, want)
		}
		if hit != wantHit {
			t.Fatalf("%q: in the memo %v, want %v", p, hit, wantHit)
		}
	}
	for _, p := range same[:shortWays] {
		check(p, false)
	}
	for _, p := range same[:shortWays] {
		check(p, true)
	}
	check(same[0], true)
	check(same[shortWays], false)
	check(same[0], true)
	check(same[1], false)
}
