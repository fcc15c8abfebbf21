package index

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/ctxkit/ctxkit/internal/store"
)

// BM25's parameters, the usual ones.
const (
	k1 = 1.2
	bm = 0.75
)

// Hit is one stored text a search found.
type Hit struct {
	Hash  string
	Score float64
	Entry store.Entry
}

// Docs is how many texts the index holds.
func (ix *Index) Docs() int {
	n := 0
	for _, s := range ix.segs {
		n += s.nDocs
	}
	return n
}

// candDoc is a candidate with its document's entry, read to order equal scores.
type candDoc struct {
	c scored
	d doc
}

type scored struct {
	seg   *segment
	id    int
	score float64
}

// Search ranks the stored texts that have any of terms (each with how often the query
// has it) by BM25, and those that have every one of must (a phrase's terms) when must is
// not empty. It hands them to accept best first, one text once, until accept has taken
// limit or returns an error; accept may refuse a hit (a phrase not in its text). It
// returns the hits taken and how many texts the terms matched.
func (ix *Index) Search(terms map[uint64]int, must []uint64, limit int, accept func(Hit) (bool, error)) ([]Hit, int, error) {
	n, total := 0, int64(0)
	for _, s := range ix.segs {
		n += s.nDocs
		total += s.totalLen
	}
	if n == 0 || len(terms) == 0 {
		return nil, 0, nil
	}
	avg := float64(total) / float64(n)
	type where struct {
		off int64
		df  int
	}
	found := make([]map[uint64]where, len(ix.segs))
	df := map[uint64]int{}
	for i, s := range ix.segs {
		found[i] = map[uint64]where{}
		for h := range terms {
			off, d, err := s.lookup(h)
			if err != nil {
				return nil, 0, fmt.Errorf("read the index: %w", err)
			}
			if d > 0 {
				found[i][h] = where{off, d}
				df[h] += d
			}
		}
	}
	mustSet := map[uint64]bool{}
	for _, h := range must {
		mustSet[h] = true
		if df[h] == 0 {
			return nil, 0, nil
		}
	}
	var cands []scored
	for i, s := range ix.segs {
		if len(found[i]) == 0 {
			continue
		}
		if err := s.loadLens(); err != nil {
			return nil, 0, fmt.Errorf("read the index: %w", err)
		}
		score := map[int]float64{}
		var has map[int]int
		if len(mustSet) > 0 {
			has = map[int]int{}
		}
		for _, h := range slices.Sorted(maps.Keys(found[i])) { // one order of the sums: one score
			w := found[i][h]
			idf := math.Log(1 + (float64(n)-float64(df[h])+0.5)/(float64(df[h])+0.5))
			q := float64(terms[h])
			err := s.postings(w.off, w.df, func(id, tf int) {
				f := float64(tf)
				score[id] += q * idf * f * (k1 + 1) / (f + k1*(1-bm+bm*float64(s.lens[id])/avg))
				if has != nil && mustSet[h] {
					has[id]++
				}
			})
			if err != nil {
				return nil, 0, fmt.Errorf("read the index: %w", err)
			}
		}
		for id, sc := range score {
			if has != nil && has[id] < len(mustSet) {
				continue
			}
			cands = append(cands, scored{s, id, sc})
		}
	}
	// (equal scores are put in stored order below, as the hits reach them)
	slices.SortFunc(cands, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	// (a text is in one segment but when two writers indexed the same lines at once)
	seen := map[string]bool{}
	var hits []Hit
	dropped := 0
	for start := 0; start < len(cands) && len(hits) < limit; {
		// Equal scores go in the order their texts were stored (their lines in
		// index.jsonl), whatever segments the index workers made of them: a run of
		// equal scores is read and ordered when the hits reach it, not before. (A text
		// in two segments, when two writers indexed the same lines at once, is one line:
		// either copy makes the same hit.)
		end := start + 1
		for end < len(cands) && cands[end].score == cands[start].score {
			end++
		}
		group := make([]candDoc, end-start)
		for i, c := range cands[start:end] {
			d, err := c.seg.doc(c.id)
			if err != nil {
				return nil, 0, fmt.Errorf("read the index: %w", err)
			}
			group[i] = candDoc{c, d}
		}
		slices.SortFunc(group, func(a, b candDoc) int { return cmp.Compare(a.d.lineOff, b.d.lineOff) })
		start = end
		for _, g := range group {
			if len(hits) >= limit {
				break
			}
			c, d := g.c, g.d
			h := d.hexHash()
			if seen[h] {
				dropped++
				continue
			}
			seen[h] = true
			e, err := ix.entry(d)
			if err != nil {
				dropped++
				continue // its line is not readable: not a hit
			}
			hit := Hit{Hash: h, Score: c.score, Entry: e}
			ok, err := accept(hit)
			if err != nil {
				return hits, len(cands) - dropped, err
			}
			if !ok {
				dropped++
				continue
			}
			hits = append(hits, hit)
		}
	}
	return hits, len(cands) - dropped, nil
}

// entry reads a document's line of index.jsonl.
func (ix *Index) entry(d doc) (store.Entry, error) {
	buf := make([]byte, d.lineLen)
	if _, err := ix.jsonl.ReadAt(buf, d.lineOff); err != nil {
		return store.Entry{}, err
	}
	var e store.Entry
	body := bytes.TrimSpace(buf)
	if err := json.Unmarshal(body, &e); err != nil {
		return store.Entry{}, err
	}
	e.Line = body
	return e, nil
}
