package tokens

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"testing"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

var writeTables = flag.Bool("write-tables", false, "rewrite the .bpe table files from tiktoken-go-loader's vocabularies")

// TestTablesCurrent checks that each committed <encoding>.bpe is exactly the table built
// from the .tiktoken file of the tiktoken-go-loader version in go.mod; with
// -write-tables (go generate) it rewrites them.
func TestTablesCurrent(t *testing.T) {
	for _, v := range []*vocab{o200k, cl100k} {
		src, err := assets.Assets.ReadFile(v.encoding + ".tiktoken")
		if err != nil {
			t.Fatal(err)
		}
		tab, err := parseTiktoken(src)
		if err != nil {
			t.Fatalf("%s: %v", v.encoding, err)
		}
		want := tab.marshal()
		file := v.encoding + ".bpe"
		if *writeTables {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !bytes.Equal([]byte(v.data), want) {
			t.Errorf("%s is not the table of tiktoken-go-loader's %s.tiktoken; run go generate ./internal/tokens", file, v.encoding)
		}
		loaded, err := loadTable(string(want))
		if err != nil {
			t.Fatalf("%s: load: %v", v.encoding, err)
		}
		if loaded.size() != tab.size() || loaded.maxLen != tab.maxLen || loaded.blob != tab.blob {
			t.Errorf("%s: the loaded table differs from the built one", v.encoding)
		}
	}
}

func TestLoadTableErrors(t *testing.T) {
	src, err := assets.Assets.ReadFile("cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := parseTiktoken(src)
	if err != nil {
		t.Fatal(err)
	}
	good := tab.marshal()
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"header":    good[:tableHeader-1],
		"magic":     append([]byte("XXXX"), good[4:]...),
		"truncated": good[:len(good)/2],
		"short":     good[:len(good)-1],
	} {
		if _, err := loadTable(string(bad)); err == nil {
			t.Errorf("%s: loadTable succeeded", name)
		}
	}
	// An unaligned copy is read by copying, and gives the same ranks.
	unaligned := string(append([]byte{0}, good...))[1:]
	u, err := loadTable(unaligned)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hello", " world", "qzxq", "\n\n"} {
		if u.rank(s) != tab.rank(s) {
			t.Errorf("rank(%q): unaligned %d, built %d", s, u.rank(s), tab.rank(s))
		}
	}
}

func TestParseTiktokenErrors(t *testing.T) {
	for _, bad := range []string{
		"YQ== 1\n",           // ranks must start at 0
		"YQ== 0\nYg== 0\n",   // and go up by one
		"YQ== 0\nYQ== 1\n",   // no token twice
		"YQ= 0\n",            // bad base64
		"Y=Q= 0\n",           // misplaced padding
		"YQ==\n",             // no rank
		"YQ== x\n",           // rank not a number
		"YQ== 0\n== 1\n",     // empty token
		"YWJj 0\nYQ===0 1\n", // no space
	} {
		if _, err := parseTiktoken([]byte(bad)); err == nil {
			t.Errorf("parseTiktoken(%q) succeeded", bad)
		}
	}
	tab, err := parseTiktoken([]byte("YQ== 0\nYg== 1\nYWI= 2\nYWJj 3"))
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]int32{"a": 0, "b": 1, "ab": 2, "abc": 3, "c": -1, "ba": -1} {
		if got := tab.rank(s); got != want {
			t.Errorf("rank(%q) = %d, want %d", s, got, want)
		}
	}
}

// marshal writes t in the format loadTable reads.
func (t *table) marshal() []byte {
	logSlots := bits.Len(uint(len(t.slots))) - 1
	out := make([]byte, 0, tableHeader+4*(len(t.off)+len(t.slots)+pair2Words+long2Words+apart2Words)+len(t.blob))
	le := binary.LittleEndian
	logFilter := bits.Len(uint(len(t.filter)*64)) - 1
	logShort := 0
	if t.short != nil {
		logShort = bits.Len(uint(len(t.short.slots))) - 1
	}
	for _, x := range []uint32{tableMagic, uint32(t.size()), uint32(logSlots), uint32(t.rankBits), uint32(t.maxLen), uint32(logFilter), uint32(logShort)} {
		out = le.AppendUint32(out, x)
	}
	for _, x := range t.off {
		out = le.AppendUint32(out, x)
	}
	for _, x := range t.slots {
		out = le.AppendUint32(out, x)
	}
	for _, x := range t.pair2 {
		out = le.AppendUint32(out, uint32(x))
	}
	for _, x := range t.byte1 {
		out = le.AppendUint32(out, uint32(x))
	}
	if len(out)%8 != 0 {
		out = le.AppendUint32(out, 0)
	}
	for _, x := range t.long2 {
		out = le.AppendUint64(out, x)
	}
	for _, x := range t.apart2 {
		out = le.AppendUint64(out, x)
	}
	for _, x := range t.filter {
		out = le.AppendUint64(out, x)
	}
	if t.short != nil {
		for _, x := range t.short.slots {
			out = le.AppendUint64(out, x)
		}
	}
	return append(out, t.blob...)
}

