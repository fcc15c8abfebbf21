package measure

import (
	"runtime"
	"slices"
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
// A record a later record may replace (Transcript.Compacts: a Codex compaction drops the
// history before it) is not counted at once: the newest records are held, up to holdBytes
// of their lines, and those a compaction drops are never counted. Generated and real Codex
// rollouts carry most of their bytes before their last compaction (half of scripts/bench.sh's),
// which every tier counted for nothing.
//
// Use: pass Record to transcript.Stream, then call Close, then read the Tally and the
// Conversation with the outline.
type Streamed struct {
	// NewCounter picks the tokenizer once the format is known (cli.Context.Counter).
	NewCounter func(transcript.Format) (tokens.Counter, error)
	// Count counts each record; Carry keeps its messages; Previews keeps each message's
	// first words (ctx-count's report).
	Count, Carry, Previews bool

	counter  tokens.Counter
	provider string
	carried  [][]transcript.Message

	jobs    chan recordJob
	workers sync.WaitGroup
	held    []recordJob // records not counted yet, oldest first, that a compaction may drop
	heldLen int         // the bytes of their lines

	mu      sync.Mutex
	records [][]Message // by record: its messages counted (nil when it carries none)
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
	if rec.Compacts() {
		s.compact()
	}
	if len(rec.Messages) == 0 {
		return nil
	}
	if !rec.Format.Compacts() {
		s.jobs <- recordJob{seq, rec} // blocks while every worker is busy and the queue is full
		return nil
	}
	s.held = append(s.held, recordJob{seq, rec})
	s.heldLen += len(rec.Doc)
	for s.heldLen > holdBytes {
		s.send(1)
	}
	return nil
}

// holdBytes bounds the lines of the records held uncounted: memory for counting less. A
// compaction further back than this from the one after it is counted anyway.
const holdBytes = 16 << 20

// send passes the n oldest records held to the workers.
func (s *Streamed) send(n int) {
	for i := range n {
		s.heldLen -= len(s.held[i].rec.Doc)
		s.jobs <- s.held[i]
		s.held[i] = recordJob{} // let go of the line
	}
	s.held = s.held[n:]
}

// compact forgets the records held that a compaction drops from the conversation: all
// but those that carry a header message, which are counted.
func (s *Streamed) compact() {
	for _, j := range s.held {
		if slices.ContainsFunc(j.rec.Messages, func(m transcript.Message) bool { return m.Header }) {
			s.jobs <- j
		}
	}
	clear(s.held) // let go of the lines
	s.held, s.heldLen = s.held[:0], 0
}

func (s *Streamed) start(c tokens.Counter, f transcript.Format) {
	s.counter, s.provider = c, ProviderOf(f)
	workers := max(runtime.GOMAXPROCS(0), 1)
	s.jobs = make(chan recordJob, workers)
	for range workers {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			for j := range s.jobs {
				rec := j.rec
				out := make([]Message, len(rec.Messages))
				for k := range rec.Messages {
					out[k] = countMessage(rec, &rec.Messages[k], s.counter, s.provider, s.Previews)
					// A short preview can be a piece of the line; keep a copy, not the line.
					out[k].Preview = strings.Clone(out[k].Preview)
				}
				s.store(j.seq, out)
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
		s.send(len(s.held))
		close(s.jobs)
		s.workers.Wait()
		s.jobs = nil
	}
}

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
	dropStaleReasoning(tl.Messages)
	tl.anchor()
	return tl
}
