package index

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/store"
)

func termsOf(s string) []uint64 {
	var out []uint64
	Terms([]byte(s), func(h uint64) { out = append(out, h) })
	return out
}

func TestTermsSplitIdentifiers(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"parseConfig", []string{"parseconfig", "parse", "config"}},
		{"parse_config", []string{"parse_config", "parse", "config"}},
		{"HTTPServer", []string{"httpserver", "http", "server"}},
		{"internal/cli/run.go", []string{"internal", "cli", "run", "go"}},
		{"sha256sum x", []string{"sha256sum", "sha", "256", "sum"}},
		{"Hello, World!", []string{"hello", "world"}},
		{"été naïve", []string{"été", "naïve"}},
	} {
		got := termsOf(c.text)
		var want []uint64
		for _, w := range c.want {
			want = append(want, Hash(w))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Terms(%q): %d terms, want %v", c.text, len(got), c.want)
		}
	}
}

// fill stores texts with index lines, as the tiers do.
func fill(t testing.TB, st *store.Store, texts ...string) []string {
	var hashes []string
	for i, text := range texts {
		h, _, err := st.Put([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(store.Entry{Hash: h, Tool: "Bash", ToolCallID: fmt.Sprintf("call_%d", i), Bytes: len(text), Time: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	return hashes
}

func search(t *testing.T, st *store.Store, q string) []string {
	ix, err := Open(st, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	hits, _, err := ix.Search(QueryTerms(q), nil, 10, func(Hit) (bool, error) { return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Hash)
	}
	return out
}

func TestSearchRanksAndCatchesUp(t *testing.T) {
	st, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hs := fill(t, st, "the retry loop in internal/cli/run.go gives up after 3 tries",
		"func parseConfig(path string) error { return nil }",
		"a log line\nERROR: connection refused while dialing the database\n")
	if got := search(t, st, "parse_config"); len(got) != 1 || got[0] != hs[1] {
		t.Errorf("parse_config: %v, want %s", got, hs[1])
	}
	if got := search(t, st, "connection refused"); len(got) != 1 || got[0] != hs[2] {
		t.Errorf("connection refused: %v", got)
	}
	// written after the index: found all the same (caught up), in a new segment
	more := fill(t, st, "retry retry retry: the retry policy")
	if got := search(t, st, "retry"); len(got) != 2 || got[0] != more[0] {
		t.Errorf("retry: %v, want %s first", got, more[0])
	}
	segs, _ := os.ReadDir(filepath.Join(st.Dir(), Dir))
	if len(segs) != 2 {
		t.Errorf("%d segments, want 2", len(segs))
	}
	// an index.jsonl replaced (not the one the index was made from): rebuilt
	os.Remove(filepath.Join(st.Dir(), store.IndexName))
	fill(t, st, "something else entirely")
	if got := search(t, st, "retry"); len(got) != 0 {
		t.Errorf("after index.jsonl was replaced, retry: %v, want nothing", got)
	}
}

func TestConcurrentUpdatesAndMerge(t *testing.T) {
	st, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				fill(t, st, fmt.Sprintf("writer%d item%d shared words", w, i))
				if err := Update(st); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	ix, err := Open(st, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Docs() != 40 {
		t.Errorf("%d documents, want 40", ix.Docs())
	}
	hits, n, err := ix.Search(QueryTerms("shared"), nil, 100, func(Hit) (bool, error) { return true, nil })
	if err != nil || len(hits) != 40 || n != 40 {
		t.Errorf("shared: %d hits, %d matched, %v", len(hits), n, err)
	}
	segs, _ := os.ReadDir(filepath.Join(st.Dir(), Dir))
	if len(segs) > mergeAt+1 {
		t.Errorf("%d segments after merging", len(segs))
	}
}

func TestSortByTermKeepsDocumentOrder(t *testing.T) {
	var p []posting
	for id := uint64(0); id < 3000; id++ {
		for _, h := range []uint64{id % 7 * 0x0101010101010101, 5, id*0x9E3779B97F4A7C15 | 1<<63} {
			p = append(p, posting{h, id << 32})
		}
	}
	sortByTerm(p)
	for i := 1; i < len(p); i++ {
		if p[i].h < p[i-1].h || p[i].h == p[i-1].h && p[i].v <= p[i-1].v {
			t.Fatalf("at %d: %x/%x after %x/%x", i, p[i].h, p[i].v, p[i-1].h, p[i-1].v)
		}
	}
}

// segmentBytes are the bytes of the one segment of st's index, its hash of index.jsonl
// blanked (bytes 16-23, as scripts/differential.sh does).
func segmentBytes(t *testing.T, st *store.Store) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(st.Dir(), Dir, segPrefix+"*"+segSuffix))
	if err != nil || len(names) != 1 {
		t.Fatalf("segments %v (%v), want one", names, err)
	}
	b, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	copy(b[16:24], make([]byte, 8))
	return b
}

// The texts a tier counted as it stored them index to the bytes reading them back gives,
// and the files are not read: a file altered after it was counted is indexed as counted.
func TestUpdateCountedIsUpdate(t *testing.T) {
	texts := []string{"parseConfig failed: open /etc/app.yaml", "HTTPServer listening on :8080\nparse_config ok", "été naïve parseConfig parseConfig"}
	read, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, read, texts...)
	if err := Update(read); err != nil {
		t.Fatal(err)
	}
	counted, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hashes := fill(t, counted, texts...)
	known := map[string]*Counted{}
	for i, h := range hashes[:2] { // the third is read from its file
		known[h] = Count([]byte(texts[i]))
	}
	// (what is counted is indexed, not what the file holds now)
	if err := os.WriteFile(counted.Path(hashes[0]), []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UpdateCounted(counted, known); err != nil {
		t.Fatal(err)
	}
	if a, b := segmentBytes(t, read), segmentBytes(t, counted); string(a) != string(b) {
		t.Errorf("segment from counts (%d bytes) differs from the segment read back (%d bytes)", len(b), len(a))
	}
	if got := search(t, counted, "parseconfig"); len(got) != 2 {
		t.Errorf("search parseconfig: %d hits, want 2", len(got))
	}
}

// sortByTerm is a stable sort by term: what slices.SortStableFunc gives, on lists of every
// size, with terms of very different frequencies (a few in most documents, most in one)
// and hashes that share their top bits.
func TestSortByTermIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 255, 256, 1000, 5000, 1 << 16, 300000} {
		p := make([]posting, n)
		for i := range p {
			var h uint64
			switch r := rng.IntN(10); {
			case r < 3:
				h = uint64(rng.IntN(8)) * 0x9E3779B97F4A7C15 // frequent terms
			case r < 5:
				h = 0xABCD<<48 | uint64(rng.IntN(50000)) // one bucket's worth
			default:
				h = rng.Uint64()
			}
			p[i] = posting{h, uint64(i/7)<<32 | uint64(rng.IntN(9))}
		}
		want := slices.Clone(p)
		slices.SortStableFunc(want, func(x, y posting) int { return cmp.Compare(x.h, y.h) })
		sortByTerm(p)
		if !slices.Equal(p, want) {
			t.Fatalf("%d postings: not the stable sort", n)
		}
	}
}

// Texts that score the same come in one fixed order (the order stored, in unmerged segments),
// on every search: the sums and the ties were in the order of maps, so two searches of one
// store could list different texts.
func TestTiesInStoredOrder(t *testing.T) {
	st, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := 0; i < 40; i++ {
		texts = append(texts, fmt.Sprintf("alpha beta gamma w%c%c", 'a'+i/26, 'a'+i%26))
	}
	hashes := fill(t, st, texts...)
	for try := 0; try < 5; try++ {
		if got := search(t, st, "alpha beta gamma"); fmt.Sprint(got) != fmt.Sprint(hashes[:10]) {
			t.Fatalf("search %d: %v, want the first ten stored %v", try, got, hashes[:10])
		}
	}
}

// A damaged index.jsonl may claim any size for a text: the room made ready for its
// postings is bounded, not taken from the claim (2^50 bytes panicked a build worker,
// which took the process with it).
func TestClaimedSizeIsNotTrusted(t *testing.T) {
	for _, claim := range []string{"1125899906842624", "9223372036854775807"} {
		st, err := store.Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		hs := fill(t, st, "func parseConfig(path string) error { return nil }")
		os.RemoveAll(filepath.Join(st.Dir(), Dir))
		name := filepath.Join(st.Dir(), store.IndexName)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		damaged := regexp.MustCompile(`"bytes":\d+`).ReplaceAll(b, []byte(`"bytes":`+claim))
		if bytes.Equal(damaged, b) {
			t.Fatalf("no bytes member in %s", b)
		}
		if err := os.WriteFile(name, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := search(t, st, "parse_config"); len(got) != 1 || got[0] != hs[0] {
			t.Errorf("claim %s: parse_config: %v, want %s", claim, got, hs[0])
		}
		st.Close()
	}
}

// Ties stay in stored order whatever segments the index is made of: small segments are
// merged in order of size, so a merged segment's documents were in that order, and equal
// scores followed it (ctx-recall's hits of one query varied with the index's history).
func TestTiesInStoredOrderAcrossMerges(t *testing.T) {
	st, err := store.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var tied []string
	for i := range mergeAt + 2 {
		// each catch-up makes a segment: the earlier ones the larger (padding first)
		pad := strings.Repeat(fmt.Sprintf("filler%d ", i), 40*(mergeAt+2-i))
		hs := fill(t, st, pad, fmt.Sprintf("alpha beta gamma w%c", 'a'+i))
		tied = append(tied, hs[1])
		search(t, st, "nothing")
	}
	segs, _ := filepath.Glob(filepath.Join(st.Dir(), Dir, segPrefix+"*"))
	if len(segs) > mergeAt {
		t.Fatalf("%d segments: the small ones were not merged", len(segs))
	}
	if got := search(t, st, "alpha beta gamma"); fmt.Sprint(got) != fmt.Sprint(tied[:10]) {
		t.Errorf("ties: %v, want the first ten stored %v", got, tied[:10])
	}
}
