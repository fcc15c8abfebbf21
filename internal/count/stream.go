package count

import (
	"runtime"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// recordCounter counts a JSONL document record by record as transcript.Stream reads it,
// keeping only the counts: memory grows with the number of records, not their size.
// Records are counted by one worker per core, so exact BPE counting uses every core. The
// job queue is short, so few lines are held at a time; each result goes to its record's
// slot, so a slow record (a large CJK result under BPE) holds up no other worker, and the
// order the counts arrive in does not matter.
//
// Use: pass record to transcript.Stream, then call close, then tally with the outline.
type recordCounter struct {
	newCounter func(transcript.Format) (tokens.Counter, error)
	counter    tokens.Counter
	provider   string
	previews   bool

	jobs    chan recordJob
	workers sync.WaitGroup

	mu      sync.Mutex
	records [][]counted // by record: its messages counted (nil when it carries none)
}

// newRecordCounter makes a counter for one document; newCounter picks the tokenizer once
// the format is known (cli.Context.Counter).
func newRecordCounter(newCounter func(transcript.Format) (tokens.Counter, error)) *recordCounter {
	return &recordCounter{newCounter: newCounter, previews: true}
}

// record is the transcript.Stream callback.
func (s *recordCounter) record(seq int, rec *transcript.Transcript) error {
	if s.counter == nil {
		c, err := s.newCounter(rec.Format)
		if err != nil {
			return err
		}
		s.start(c, rec.Format)
	}
	if len(rec.Messages) == 0 {
		return nil
	}
	s.jobs <- recordJob{seq, rec} // blocks while every worker is busy and the queue is full
	return nil
}

type recordJob struct {
	seq int
	rec *transcript.Transcript
}

func (s *recordCounter) start(c tokens.Counter, f transcript.Format) {
	s.counter, s.provider = c, providerOf(f)
	workers := max(runtime.GOMAXPROCS(0), 1)
	s.jobs = make(chan recordJob, workers)
	for range workers {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			for j := range s.jobs {
				rec := j.rec
				out := make([]counted, len(rec.Messages))
				for k := range rec.Messages {
					out[k] = countMessage(rec, &rec.Messages[k], s.counter, s.provider, s.previews)
					// A short preview can be a piece of the line; keep a copy, not the line.
					out[k].preview = strings.Clone(out[k].preview)
				}
				s.store(j.seq, out)
			}
		}()
	}
}

func (s *recordCounter) store(seq int, out []counted) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.records) <= seq {
		s.records = append(s.records, nil)
	}
	s.records[seq] = out
}

// close waits for the records in flight and stops the workers. Call it once Stream has
// returned, whether or not it failed.
func (s *recordCounter) close() {
	if s.jobs != nil {
		close(s.jobs)
		s.workers.Wait()
	}
}

// tally assembles the counted records into the outline's messages: a message's blocks
// are the blocks of its parts in order, its preview the first part's that has one.
func (s *recordCounter) tally(o *transcript.Outline) tally {
	tl := tally{format: o.Format, messages: make([]counted, len(o.Messages)), usage: o.Usage}
	for i := range o.Messages {
		m := &o.Messages[i]
		c := counted{role: m.Role, line: lineOf(o.Records, m)}
		for _, p := range o.Parts[i] {
			part := &s.records[p.Record][p.Message]
			c.blocks = append(c.blocks, part.blocks...)
			if c.preview == "" {
				c.preview = part.preview
			}
		}
		tl.messages[i] = c
	}
	return tl
}

// Streamed is what a tier keeps of the first pass over a streamed JSONL document: each
// record's messages (their structure, not their text), and their counts, made record by
// record as transcript.Stream reads them (on every core), to the figures a tier takes from
// a parsed document: Total, PerMessage, and each block's BlockTokens.
type Streamed struct {
	rc      *recordCounter
	carried [][]transcript.Message
}

// NewStreamed starts counting a document; newCounter picks the tokenizer once the format
// is known (cli.Context.Counter).
func NewStreamed(newCounter func(transcript.Format) (tokens.Counter, error)) *Streamed {
	return &Streamed{rc: &recordCounter{newCounter: newCounter}}
}

// Record is the transcript.Stream callback.
func (s *Streamed) Record(seq int, rec *transcript.Transcript) error {
	s.carried = append(s.carried, rec.Messages)
	return s.rc.record(seq, rec)
}

// Conversation is the streamed conversation without its text (Outline.Conversation).
func (s *Streamed) Conversation(o *transcript.Outline) *transcript.Transcript {
	return o.Conversation(s.carried)
}

// CounterFor is the counter the records were counted with, or, when no record carried a
// message to count, a new one for the document's format.
func (s *Streamed) CounterFor(f transcript.Format) (tokens.Counter, error) {
	if s.rc.counter != nil {
		return s.rc.counter, nil
	}
	return s.rc.newCounter(f)
}

// Close waits for the records in flight. Call it once Stream has returned, whether or not
// it failed.
func (s *Streamed) Close() { s.rc.close() }

// Counts returns the streamed conversation's counts, as CountsOf gives them for the parsed
// document. c is the counter of the run (CounterFor).
func (s *Streamed) Counts(o *transcript.Outline, c tokens.Counter) Counts {
	return countsOf(s.rc.tally(o), c)
}
