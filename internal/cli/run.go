package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/pipeline"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The run loop. Every filter runs the same way: for each input, read it (a Claude Code or
// Codex transcript streamed in two passes, anything else whole: a document read whole is
// the degenerate streamed one), let the tier plan what to change (Filter.Plan), write the
// document with the plan's edits where writeDocument would, and write --stats. The tier
// decides; the loop reads, measures and writes.

// Filter is what a tier gives the run loop.
type Filter struct {
	// Reports marks a mode that writes a report, not documents (a dry run, a check): it
	// takes several files without --in-place, reads each once, and writes the Plans'
	// Reports, in order, to stdout or -o.
	Reports bool
	// Counted says Plan reads the document's counts (Doc.Counts), so a streamed document
	// is counted in its first pass, on every core. Without it a document is counted only
	// when Plan asks, or for --stats.
	Counted bool
	// Previews, with Counted, keeps each message's first words and each result's
	// characters too (ctx-count's report).
	Previews bool
	// TallyOnly says Plan reads the counts (Doc.Tally) but not the conversation's blocks,
	// so a streamed document's messages are not kept (Doc.T has its messages without
	// their blocks).
	TallyOnly bool
	// Whole reads every document whole: the tier needs all of its text.
	Whole bool
	// HoldsMore marks a tool whose process holds much more than the document it reads
	// (ctx-replay runs a pipeline in process on every request of it): no memory limit is
	// set from the document's size (tuneGC), which the process would live above.
	HoldsMore bool
	// Record, when set, sees each record of a streamed document's first pass with the
	// run's counter, to keep what the plan needs of its text. A document read whole is
	// given to it as one record.
	Record func(seq int, rec *transcript.Transcript, c tokens.Counter) error
	// LiveRecords spares Record the records a later record drops from the conversation
	// (a Codex compaction; see transcript.LiveRecords): for a tier that reads only the
	// conversation the document ends with. It is a saving, not a promise: a record that a
	// compaction appended to the file while it was read drops may still reach Record.
	LiveRecords bool
	// Plan decides what to do with one document.
	Plan func(d *Doc) (*Plan, error)
	// Done, when set, runs once every document is written: a check's verdict.
	Done func() error
	// KeepGoing, in a Reports mode, reports an input that cannot be read or measured
	// (missing, not a document) on stderr, as ripgrep and jq do, and goes on with the
	// others; their reports are written and the run then exits with the worst status of
	// the failures. Usage errors still stop the run.
	KeepGoing bool
	// Sessions reads a directory argument as the session logs in it: the newest, or with
	// AllSessions each of them, newest first (see expand).
	Sessions, AllSessions bool
	// TextHint, when set, is the hint for an input that is not JSON at all (ctx-count
	// names its --text mode), in place of naming --format.
	TextHint string
}

// Plan is what a tier decided for one document. With no edits the document is written as
// it came, byte for byte.
type Plan struct {
	// Edits are the changes, decided from the conversation (and its excerpts).
	Edits []transcript.Edit
	// Or, where the text of some regions must be read to decide and memory must stay
	// bounded: Regions (in document order, not overlapping) and Edit, which gets each
	// region's text and offset and returns the edits inside it (see transcript.Splice).
	Regions []transcript.Span
	Edit    func(i int, text string, base int) ([]transcript.Edit, error)
	// EditConcurrently says Edit may be called for several regions at once, from other
	// goroutines, ahead of the writing (transcript.RegionEdits): a tier whose Edit counts
	// or cuts a result uses the cores the writing leaves idle. Commit, when set, is called
	// for each region in document order, on the run's goroutine, once its Edit has
	// returned: the place for side effects that must happen in order (a store's index).
	EditConcurrently bool
	Commit           func(i int) error
	// Output, when set, is a new document written in place of the input (ctx-convert).
	Output []byte
	// Check, when set, is applied to the edited bytes of a document read whole (see
	// checkFunc); when it changes them the output is counted again for --stats.
	Check checkFunc
	// Report is what a Reports mode prints for this document.
	Report []byte
	// Written, when set, runs once the document is written (staged for -o and
	// --in-place), before its --stats: to finish side effects and add to the stats.
	Written func(st *Stats) error
	// Close, when set, frees what the plan holds, whether or not the run got that far.
	Close func()
	// TokensDelta is the change in the document's tokens the edits make; with
	// CountOutput the output is counted instead (parsed again: only where the tier
	// cannot work it out).
	TokensDelta int
	CountOutput bool
	// Stats are the run's statistics; the loop fills in the file, the format and the
	// tokens before and after.
	Stats Stats
}

