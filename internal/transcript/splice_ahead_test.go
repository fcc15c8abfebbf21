package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// aheadDoc returns a document of n bytes and regions in it: short ones, close together,
// and with big, some longer than the read-ahead bound and far apart.
func aheadDoc(n int, seed uint64, big bool) (string, []Span) {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	var regions []Span
	for at := 0; at < n; {
		gap := r.IntN(2000)
		if big && r.IntN(1000) == 0 {
			gap = r.IntN(3 * aheadBytes)
		}
		size := r.IntN(5000)
		if big && r.IntN(800) == 0 {
			size = aheadBytes + r.IntN(aheadBytes)
		}
		start := at + gap
		if start+size > n {
			break
		}
		regions = append(regions, Span{start, start + size})
		at = start + size
	}
	return string(b), regions
}

// upper is a Decide that upper-cases every 500th byte of a region and leaves the rest,
// after a pause of up to d, so that regions finish out of order.
func upper(d time.Duration, seed uint64) func(int, string, int) ([]Edit, error) {
	return func(i int, text string, base int) ([]Edit, error) {
		if d > 0 {
			time.Sleep(time.Duration(rand.New(rand.NewPCG(seed, uint64(i))).Int64N(int64(d))))
		}
		var edits []Edit
		for j := 0; j < len(text); j += 500 {
			edits = append(edits, Edit{Span: Span{base + j, base + j + 1}, With: strings.ToUpper(text[j : j+1])})
		}
		return edits, nil
	}
}

func TestSpliceAheadMatchesSplice(t *testing.T) {
	doc, regions := aheadDoc(16<<20, 1, true)
	large := 0
	for _, rg := range regions {
		if rg.Len() > aheadBytes {
			large++
		}
	}
	if len(regions) < 1000 || large == 0 {
		t.Fatalf("%d regions, %d larger than the read-ahead", len(regions), large)
	}
	var want bytes.Buffer
	wantN, err := Splice(strings.NewReader(doc), &want, regions, upper(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			var read atomic.Int64
			var committed []int
			pause := 20 * time.Microsecond // (with one worker the regions are decided in turn)
			if workers == 1 {
				pause = 0
			}
			re := RegionEdits{Decide: upper(pause, uint64(workers)), Concurrent: true, Commit: func(i int) error {
				committed = append(committed, i)
				// What is read ahead of the region about to be written stays bounded
				// (bufio's buffer aside), unless the region alone is larger.
				if ahead := int(read.Load()) - regions[i].End; ahead > aheadBytes+64<<10 {
					t.Errorf("region %d: %d bytes read ahead of it", i, ahead)
				}
				return nil
			}}
			var out bytes.Buffer
			n, err := SpliceAhead(&countingReader{r: iotest.HalfReader(strings.NewReader(doc)), n: &read}, &out, regions, re, workers)
			if err != nil {
				t.Fatal(err)
			}
			if n != wantN || !bytes.Equal(out.Bytes(), want.Bytes()) {
				t.Fatalf("%d edits, %d bytes; Splice made %d, %d bytes", n, out.Len(), wantN, want.Len())
			}
			for k, i := range committed {
				if k != i {
					t.Fatalf("commit %d was of region %d", k, i)
				}
			}
			if len(committed) != len(regions) {
				t.Fatalf("%d commits of %d regions", len(committed), len(regions))
			}

			// DecideAll decides a window at a time: never past the bounds ahead of the
			// region committed.
			committed = nil
			var furthest atomic.Int64
			decide := re.Decide
			re.Decide = func(i int, text string, base int) ([]Edit, error) {
				for f := furthest.Load(); int64(i) > f && !furthest.CompareAndSwap(f, int64(i)); f = furthest.Load() {
				}
				return decide(i, text, base)
			}
			re.Commit = func(i int) error {
				committed = append(committed, i)
				if f := int(furthest.Load()); workers > 1 && f >= i+aheadPerWorker*workers {
					t.Errorf("DecideAll: region %d decided before region %d was committed", f, i)
				}
				return nil
			}
			edits, err := DecideAll(doc, regions, re, workers)
			if err != nil {
				t.Fatal(err)
			}
			tr := &Transcript{Doc: doc}
			got, err := tr.Apply(edits)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatal("DecideAll's edits make another document than Splice's")
			}
			for k, i := range committed {
				if k != i {
					t.Fatalf("DecideAll: commit %d was of region %d", k, i)
				}
			}
			if len(committed) != len(regions) {
				t.Fatalf("DecideAll: %d commits of %d regions", len(committed), len(regions))
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A region's error is the run's when every region before it succeeded, whichever failed
// first in time; nothing at or after it is committed, and no worker is left running.
func TestSpliceAheadErrors(t *testing.T) {
	doc, regions := aheadDoc(4<<20, 2, false)
	const bad = 40
	errBad, errLater := errors.New("region 40"), errors.New("a later region")
	var running atomic.Int64
	decide := func(i int, text string, base int) ([]Edit, error) {
		running.Add(1)
		defer running.Add(-1)
		switch {
		case i == bad:
			time.Sleep(5 * time.Millisecond) // a later region fails first
			return nil, errBad
		case i > bad:
			return nil, errLater
		}
		return upper(50*time.Microsecond, 3)(i, text, base)
	}
	for _, whole := range []bool{false, true} {
		var committed []int
		re := RegionEdits{Decide: decide, Concurrent: true, Commit: func(i int) error { committed = append(committed, i); return nil }}
		var err error
		if whole {
			_, err = DecideAll(doc, regions, re, 4)
		} else {
			_, err = SpliceAhead(strings.NewReader(doc), io.Discard, regions, re, 4)
		}
		if err != errBad {
			t.Errorf("whole %v: the error is %v, not region %d's", whole, err, bad)
		}
		if len(committed) != bad || committed[bad-1] != bad-1 {
			t.Errorf("whole %v: %d regions committed, want the %d before the failing one", whole, len(committed), bad)
		}
		if n := running.Load(); n != 0 {
			t.Errorf("whole %v: %d decisions still running after the return", whole, n)
		}
	}

	// A commit's error stops the run too.
	errCommit := errors.New("commit")
	re := RegionEdits{Decide: upper(0, 0), Concurrent: true, Commit: func(i int) error {
		if i == 7 {
			return errCommit
		}
		return nil
	}}
	if _, err := SpliceAhead(strings.NewReader(doc), io.Discard, regions, re, 3); err != errCommit {
		t.Errorf("a commit's error: %v", err)
	}
	if _, err := DecideAll(doc, regions, re, 3); err != errCommit {
		t.Errorf("DecideAll: a commit's error: %v", err)
	}
	// Splice's own errors.
	re.Commit = nil
	if _, err := SpliceAhead(strings.NewReader(doc[:regions[60].End-1]), io.Discard, regions, re, 3); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a document shorter than its regions: %v", err)
	}
	backwards := append([]Span{}, regions[:10]...)
	backwards[5], backwards[6] = backwards[6], backwards[5]
	if _, err := SpliceAhead(strings.NewReader(doc), io.Discard, backwards, re, 3); err == nil {
		t.Error("regions out of order: no error")
	}
}
