package tokens

import (
	"math/rand/v2"
	"testing"
)

// TestShortTable: the short table read from the embedded file finds every token of three
// to five bytes at its rank and nothing else, among strings made to look like tokens:
// tokens with a byte changed, cut short, or followed by a zero byte (which a key without
// the length would take for the token), and random bytes.
func TestShortTable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	for _, name := range []string{"o200k", "cl100k"} {
		tab := vocabFor(name).table()
		st := tab.short
		if st == nil {
			t.Fatalf("%s: the table file has no short table", name)
		}
		want := map[string]int32{}
		for k := range tab.size() {
			want[tab.blob[tab.off[k]:tab.off[k+1]]] = int32(k)
		}
		rank := func(s string) int32 {
			if r, ok := want[s]; ok {
				return r
			}
			return -1
		}
		var probes []string
		for k := range tab.size() {
			tok := tab.blob[tab.off[k]:tab.off[k+1]]
			if len(tok) < shortMinBytes-1 || len(tok) > shortMaxBytes {
				continue
			}
			probes = append(probes, tok, tok+"\x00", "\x00"+tok, tok[:len(tok)-1])
			b := []byte(tok)
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			probes = append(probes, string(b))
		}
		for range 100000 {
			b := make([]byte, shortMinBytes+r.IntN(shortMaxBytes-shortMinBytes+1))
			for i := range b {
				b[i] = "\x00ab \xe4\xb8"[r.IntN(6)]
			}
			probes = append(probes, string(b))
		}
		found := 0
		for _, s := range probes {
			if len(s) < shortMinBytes || len(s) > shortMaxBytes {
				continue
			}
			got, w := st.rank(s, hashString(s)), rank(s)
			if got != w {
				t.Fatalf("%s: short rank(%q) = %d, want %d", name, s, got, w)
			}
			if w >= 0 {
				found++
			}
		}
		if found < 40000 {
			t.Errorf("%s: only %d tokens probed", name, found)
		}
		// And through rank: every token of any length.
		for k := range tab.size() {
			if tok := tab.blob[tab.off[k]:tab.off[k+1]]; tab.rank(tok) != int32(k) {
				t.Fatalf("%s: with the short table, rank(token %d %q) = %d", name, k, tok, tab.rank(tok))
			}
		}
	}
}