// checkFunc is a last pass over the edited bytes of a document read whole: keeping valid a
// document whose edits broke one of the API's rules in a valid input (ctx-repair's rules,
// passed in by the tier: cli does not import the tiers), or verifying the output. It
// returns the output, changed or not, and the output parsed when it parsed it (nil when
// not), which --stats then counts instead of parsing it again.
type checkFunc func(in *transcript.Transcript, out []byte) ([]byte, *transcript.Transcript, error)

// Run runs f over the inputs.
func (c *Context) Run(f Filter) error {
	c.textHint = f.TextHint
	if c.Common != nil && c.Common.Redact && !f.Reports {
		c.readWhole = true // redactWritten works on the whole output
	}
	if c.Common != nil && c.Common.Secrets != "" {
		if _, err := c.Redactor(); err != nil { // a bad file is refused whatever the tool writes
			return err
		}
	}
	names, err := c.documentNames(&f)
	if err != nil {
		return err
	}
	var reports bytes.Buffer
	fails := failures{c: c, keepGoing: f.KeepGoing && f.Reports}
	for _, arg := range names {
		docs, err := c.expand(&f, arg)
		if err != nil {
			if err := fails.add(err); err != nil {
				return err
			}
			continue
		}
		for _, name := range docs {
			p, err := c.runOne(&f, name)
			if err != nil {
				if err := fails.add(err); err != nil {
					return err
				}
				continue
			}
			reports.Write(p.Report)
		}
	}
	if f.Reports {
		if err := c.WriteReport(reports.Bytes()); err != nil {
			return err
		}
	}
	var done error
	if f.Done != nil {
		done = f.Done()
	}
	return fails.end(done)
}

// RunText makes a report of each input read as plain text, not as a document (ctx-count
// --text): fn gets the name and the bytes of each input, in argument order, and returns
// its report; the reports are written as a Reports mode's are. An input that cannot be
// read is reported on stderr and the others go on, as under Filter.KeepGoing.
func (c *Context) RunText(fn func(name string, text []byte) ([]byte, error)) error {
	names, err := c.documentNames(&Filter{Reports: true, KeepGoing: true})
	if err != nil {
		return err
	}
	var reports bytes.Buffer
	fails := failures{c: c, keepGoing: true}
	for _, name := range names {
		rep, err := c.readText(name, fn)
		if err != nil {
			if err := fails.add(err); err != nil {
				return err
			}
			continue
		}
		reports.Write(rep)
	}
	if err := c.WriteReport(reports.Bytes()); err != nil {
		return err
	}
	return fails.end(nil)
}

func (c *Context) readText(name string, fn func(name string, text []byte) ([]byte, error)) ([]byte, error) {
	r, err := c.open(name)
	if err != nil {
		return nil, err
	}
	data, err := readWhole(r, r)
	r.Close()
	switch {
	case err != nil && name == "-":
		return nil, RuntimeError(fmt.Errorf("read stdin: %w", err))
	case err != nil:
		return nil, RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}
	return fn(name, data)
}

// failures are the inputs of a report that failed, when the run goes past them
// (Filter.KeepGoing): each is reported on stderr as it comes, and the run ends with the
// worst status among them, its output written (partial).
type failures struct {
	c         *Context
	keepGoing bool
	worst     int
}

// add reports err and returns nil when the run may go past it; else err, to stop the run.
// Usage errors and an interrupt stop it.
func (fs *failures) add(err error) error {
	code, hint := classify(err)
	if !fs.keepGoing || code == ExitUsage || errors.Is(err, context.Canceled) {
		return err
	}
	report(fs.c.Stderr, fs.c.tool.Name, err, hint)
	fs.worst = max(fs.worst, code)
	return nil
}

