package measure

import (
	"runtime"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Streamed is what the first pass over a streamed JSONL document keeps (transcript.Stream):
// each record's messages (their structure, not their text) when Carry is set, and their
// counts when Count is set. Memory grows with the number of records, not their size.
//
// Records are counted by one worker per core, so exact BPE counting uses every core. The
// job queue is short, so few lines are held at a time; each result goes to its record's
// slot, so a slow record (a large CJK result under BPE) holds up no other worker, and the
// order the counts arrive in does not matter.
//
// A record a later record drops from the conversation (a Codex compaction) is not
// counted (transcript.LiveRecords). When where the last compaction is (or that there is
// none) is known before the first record, each record is counted as it is read;
// otherwise the records of a format that compacts wait until the end of the document (or
// until MaxHeld bytes of them do), and the counting of most of them comes after the
// reading instead of beside it.
//
// Use: pass Record to transcript.Stream, then call Close, then read the Tally and the
// Conversation with the outline.
type Streamed struct {
	// NewCounter picks the tokenizer once the format is known (cli.Context.Counter).
	NewCounter func(transcript.Format) (tokens.Counter, error)
	// Count counts each record; Carry keeps its messages; Previews keeps each message's
	// first words and each result's characters (ctx-count's report).
	Count, Carry, Previews bool
	// Compaction and CompactionKnown are transcript.LiveRecords.Compaction and Known,
	// when the rollout was looked at from its end before the first record; Reread is
	// transcript.LiveRecords.Reread (a document read twice).
	Compaction      int
	CompactionKnown bool
	Reread          func(line transcript.Span) (string, error)
	err             error             // of reading a record again
	faults          transcript.Faults // the workers', for Close to rethrow

	counter  tokens.Counter
	provider string
	carried  [][]transcript.Message

	jobs    chan recordJob
	workers sync.WaitGroup
	live    *transcript.LiveRecords // passes the records to count on to count

	mu       sync.Mutex
	records  [][]Message      // by record: its messages counted (nil when it carries none)
	attached map[int]Attached // by record: its attachment counted, when it has one
}

type recordJob struct {
	seq int
	rec *transcript.Transcript
}

// Record is the transcript.Stream callback.
func (s *Streamed) Record(seq int, rec *transcript.Transcript) error {
	if s.Carry {
		s.carried = append(s.carried, rec.Messages)
	}
	if !s.Count {
		return nil
	}
	if s.counter == nil {
		c, err := s.NewCounter(rec.Format)
		if err != nil {
			return err
		}
		s.start(c, rec.Format)
	}
	return s.live.Record(seq, rec)
}

// count passes a record to the workers.
func (s *Streamed) count(seq int, rec *transcript.Transcript) error {
	if len(rec.Messages) > 0 || len(rec.Attachments) > 0 {
		s.jobs <- recordJob{seq, rec} // blocks while every worker is busy and the queue is full
	}
	return nil
}

func (s *Streamed) start(c tokens.Counter, f transcript.Format) {
	s.counter, s.provider = c, ProviderOf(f)
	s.live = &transcript.LiveRecords{Fn: s.count, Compaction: s.Compaction, Known: s.CompactionKnown, Reread: s.Reread, KeepPrior: true}
	workers := max(runtime.GOMAXPROCS(0), 1)
	s.jobs = make(chan recordJob, workers)
	for range workers {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			defer transcript.GuardFaults()()
			defer s.drain() // after a fault (the input cut short), so that Stream is not blocked
			defer s.faults.Keep()
			for j := range s.jobs {
				rec := j.rec
				out := make([]Message, len(rec.Messages))
				for k := range rec.Messages {
					out[k] = countMessage(rec, &rec.Messages[k], s.counter, s.provider, s.Previews)
					// A short preview can be a piece of the line; keep a copy, not the line.
					out[k].Preview = strings.Clone(out[k].Preview)
				}
				s.store(j.seq, out)
				for k := range rec.Attachments {
					a := countAttachment(rec, &rec.Attachments[k], s.counter, s.provider)
					a.Type = strings.Clone(a.Type)
					s.mu.Lock()
					if s.attached == nil {
						s.attached = map[int]Attached{}
					}
					s.attached[j.seq] = a
					s.mu.Unlock()
				}
			}
		}()
	}
}