// parseTiktoken builds a table from the lines of a .tiktoken file. Ranks must be 0, 1,
// 2... in order (they are in every published file), so a rank is an index.
func parseTiktoken(data []byte) (*table, error) {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	blob := make([]byte, 0, len(data)*3/4)
	off := make([]uint32, 1, n+1)
	maxLen := 0
	for line := 1; len(data) > 0; line++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			end = len(data)
		}
		l := data[:end]
		data = data[min(end+1, len(data)):]
		if len(l) == 0 {
			continue
		}
		sp := bytes.IndexByte(l, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("line %d: no rank", line)
		}
		rank, err := strconv.Atoi(string(l[sp+1:]))
		if err != nil || rank != len(off)-1 {
			return nil, fmt.Errorf("line %d: rank %q, want %d", line, l[sp+1:], len(off)-1)
		}
		start := len(blob)
		blob, err = base64.StdEncoding.AppendDecode(blob, l[:sp])
		if err != nil || len(blob) == start {
			return nil, fmt.Errorf("line %d: bad base64 %q", line, l[:sp])
		}
		maxLen = max(maxLen, len(blob)-start)
		off = append(off, uint32(len(blob)))
	}
	t := &table{blob: string(blob), off: off, maxLen: maxLen}
	n = t.size()
	t.rankBits = uint(bits.Len(uint(n)))
	if t.rankBits > 24 {
		return nil, fmt.Errorf("%d tokens: too many", n)
	}

	// A load factor under 0.4 keeps probes short for the misses that dominate merging.
	size := 1 << bits.Len(uint(n)*5/2)
	t.slots = make([]uint32, size)
	t.mask = uint64(size - 1)
	for r := range n {
		s := t.blob[t.off[r]:t.off[r+1]]
		h := hashString(s)
		i := h & t.mask
		for t.slots[i] != 0 {
			if x := t.slots[i]&(1<<t.rankBits-1) - 1; t.blob[t.off[x]:t.off[x+1]] == s {
				return nil, fmt.Errorf("token %d repeats token %d", r, x)
			}
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint32(h>>(32+t.rankBits))<<t.rankBits | uint32(r+1)
	}

	// About ten bits a token: a false positive rate near 9%.
	logFilter := bits.Len(uint(n) * 10)
	t.filter = make([]uint64, 1<<logFilter/64)
	t.fmask = 1<<logFilter - 1
	if logSize := bits.Len(uint(size)) - 1; logSize > filterShift || filterShift+logFilter > 32+int(t.rankBits) {
		return nil, fmt.Errorf("%d tokens: too many", n)
	}
	for r := range n {
		f := hashString(t.blob[t.off[r]:t.off[r+1]]) >> filterShift & t.fmask
		t.filter[f/64] |= 1 << (f % 64)
	}

	t.pair2 = make([]int32, pair2Words)
	for i := range t.pair2 {
		t.pair2[i] = -1
	}
	t.long2 = make([]uint64, long2Words/2)
	for r := range n {
		s := t.blob[t.off[r]:t.off[r+1]]
		switch {
		case len(s) == 2:
			t.pair2[int(s[0])<<8|int(s[1])] = int32(r)
		case len(s) > 2:
			k := int(s[0])<<8 | int(s[1])
			t.long2[k/64] |= 1 << (k % 64)
		}
	}
	// Bytes apart: every pair of bytes next to each other in no token.
	t.apart2 = make([]uint64, apart2Words/2)
	for i := range t.apart2 {
		t.apart2[i] = ^uint64(0)
	}
	for r := range n {
		s := t.blob[t.off[r]:t.off[r+1]]
		for i := 0; i+1 < len(s); i++ {
			k := int(s[i])<<8 | int(s[i+1])
			t.apart2[k/64] &^= 1 << (k % 64)
		}
	}
	t.setByteRanks()
	t.short = t.buildShort()
	return t, nil
}

// setByteRanks fills byte1, once the table can look tokens up.
func (t *table) setByteRanks() {
	var b [1]byte
	for c := range t.byte1 {
		b[0] = byte(c)
		t.byte1[c] = t.rank(string(b[:]))
	}
}

// buildShort makes the short table of t, or returns nil when its ranks do not fit.
func (t *table) buildShort() *shortTable {
	if t.size()+1 >= 1<<shortRankBits {
		return nil
	}
	n := 0
	for r := range t.size() {
		if l := t.off[r+1] - t.off[r]; l >= shortMinBytes && l <= shortMaxBytes {
			n++
		}
	}
	size := 2 // log2 of 0 in the file means no table
	for size < n*7/4 {
		size *= 2
	}
	st := &shortTable{slots: make([]uint64, size), shift: 64}
	for s := size; s > 1; s /= 2 {
		st.shift--
	}
	mask := uint64(size - 1)
	for r := range t.size() {
		tok := t.blob[t.off[r]:t.off[r+1]]
		if len(tok) < shortMinBytes || len(tok) > shortMaxBytes {
			continue
		}
		i := hashString(tok) >> st.shift
		for st.slots[i] != 0 {
			i = (i + 1) & mask
		}
		st.slots[i] = shortKey(tok)<<shortRankBits | uint64(r+1)
	}
	return st
}