// end is the run's result: done (a check's verdict, or nil) when nothing failed, else the
// worst failure, done reported on stderr beside them.
func (fs *failures) end(done error) error {
	if fs.worst == ExitOK {
		return done
	}
	if done != nil {
		code, hint := classify(done)
		report(fs.c.Stderr, fs.c.tool.Name, done, hint)
		fs.worst = max(fs.worst, code)
	}
	return partial(fs.worst)
}

// WriteReport writes what a tool prints in place of a document (a list, a report): to
// -o when given, else to stdout.
func (c *Context) WriteReport(b []byte) error {
	if c.Common.Output != "" && !c.Common.InPlace {
		return c.stage(c.Common.Output, b)
	}
	if _, err := c.Stdout.Write(b); err != nil {
		return RuntimeError(fmt.Errorf("write stdout: %w", err))
	}
	return nil
}

// runOne reads, plans and writes one document.
func (c *Context) runOne(f *Filter, name string) (*Plan, error) {
	d, err := c.readDoc(f, name)
	if err != nil {
		return nil, err
	}
	defer d.close()
	p, err := f.Plan(d)
	if err != nil {
		return nil, err
	}
	if p.Close != nil {
		defer p.Close()
	}
	if p.Edit == nil {
		d.release()
	}
	if !f.Reports {
		if err := d.write(p); err != nil {
			return nil, err
		}
	}
	st := p.Stats
	if p.Written != nil {
		if err := p.Written(&st); err != nil {
			return nil, err
		}
	}
	if !c.StatsOn() {
		return p, nil
	}
	before, err := d.Tokens()
	if err != nil {
		return nil, err
	}
	st.File, st.Format = name, string(d.T.Format)
	st.TokensBefore, st.TokensAfter = before, before+p.TokensDelta
	if (p.CountOutput || d.recount) && d.out != nil {
		if st.TokensAfter, err = d.countOutput(); err != nil {
			return nil, err
		}
	}
	return p, c.writeStats(st)
}

// StatsOn reports whether the run writes --stats.
func (c *Context) StatsOn() bool { return c.Common.Stats || c.Common.StatsFile != "" }

// Doc is one input as a tier sees it: the conversation, its measures, and the reading of
// its text. T has the whole text when the document was read whole; a streamed one has its
// structure, and the text of what Excerpt read.
type Doc struct {
	Name string // as given: a path, or "-" for stdin
	T    *transcript.Transcript

	c         *Context
	whole     *input    // the bytes of a document read whole
	stream    *document // or the two passes of a streamed one
	streamed  *measure.Streamed
	tally     *measure.Tally
	counter   tokens.Counter
	headModel string    // the model a streamed document's first records name
	api       *APICount // what count_tokens said of it, under --tokenizer api
	window    *tokens.Budget
	total     *int                   // the document's tokens, once counted
	out       []byte                 // the output of a document read whole, once written
	outT      *transcript.Transcript // and its parse, when Plan.Check made one
	recount   bool                   // the output differs from what the edits made
	previews  bool
}