func (s *Streamed) store(seq int, out []Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.records) <= seq {
		s.records = append(s.records, nil)
	}
	s.records[seq] = out
}

// Close waits for the records in flight and stops the workers. Call it once Stream has
// returned, whether or not it failed.
func (s *Streamed) Close() {
	if s.jobs != nil {
		s.err = s.live.Flush() // (count never fails: Reread may)
		close(s.jobs)
		s.workers.Wait()
		s.jobs = nil
		s.faults.Rethrow()
	}
}

// Err is the error of reading again, at Close, a record that waited for it (Reread).
func (s *Streamed) Err() error { return s.err }

// Counter is the counter the records were counted with, or, when none was (no record
// carried a message, or Count is off), a new one for the document's format.
func (s *Streamed) Counter(f transcript.Format) (tokens.Counter, error) {
	if s.counter != nil {
		return s.counter, nil
	}
	return s.NewCounter(f)
}

// Release lets go of the messages carried, once the conversation made of them is done
// with; the counts stay.
func (s *Streamed) Release() { s.carried = nil }

// Conversation is the streamed conversation without its text (Outline.Conversation), from
// the messages carried.
func (s *Streamed) Conversation(o *transcript.Outline) *transcript.Transcript {
	if !s.Carry {
		return o.Conversation(nil) // the messages without their blocks, which were not kept
	}
	return o.Conversation(s.carried)
}

// Tally assembles the counted records into the outline's messages, as Of counts the parsed
// document: a message's blocks are the blocks of its parts in order, its preview the first
// part's that has one. c is the run's counter (Counter).
func (s *Streamed) Tally(o *transcript.Outline, c tokens.Counter) *Tally {
	tl := &Tally{Format: o.Format, Counter: c, Messages: make([]Message, len(o.Messages)), Usage: o.Usage}
	for i := range o.Messages {
		m := &o.Messages[i]
		mc := Message{Role: m.Role, Line: lineOf(o.Records, m)}
		for _, p := range o.Parts[i] {
			part := &s.records[p.Record][p.Message]
			mc.Blocks = append(mc.Blocks, part.Blocks...)
			if mc.Preview == "" {
				mc.Preview = part.Preview
			}
		}
		tl.Messages[i] = mc
	}
	for _, a := range o.Attachments {
		at := s.attached[a.Record]
		at.Before = a.Before
		tl.Attachments = append(tl.Attachments, at)
	}
	dropStaleReasoning(tl.Messages)
	tl.anchor()
	if pr := o.Prior; tl.Anchor == nil && pr != nil {
		// The conversation the compaction replaced, from its records' counts: a Codex
		// rollout's were kept for it (transcript.LiveRecords.KeepPrior).
		pt := &Tally{Format: o.Format, Counter: c, Messages: make([]Message, len(pr.Messages)), Usage: []transcript.Usage{pr.Usage}}
		for i := range pr.Messages {
			mc := Message{Role: pr.Messages[i].Role}
			for _, p := range pr.Parts[i] {
				if p.Record >= len(s.records) || p.Message >= len(s.records[p.Record]) {
					return tl // not counted: no record was kept of it
				}
				mc.Blocks = append(mc.Blocks, s.records[p.Record][p.Message].Blocks...)
			}
			pt.Messages[i] = mc
		}
		for _, a := range pr.Attachments {
			at, ok := s.attached[a.Record]
			if !ok {
				return tl
			}
			at.Before = a.Before
			pt.Attachments = append(pt.Attachments, at)
		}
		tl.carryHidden(pt)
	}
	return tl
}

// drain takes the jobs left, uncounted, once a worker has stopped on a fault.
func (s *Streamed) drain() {
	for range s.jobs {
	}
}
