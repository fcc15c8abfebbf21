package transcript

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// RegionEdits is how a second pass decides the edits of the regions it reads (SpliceAhead
// for a streamed document, DecideAll for one held whole).
//
// Decide gets a region's text and document offset and returns the edits to make inside
// it. When Concurrent, it may be called for several regions at once, from other
// goroutines, and ahead of the writing: a tier's costly part (counting a result, making
// its cut) then uses the cores a filter otherwise leaves idle while it writes. Commit,
// when set, is called once for each region whose Decide succeeded, in document order, on
// the caller's goroutine, before the region's edits are written: side effects that must
// happen in order (a store's index) go there. The output is the same either way.
type RegionEdits struct {
	Decide     func(i int, text string, base int) ([]Edit, error)
	Commit     func(i int) error
	Concurrent bool
}

// sequential is re as Splice calls it: each region decided and committed in turn.
func (re RegionEdits) sequential(i int, text string, base int) ([]Edit, error) {
	edits, err := re.Decide(i, text, base)
	if err == nil && re.Commit != nil {
		err = re.Commit(i)
	}
	return edits, err
}

// Read-ahead bounds of SpliceAhead and DecideAll: regions decided before the oldest is
// written (committed), and the bytes they (and the stretches between them, held until
// their turn) take. A region's decision holds several copies of its text until then
// (ctx-persist's: the decoded result, the blob to store, the edited bytes), so the bounds
// are small: with these ctx-persist's and ctx-budget's peak RSS on 10 MB transcripts is
// within 1.2 MB of deciding in turn, where eight megabytes and four regions a worker
// added 5-8 MB.
const (
	aheadPerWorker = 2
	aheadBytes     = 1 << 20
)

// SpliceAhead is Splice with re: when re is concurrent, up to workers regions are
// decided at once, read ahead of the writing, and the document is copied out in order.
// What is read ahead is bounded (aheadBytes); a stretch between regions is held only while
// a region before it waits to be written, and a region is read whatever its size when
// nothing waits. The document is read and the output written on the calling goroutine
// alone: a memory fault reading an input in place stays under the caller's GuardFaults.
func SpliceAhead(r io.Reader, w io.Writer, regions []Span, re RegionEdits, workers int) (int, error) {
	if !re.Concurrent || workers < 2 || len(regions) < 2 {
		return Splice(r, w, regions, re.sequential)
	}
	s := &aheadSplice{re: re, jobs: make(chan *aheadRegion, aheadPerWorker*workers)}
	for range workers {
		s.wg.Add(1)
		go s.work()
	}
	made, err := s.run(r, w, regions, aheadPerWorker*workers)
	s.stopped.Store(true) // what is still queued is not decided
	close(s.jobs)
	s.wg.Wait()
	return made, err
}

type aheadSplice struct {
	re      RegionEdits
	jobs    chan *aheadRegion
	wg      sync.WaitGroup
	stopped atomic.Bool
}

// aheadRegion is a region read ahead: the stretch before it (when held), its text, and,
// once done is closed, its output.
type aheadRegion struct {
	i    int
	gap  []byte
	part Transcript
	done chan struct{}
	out  []byte
	n    int
	err  error
}

var errNotDecided = errors.New("internal: region not decided")

func (s *aheadSplice) work() {
	defer s.wg.Done()
	for a := range s.jobs {
		if s.stopped.Load() {
			a.err = errNotDecided
			close(a.done)
			continue
		}
		edits, err := s.re.Decide(a.i, a.part.Doc, a.part.Base)
		if err == nil {
			a.out, err = a.part.Apply(edits)
		}
		a.n, a.err = len(edits), err
		close(a.done)
	}
}

func (s *aheadSplice) run(r io.Reader, w io.Writer, regions []Span, maxAhead int) (int, error) {
	br := newSpliceReader(r)
	at, made, next, held := 0, 0, 0, 0
	var queue []*aheadRegion
	for next < len(regions) || len(queue) > 0 {
		// Read ahead while there is room; with nothing waiting, the stretch before the
		// region goes straight out.
		for next < len(regions) && len(queue) < maxAhead {
			rg := regions[next]
			if rg.Start < at || rg.End < rg.Start {
				return made, fmt.Errorf("region %d (%d-%d) is out of order", next, rg.Start, rg.End)
			}
			gapLen := rg.Start - at
			var gap []byte
			if len(queue) == 0 {
				if _, err := io.CopyN(w, br, int64(gapLen)); err != nil {
					return made, short(err)
				}
			} else {
				if held+gapLen+rg.Len() > aheadBytes {
					break
				}
				gap = make([]byte, gapLen)
				if _, err := io.ReadFull(br, gap); err != nil {
					return made, short(err)
				}
			}
			buf := make([]byte, rg.Len())
			if _, err := io.ReadFull(br, buf); err != nil {
				return made, short(err)
			}
			at = rg.End
			a := &aheadRegion{i: next, gap: gap, part: Transcript{Doc: string(buf), Base: rg.Start}, done: make(chan struct{})}
			held += len(gap) + len(buf)
			queue = append(queue, a)
			s.jobs <- a // never blocks: the channel holds maxAhead
			next++
		}
		a := queue[0]
		queue = queue[1:]
		held -= len(a.gap) + len(a.part.Doc)
		if _, err := w.Write(a.gap); err != nil {
			return made, err
		}
		<-a.done
		if a.err != nil {
			return made, a.err
		}
		if s.re.Commit != nil {
			if err := s.re.Commit(a.i); err != nil {
				return made, err
			}
		}
		if _, err := w.Write(a.out); err != nil {
			return made, err
		}
		made += a.n
	}
	_, err := io.Copy(w, br)
	return made, err
}

// DecideAll decides the edits of regions of a document held whole (doc), as SpliceAhead
// does for a streamed one, and returns them in document order. Regions are decided a
// window at a time (the same bounds), each window's committed before the next is decided.
func DecideAll(doc string, regions []Span, re RegionEdits, workers int) ([]Edit, error) {
	var edits []Edit
	if !re.Concurrent || workers < 2 || len(regions) < 2 {
		for i, rg := range regions {
			more, err := re.sequential(i, doc[rg.Start:rg.End], rg.Start)
			if err != nil {
				return nil, err
			}
			edits = append(edits, more...)
		}
		return edits, nil
	}
	maxAhead := aheadPerWorker * workers
	results := make([][]Edit, maxAhead)
	errs := make([]error, maxAhead)
	for start := 0; start < len(regions); {
		end, size := start, 0
		for end < len(regions) && end-start < maxAhead && (end == start || size+regions[end].Len() <= aheadBytes) {
			size += regions[end].Len()
			end++
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(workers, end-start) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1) - 1)
					if start+k >= end {
						return
					}
					rg := regions[start+k]
					results[k], errs[k] = re.Decide(start+k, doc[rg.Start:rg.End], rg.Start)
				}
			}()
		}
		wg.Wait()
		for k := range end - start {
			if errs[k] != nil {
				return nil, errs[k]
			}
			if re.Commit != nil {
				if err := re.Commit(start + k); err != nil {
					return nil, err
				}
			}
			edits = append(edits, results[k]...)
			results[k] = nil
		}
		start = end
	}
	return edits, nil
}