// readDoc reads one input for f: streamed when it is a JSONL transcript (and neither f nor
// a terminal's indented output needs it whole), else whole.
func (c *Context) readDoc(f *Filter, name string) (*Doc, error) {
	d := &Doc{Name: name, c: c}
	d.previews = f.Previews
	d.streamed = &measure.Streamed{NewCounter: d.counterFor, Carry: !f.TallyOnly, Count: f.Counted || c.StatsOn(), Previews: f.Previews}
	record := d.streamed.Record
	var live *transcript.LiveRecords
	// The records held past transcript.MaxHeld wait, without their lines, until it is
	// known whether a compaction drops them; those it does not are read again from the
	// file or the spool of stdin (a document read once is not kept: its records go on).
	var opened *document
	reread := func(line transcript.Span) (text string, err error) {
		if opened == nil {
			return "", errors.New("internal: a record read again after its document failed")
		}
		err = opened.visit([]transcript.Span{line}, func(t string, _ int) error { text = t; return nil })
		return text, err
	}
	if !f.Reports {
		d.streamed.Reread = reread
	}
	if f.Record != nil {
		tier := func(seq int, rec *transcript.Transcript) error {
			counter, err := d.counterFor(rec.Format)
			if err != nil {
				return err
			}
			return f.Record(seq, rec, counter)
		}
		if f.LiveRecords {
			live = &transcript.LiveRecords{Fn: tier}
			if !f.Reports {
				live.Reread = reread
			}
			tier = live.Record
		}
		record = func(seq int, rec *transcript.Transcript) error {
			if err := tier(seq, rec); err != nil {
				return err
			}
			return d.streamed.Record(seq, rec)
		}
	}
	// A Codex rollout read from a file is looked at from its end for its last compaction
	// (at, 0 for none), so that the records before it are not even held, and the counting
	// need not hold the others (measure.Streamed.CompactionKnown); the record found there
	// must be a compaction when the stream reaches it, else the file changed meanwhile.
	compaction, compacted := 0, false
	lookAhead := func(at int) {
		compaction, d.streamed.Compaction, d.streamed.CompactionKnown = at, at, true
		if live != nil {
			live.Compaction, live.Known = at, true
		}
	}
	read := record
	record = func(seq int, rec *transcript.Transcript) error {
		if compaction > 0 && rec.Base == compaction {
			if !rec.Compacts() {
				return RuntimeError(fmt.Errorf("read %s: %w", displayName(name), errChanged))
			}
			compacted = true
		}
		return read(seq, rec)
	}
	doc, err := c.readDocument(name, readMode{whole: f.Whole || c.readWhole, once: f.Reports, holdsMore: f.HoldsMore, model: &d.headModel, compaction: lookAhead}, record)
	if err == nil && compaction > 0 && !compacted && doc.Outline != nil {
		err = RuntimeError(fmt.Errorf("read %s: %w", displayName(name), errChanged))
		doc.close()
	}
	if err == nil {
		opened = doc
	}
	if err == nil && live != nil && doc.Outline != nil {
		if err = live.Flush(); err != nil {
			doc.close()
		}
	}
	d.streamed.Close()
	if err == nil && d.streamed.Err() != nil {
		err = d.streamed.Err()
		doc.close()
	}
	if err != nil {
		return nil, err
	}
	if doc.Transcript != nil {
		d.whole, d.T = &doc.Input, doc.Transcript
		doc.close()
		d.streamed = nil
		if f.Record != nil {
			counter, err := d.Counter()
			if err != nil {
				return nil, err
			}
			if err := f.Record(0, d.T, counter); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	d.stream = doc
	d.T = d.streamed.Conversation(doc.Outline)
	return d, nil
}

func (d *Doc) close() {
	if d.stream != nil {
		d.stream.close()
	}
}

// Display names the input for a message: its path, or stdin.
func (d *Doc) Display() string { return DisplayName(d.Name) }

// DisplayName names an input for a message: its path, or stdin for "-".
func DisplayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// Warnf prints a warning about the document: "ctx-x: warning: NAME: ...".
func (d *Doc) Warnf(format string, a ...any) {
	d.c.Warnf("%s: %s", d.Display(), fmt.Sprintf(format, a...))
}

// Streamed reports whether the document is read in two passes (T without its text).
func (d *Doc) Streamed() bool { return d.stream != nil }

// Context is the run the document belongs to.
func (d *Doc) Context() *Context { return d.c }

// counterFor is the run's counter for the document, made once its format is known: for
// the model the document names, or while a streamed one is read, the model its first
// records name.
func (d *Doc) counterFor(f transcript.Format) (tokens.Counter, error) {
	if d.counter == nil {
		model := d.headModel
		if d.T != nil && d.T.Model != "" {
			model = d.T.Model
		}
		c, err := d.c.Counter(f, model)
		if err != nil {
			return nil, err
		}
		if d.c.Common.Tokenizer == "api" {
			if c, err = d.calibrate(c); err != nil {
				return nil, err
			}
		}
		d.counter = c
	}
	return d.counter, nil
}

// Counter is the token counter of the document: --tokenizer, or its format's default.
func (d *Doc) Counter() (tokens.Counter, error) { return d.counterFor(d.T.Format) }

// Window is the window the document is measured against (Context.Window).
func (d *Doc) Window() (tokens.Budget, error) {
	if d.window == nil {
		w, err := d.c.Window(d.T.Model, d.T.Usage)
		if err != nil {
			return w, err
		}
		d.window = &w
	}
	return *d.window, nil
}

// Tally is the document counted message by message: made in the first pass of a streamed
// document (on every core), or now. The Doc keeps it.
func (d *Doc) Tally() (*measure.Tally, error) {
	if d.tally == nil {
		tl, err := d.count()
		if err != nil {
			return nil, err
		}
		d.tally = tl
	}
	return d.tally, nil
}

// count makes the tally (Tally) without keeping it.
func (d *Doc) count() (*measure.Tally, error) {
	if d.tally != nil {
		return d.tally, nil
	}
	counter, err := d.Counter()
	if err != nil {
		return nil, err
	}
	var tl *measure.Tally
	switch {
	case d.stream == nil:
		tl = measure.Of(d.T, counter, d.previews)
	case !d.streamed.Count:
		return nil, fmt.Errorf("internal: the counts of %s were not made in its first pass (Filter.Counted)", d.Display())
	default:
		tl = d.streamed.Tally(d.stream.Outline, counter)
	}
	tl.AddOverhead(d.c.Common.Overhead.Int())
	return tl, nil
}

// Counts are the document's tokens: its total, each message's and each block's. They are
// made anew for each call (a tier asks once), so that what they take is the tier's to keep
// or let go; the Doc keeps only the total.
func (d *Doc) Counts() (measure.Counts, error) {
	tl, err := d.count()
	if err != nil {
		return measure.Counts{}, err
	}
	n := tl.Counts()
	d.total = &n.Total
	return n, nil
}

// Tokens is the document's total tokens.
func (d *Doc) Tokens() (int, error) {
	if d.total == nil {
		tl, err := d.count()
		if err != nil {
			return 0, err
		}
		n := tl.Total()
		d.total = &n
	}
	return *d.total, nil
}

// release lets go of a streamed document's conversation once its plan is made, when
// writing it needs no more than the plan's edits: the second pass then runs in the memory
// the first pass's structure took. What --stats needs (the format, the counts) stays.
func (d *Doc) release() {
	if d.stream == nil {
		return
	}
	d.T = &transcript.Transcript{Format: d.T.Format, Model: d.T.Model, Usage: d.T.Usage}
	d.streamed.Release()
}

// Release lets go of the document for a tier that has read what it needs of it: one whose
// plan makes a new document (ctx-convert), which then takes the room instead of being held
// beside the input, or one with work left once the document is written (ctx-snip indexing
// what it stored, in Plan.Written). T keeps the format, the model and the usage; the counts
// --stats needs must have been made (Counts) before. Nothing of the document can be read
// after it, whether it was read whole or streamed.
func (d *Doc) Release() {
	big := d.Size() > bigInput
	if d.stream != nil {
		d.release()
	} else {
		d.whole = &input{Name: d.Name}
		// The model name is a piece of the input's text, which it would keep alive whole;
		// so are the window's name of it and the roles of a tally kept.
		d.T = &transcript.Transcript{Format: d.T.Format, Model: strings.Clone(d.T.Model), Usage: d.T.Usage}
		if d.window != nil {
			w := *d.window
			w.Model = strings.Clone(w.Model)
			d.window = &w
		}
		if d.tally != nil {
			for i := range d.tally.Messages {
				d.tally.Messages[i].Role = strings.Clone(d.tally.Messages[i].Role)
			}
		}
	}
	if big {
		// What was let go is most of the heap and the new document is about to be made:
		// collected now, its room is reused rather than added to (a collection that finds
		// little alive is short).
		runtime.GC()
	}
}

// Measure gives the document's measures.
func (d *Doc) Measure() (pipeline.Measures, error) {
	var m pipeline.Measures
	var err error
	if m.Counter, err = d.Counter(); err != nil {
		return m, err
	}
	if m.Window, err = d.Window(); err != nil {
		return m, err
	}
	m.Counts, err = d.Counts()
	return m, err
}

// Utilization is the document's tokens over its effective window, with both.
func (d *Doc) Utilization() (u float64, tokens int, w tokens.Budget, err error) {
	if tokens, err = d.Tokens(); err != nil {
		return 0, 0, w, err
	}
	if w, err = d.Window(); err != nil {
		return 0, tokens, w, err
	}
	return measure.Ratio(tokens, w.Effective), tokens, w, nil
}

// Visit reads the given spans of the document and calls fn with each part's text and
// offset, in document order; overlapping or touching spans are read as one part. fn must
// not keep text past its return unless it copies it, but for a streamed document, whose
// each part is a new string fn may keep (ctx-convert keeps a stretch until the messages
// read from it are written).
func (d *Doc) Visit(spans []transcript.Span, fn func(text string, base int) error) error {
	if d.stream != nil {
		return d.stream.visit(spans, fn)
	}
	for _, p := range transcript.MergeSpans(spans) {
		if err := fn(d.T.Doc[p.Start:p.End], p.Start); err != nil {
			return err
		}
	}
	return nil
}

// Excerpt gives T the text of the given spans (transcript.AddExcerpt); a document read
// whole has it all already.
func (d *Doc) Excerpt(spans []transcript.Span) error {
	if d.stream == nil {
		return nil
	}
	return d.stream.excerpt(d.T, spans)
}

// Whole reads a streamed document again, whole, and parses it: for a tier that learns from
// the first pass that it needs all its text after all (ctx-repair fixing a transcript). T
// is then the parsed document, with its text.
func (d *Doc) Whole() error {
	if d.stream == nil {
		return nil
	}
	in, t, err := d.stream.whole()
	if err != nil {
		return err
	}
	// The bytes are in memory now: the file (or the spool of stdin) the passes read is
	// not needed again, and close, which knows only d.stream, would not free it.
	d.stream.close()
	d.whole, d.T, d.stream = &in, t, nil
	return nil
}

// Size is the document's size in bytes.
func (d *Doc) Size() int {
	if d.stream != nil {
		return int(d.stream.length())
	}
	return len(d.whole.Data)
}

// write writes the document with p's edits, where writeDocument would.
func (d *Doc) write(p *Plan) error {
	if p.Edit != nil && len(p.Edits) > 0 {
		return fmt.Errorf("internal: a plan with both Edits and Regions: they are one or the other")
	}
	if d.stream != nil {
		switch {
		case p.Output != nil: // made from the document's two passes (ctx-convert)
			return d.c.writeDocument(input{Name: d.Name}, p.Output)
		case p.Edit != nil:
			return d.stream.rewrite(p.Regions, p.regionEdits())
		}
		return d.stream.rewriteEdits(p.Edits)
	}
	if !d.c.Common.Redact {
		if done, err := d.writeSpliced(p); done || err != nil {
			return err
		}
	}
	out, err := d.edited(p)
	if err != nil {
		return err
	}
	if p.Check != nil && !bytes.Equal(out, d.whole.Data) {
		checked, parsed, err := p.Check(d.T, out)
		if err != nil {
			return RuntimeError(fmt.Errorf("%s: %w", d.Display(), err))
		}
		d.recount = !bytes.Equal(checked, out)
		out, d.outT = checked, parsed
	}
	if d.c.Common.Redact {
		if out, err = d.redactWritten(out); err != nil {
			return err
		}
	}
	d.out = out
	return d.c.writeDocument(*d.whole, out)
}

// redactWritten is --redact: the output document with its secrets replaced by markers, in
// its bytes (the markers hold nothing JSON escapes, so every string stays valid), checked
// to parse again as the same format.
func (d *Doc) redactWritten(out []byte) ([]byte, error) {
	rd, err := d.c.Redactor()
	if err != nil {
		return nil, err
	}
	red := rd.Bytes(out)
	if bytes.Equal(red, out) {
		return out, nil
	}
	o, err := d.c.readOptions(d.Name)
	if err != nil {
		return nil, err
	}
	o.Format = d.T.Format
	t, err := transcript.Parse(red, o)
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("%s: internal error: the redacted document does not parse: %w", d.Display(), err))
	}
	d.recount, d.outT = true, t
	return red, nil
}

// writeSpliced writes a document read whole with p's edits spliced in a piece at a time
// (Transcript.WriteApplied) to held stdout or the -o file, which keep what they are given
// in a spool or a file: the edited document is not made in memory beside the input, which
// kept a JSON filter's peak at twice the input and more. It does nothing (done false) where
// the edited bytes are needed whole: no edit (the input itself is written), a new document
// (Plan.Output), a Check, an output counted again, --in-place (which leaves a file whose
// bytes did not change alone) and indented output for a terminal.
func (d *Doc) writeSpliced(p *Plan) (done bool, err error) {
	c := d.c
	if p.Output != nil || p.Check != nil || p.CountOutput || c.Common.InPlace || p.Edit == nil && len(p.Edits) == 0 {
		return false, nil
	}
	held, isHeld := c.Stdout.(*heldOutput)
	if c.Common.Output == "" && (c.StdoutTTY || !isHeld) {
		return false, nil
	}
	edits, err := d.decide(p)
	if err != nil {
		return true, err
	}
	write := func(w io.Writer) (int, error) {
		if err := d.T.WriteApplied(w, edits); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return 0, err
			}
			return 0, RuntimeError(err)
		}
		return len(edits), nil
	}
	if c.Common.Output != "" {
		return true, c.stageStream(c.Common.Output, write)
	}
	bw := bufio.NewWriterSize(&writeErrors{w: held, what: "hold stdout"}, 256<<10)
	if _, err := write(bw); err != nil {
		return true, err
	}
	return true, bw.Flush()
}

// decide returns p's edits of a document read whole: Edits, or those Edit decides in
// Regions (the two are one or the other: write).
func (d *Doc) decide(p *Plan) ([]transcript.Edit, error) {
	if p.Edit == nil {
		return p.Edits, nil
	}
	return transcript.DecideAll(d.T.Doc, p.Regions, p.regionEdits(), runtime.GOMAXPROCS(0))
}

// regionEdits is how p decides the edits of its regions.
func (p *Plan) regionEdits() transcript.RegionEdits {
	return transcript.RegionEdits{Decide: p.Edit, Commit: p.Commit, Concurrent: p.EditConcurrently}
}

// edited is a document read whole with p's edits made: the input itself (not a copy) when
// there are none.
func (d *Doc) edited(p *Plan) ([]byte, error) {
	if p.Output != nil {
		return p.Output, nil
	}
	edits, err := d.decide(p)
	if err != nil {
		return nil, err
	}
	if len(edits) == 0 {
		return d.whole.Data, nil
	}
	out, err := d.T.Apply(edits)
	if err != nil {
		return nil, RuntimeError(err)
	}
	return out, nil
}

// countOutput counts the output of a document read whole: parsed again, for a tier that
// cannot work out what its edits changed.
func (d *Doc) countOutput() (int, error) {
	if bytes.Equal(d.out, d.whole.Data) {
		return d.Tokens()
	}
	t := d.outT
	if t == nil {
		o, err := d.c.readOptions(d.Name)
		if err != nil {
			return 0, err
		}
		o.Format = d.T.Format
		if t, err = transcript.Parse(d.out, o); err != nil {
			return 0, RuntimeError(fmt.Errorf("%s: internal error: the output does not parse: %w", d.Display(), err))
		}
	}
	counter, err := d.Counter()
	if err != nil {
		return 0, err
	}
	return measure.Total(t, counter), nil
}

// ReadingWhole returns tool changed to read every document whole, as it reads a JSON
// document: the reference that tests hold its streamed reading of JSONL transcripts to.
func ReadingWhole(tool *Tool) *Tool {
	run := tool.run
	tool.run = func(c *Context) error {
		c.readWhole = true
		return run(c)
	}
	return tool
}
