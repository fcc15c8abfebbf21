package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// A filter that edits a JSONL transcript (Claude Code, Codex) reads it twice instead of
// holding it: a first pass streams the records (transcript.Stream) and the tool keeps what
// it needs to plan its edits; a second pass copies the document to the output with the
// edits spliced in (transcript.Splice), reading into memory only the spans it edits.
//
// A regular file is simply read again. Anything else (stdin, a pipe) is kept during the
// first pass in a spool: in memory up to pipeMemory (spoolMemory for an input already in
// memory), then in a temp file. The output goes where writeDocument would put it: a spool
// of held stdout (written only once the run has succeeded; with no edit, the spool of the
// input itself), or the -o/--in-place temp file. Peak memory is then what the tool keeps
// per message, whatever the size of the document; JSON documents, and output for a
// terminal (indented, which needs the whole document), are read whole as before.

// document is one input of a filter, read by readDocument: either read whole and parsed
// (Transcript set, Input holding the bytes, to be written with writeDocument), or a
// streamed JSONL transcript (Outline set), to be written with rewrite.
type document struct {
	Name       string
	Input      input
	Transcript *transcript.Transcript
	Outline    *transcript.Outline

	c    *Context
	file *os.File // a regular file, read again for the second pass (from base)
	base int64
	// keepOpen: file is stdin's, which close leaves open
	keepOpen bool
	spool    *spool // or the input kept during the first pass
	// spoolOut: the spool is held stdout now (an output with no edit), which frees it
	spoolOut bool
	size     int64  // bytes read in the first pass
	sum      uint64 // and their hash, to check the second pass reads the same bytes
	seed     maphash.Seed

	holdsMore bool // the process holds more than this document: set no memory limit from it
}

// documentNames lists the inputs a run of f works on, without reading them: every file
// argument with --in-place or in a Reports mode, else exactly one.
func (c *Context) documentNames(f *Filter) ([]string, error) {
	names, err := c.sources(f)
	if err != nil {
		return nil, err
	}
	if !f.Reports && !c.Common.InPlace && len(names) != 1 {
		return nil, WithHint(Usagef("one document at a time; use --in-place to edit several files"),
			fmt.Sprintf("see '%s --help'", c.tool.Name))
	}
	return names, nil
}

// readMode says how readDocument reads: whole, whatever the format; or, for a document
// read once (a report), streamed without keeping it for a second pass.
type readMode struct {
	whole, once bool
	holdsMore   bool    // the process holds more than the document (Filter.HoldsMore)
	model       *string // when set, gets the model a streamed document's first records name
	// compaction, when set, is told before the first record where the last record of a
	// Codex rollout in a regular file that compacts is (transcript.LastCompaction), or 0
	// when none does.
	compaction func(at int)
}

// readDocument reads input name (a file, or "-" for stdin). A Claude Code or Codex JSONL
// transcript is streamed: fn sees each record as transcript.Stream passes it, and the
// document's Outline is set; the tool then plans its edits and calls rewrite. Any other
// document, any document when mode.whole is set or when the output is indented for a
// terminal, is read whole and parsed, fn is not called, and Transcript is set. With
// mode.once a streamed document is not kept for a second pass. Errors name the input;
// fn's own are returned as they are. close the document when done.
func (c *Context) readDocument(name string, mode readMode, fn func(seq int, rec *transcript.Transcript) error) (*document, error) {
	o, err := c.readOptions(name)
	if err != nil {
		return nil, err
	}
	r, err := c.open(name)
	if err != nil {
		return nil, err
	}
	d := &document{Name: name, c: c, seed: maphash.MakeSeed(), holdsMore: mode.holdsMore}
	ok := false
	defer func() {
		if !ok {
			r.Close()
			d.close()
		}
	}()
	readErr := func(err error) error {
		var te *transcript.Error
		switch {
		case errors.As(err, &te):
			return inputError(name, o.Format, err, c.textHint)
		case name == "-":
			return RuntimeError(fmt.Errorf("read stdin: %w", err))
		}
		return RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}

	// A regular file (or stdin redirected from one) that holds a JSONL transcript is
	// streamed in place, mapped: its lines are no copies (transcript.InPlace). The second
	// pass reads the file again.
	src := io.Reader(r)
	var m *mapping
	var in *transcript.InPlace
	if !mode.whole && !(c.prettyStdout() && !mode.once) {
		if f := underlyingFile(r); f != nil {
			if m = mapInput(f); m != nil {
				in = transcript.NewInPlace(m.data)
				src = in
			}
		}
	}
	format, br, err := transcript.Sniff(src, o)
	if err != nil {
		if m != nil {
			m.unmap()
		}
		return nil, readErr(err)
	}
	if format == "" || mode.whole || c.prettyStdout() && !mode.once {
		if m != nil {
			// Read whole, from the file as it stands (sniffing it in place moved nothing):
			// a copy of the mapping would count its pages as well.
			m.unmap()
			br = r
		}
		ok = true
		return d, d.readWhole(br, r, readErr)
	}

	if mode.model != nil {
		*mode.model = transcript.HeadModel(br)
	}
	if f, isFile := r.(*os.File); isFile && isRegular(f) && format == transcript.Codex && mode.compaction != nil {
		// Looked at whatever its size: read from its end in a buffer, 10 MB with no
		// compaction take about 5 ms, and knowing lets each record be counted as it is read
		// instead of held to the end (10 MB: 5-7% less time, up to 13 MB less memory).
		if st, err := f.Stat(); err == nil {
			if at, err := transcript.LastCompaction(f, st.Size()); err == nil {
				mode.compaction(int(max(at, 0)))
			}
		}
	}
	var first io.Reader
	var inPlaceHash *maphash.Hash
	var grown *growingMapping
	switch {
	case m != nil:
		first = in
		// What the first pass has read is hashed as it passes (for the second to check it
		// reads the same) and its pages let go behind it, so that a mapped input costs no
		// more memory than one read through a buffer.
		if !mode.once {
			inPlaceHash = d.hasher()
		}
		in.Passed = func(chunk []byte, read int) {
			if inPlaceHash != nil {
				inPlaceHash.Write(chunk)
			}
			m.release(read - mappedLag)
		}
		tuneGC(len(m.data), false, false)
	case mode.once:
		first = br
		if f, isFile := r.(*os.File); isFile && isRegular(f) {
			if st, err := f.Stat(); err == nil {
				tuneGC(int(st.Size()), false, false)
			}
		}
	case isRegularFile(r):
		d.file = r.(*os.File)
		first = &hashingReader{r: br, h: d.hasher()}
		// A streamed document is not held: the memory limit bounds what its records' lines
		// and the regions read again leave behind (tuneGC).
		if st, err := d.file.Stat(); err == nil {
			tuneGC(int(st.Size()), false, false)
		}
	default:
		d.spool = &spool{limit: pipeMemory}
		if heldInMemory(r) {
			d.spool.limit = spoolMemory
		} else if grown = mapSpool(d.spool, br); grown != nil {
			// A pipe: kept in a temp file from the start, read in place as it arrives.
			in := transcript.NewGrowingInPlace(nil, grown.more)
			in.Passed = func(_ []byte, read int) { grown.release(read - mappedLag) }
			first = in
			break
		}
		first = io.TeeReader(br, d.spool)
	}
	var fnErr error
	outline, data, err := transcript.Stream(first, o, func(seq int, rec *transcript.Transcript) error {
		fnErr = fn(seq, rec)
		return fnErr
	})
	if m != nil {
		m.releaseAll() // (what the records kept is read again from the page cache)
	}
	if grown != nil {
		grown.releaseAll()
	}
	switch {
	case fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, readErr(err)
	case outline == nil:
		// Sniff and Stream see the same bytes, so they decide alike.
		return nil, fmt.Errorf("internal: %s: %d bytes read whole after sniffing %s", name, len(data), format)
	}
	switch h, isHash := first.(*hashingReader); {
	case isHash:
		d.size, d.sum = h.n, h.h.Sum64()
	case inPlaceHash != nil:
		d.file, d.base, d.size, d.sum = m.file, m.base, int64(len(m.data)), inPlaceHash.Sum64()
		d.keepOpen = m.file != r // stdin redirected from the file: not ours to close
	case mode.once:
		r.Close()
	default:
		if d.spool.err != nil {
			return nil, RuntimeError(fmt.Errorf("keep %s for a second reading: %w", displayName(name), d.spool.err))
		}
		tuneGC(int(d.spool.size), heldInMemory(r), false)
		r.Close()
	}
	d.Outline = outline
	d.c.readWarnings(name, outline.Warnings)
	ok = true
	return d, nil
}

// readWhole reads the rest of br (which reads r) into d.Input, closes r, and parses it.
func (d *document) readWhole(br io.Reader, r io.ReadCloser, readErr func(error) error) error {
	data, err := readWhole(br, r)
	r.Close()
	if err != nil {
		return readErr(err)
	}
	tuneGC(len(data), heldInMemory(r) || d.holdsMore, true)
	d.Input = input{Name: d.Name, Data: data}
	d.Transcript, err = d.c.parse(d.Input)
	return err
}

// prettyStdout reports whether documents written to stdout are indented for a terminal.
func (c *Context) prettyStdout() bool {
	return c.StdoutTTY && !c.Common.InPlace && c.Common.Output == ""
}

// rewrite is the second pass over a streamed document: it reads the document again and
// writes it, with the edits edit makes in regions (see transcript.Splice), where
// writeDocument would. With --in-place a file that no edit changed is not touched. edit's
// errors are returned as they are (word them as the tool's); if the input no longer holds
// the bytes the first pass read, rewrite fails and nothing is written.
func (d *document) rewrite(regions []transcript.Span, re transcript.RegionEdits) error {
	if d.Outline == nil {
		return errors.New("internal: Rewrite of a document that was not streamed")
	}
	splice := func(w io.Writer) (int, error) {
		r, check, err := d.reread()
		if err != nil {
			return 0, RuntimeError(fmt.Errorf("read %s again: %w", displayName(d.Name), err))
		}
		r = &readErrors{r: r, what: "read " + displayName(d.Name) + " again"}
		n, err := transcript.SpliceAhead(r, w, regions, re, runtime.GOMAXPROCS(0))
		if err == nil {
			err = check()
		}
		if err != nil {
			return n, d.rereadError(err)
		}
		return n, nil
	}
	c := d.c
	switch {
	case c.Common.InPlace:
		if d.Name == "-" {
			return Usagef("--in-place cannot edit stdin")
		}
		return c.stageStream(d.Name, splice)
	case c.Common.Output != "":
		return c.stageStream(c.Common.Output, splice)
	}
	if held, isHeld := c.Stdout.(*heldOutput); isHeld && len(regions) == 0 && d.spool != nil && d.spool.err == nil && !c.StdoutTTY {
		// No edit: the output is the input kept for this second pass, held as it is
		// rather than copied into a spool of its own (in a pipeline, each stage
		// below its trigger copied the whole document once more).
		held.keep(d.spool)
		d.spoolOut = true
		return nil
	}
	bw := bufio.NewWriterSize(&writeErrors{w: c.Stdout, what: "hold stdout"}, 256<<10)
	if _, err := splice(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return d.rereadError(err)
	}
	return nil
}

// reread opens the second pass: the spool, or the file from its start, limited to the
// bytes the first pass read (a session log that grew since is edited as it was then);
// check, called at the end, fails if those bytes changed.
func (d *document) reread() (r io.Reader, check func() error, err error) {
	if d.spool == nil && d.file == nil {
		return nil, nil, errReadOnce
	}
	if d.spool != nil {
		r, err := d.spool.reader()
		return r, func() error { return nil }, err
	}
	if _, err := d.file.Seek(d.base, io.SeekStart); err != nil {
		return nil, nil, err
	}
	h := &hashingReader{r: io.LimitReader(d.file, d.size), h: d.hasher()}
	return h, func() error {
		if h.n != d.size || h.h.Sum64() != d.sum {
			return errChanged
		}
		return nil
	}, nil
}

var errChanged = errors.New("the input changed while it was being read; run again")

// errReadOnce is a tier reading again a document that a report mode read once
// (Filter.Reports): a bug in the tier.
var errReadOnce = errors.New("internal: a document read once (Filter.Reports) cannot be read again")

// rereadError words an error of the second pass: errors already worded (the tool's, read
// and write errors) as they are, a changed input as a runtime error naming the input.
func (d *document) rereadError(err error) error {
	var ce *Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errChanged):
		return RuntimeError(fmt.Errorf("read %s again: %w", displayName(d.Name), errChanged))
	}
	return RuntimeError(err)
}

// readErrors words the errors of a reader (but io.EOF) as runtime errors.
type readErrors struct {
	r    io.Reader
	what string
}

func (r *readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = RuntimeError(fmt.Errorf("%s: %w", r.what, pathReason(err)))
	}
	return n, err
}

// writeErrors words the errors of a writer as runtime errors.
type writeErrors struct {
	w    io.Writer
	what string
}

func (w *writeErrors) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		err = RuntimeError(fmt.Errorf("%s: %w", w.what, pathReason(err)))
	}
	return n, err
}

func (d *document) hasher() *maphash.Hash {
	h := &maphash.Hash{}
	h.SetSeed(d.seed)
	return h
}

// close frees what the document holds.
func (d *document) close() {
	if d.file != nil {
		if !d.keepOpen {
			d.file.Close()
		}
		d.file = nil
	}
	if d.spool != nil {
		if !d.spoolOut {
			d.spool.close()
		}
		d.spool = nil
	}
}

// stageStream writes target as stage does, with the bytes write produces. When write made
// no edit and target is the input being edited in place, the file is left alone.
//
// A target that is a symbolic link, or a file another user owns, is refused (exit 4), not
// written through: a link planted where a run writes (a cloned repository can carry one)
// would otherwise let the run overwrite any file the user can write. The temp file is new
// (O_EXCL, O_NOFOLLOW) beside the target; temp files of killed runs found there are removed.
func (c *Context) stageStream(target string, write func(w io.Writer) (int, error)) error {
	inPlace := c.Common.InPlace
	if err := safefile.CheckTarget(target); err != nil {
		return writeError(target, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(target); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(target)
	safefile.RemoveStale(dir, func(name string) bool { return safefile.IsTemp(name, target) }, c.Now())
	f, err := safefile.CreateTemp(dir, safefile.TempPrefix(target), safefile.TempSuffix)
	if err != nil {
		return writeError(target, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(&writeErrors{w: f, what: fmt.Sprintf("write %q", target)}, 256<<10)
	edits, werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if werr != nil {
		f.Close()
		os.Remove(tmp)
		return werr
	}
	if inPlace && edits == 0 {
		f.Close()
		os.Remove(tmp)
		return nil
	}
	err = f.Chmod(mode)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return writeError(target, err)
	}
	c.pending = append(c.pending, pendingFile{tmp: tmp, target: target})
	return nil
}

// writeError words a failure to write target: a runtime error (exit 4), with a hint when
// safefile refused the path.
func writeError(target string, err error) error {
	return pathError(fmt.Sprintf("write %q", target), err)
}

// pathError words err, met while doing what (which names the path), as a runtime error;
// a path safefile refused gets its reason and a hint.
func pathError(what string, err error) error {
	var ue *safefile.UnsafeError
	if errors.As(err, &ue) {
		// The path is in what already; say only why.
		e := RuntimeError(fmt.Errorf("%s: %s", what, ue.Why))
		if h := ue.Hint(); h != "" {
			return WithHint(e, h)
		}
		return e
	}
	return RuntimeError(fmt.Errorf("%s: %w", what, pathReason(err)))
}

// hashingReader hashes and counts what is read through it.
type hashingReader struct {
	r io.Reader
	h *maphash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

func isRegular(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// readWhole reads the rest of an input in one allocation: of the file's size when it is a
// regular file, else through readUnsized.
func readWhole(br io.Reader, r io.Reader) ([]byte, error) {
	size := -1
	if s, ok := r.(stdinReader); ok {
		r = s.Reader
	}
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = int(st.Size()) // at most what is left to read: br may hold some of it
		}
	}
	if size < 0 {
		return readUnsized(br)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(br)
	return buf.Bytes(), err
}

func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return fmt.Sprintf("%q", name)
}

// heldInMemory reports whether r is the stdin of a stage of an in-process pipeline, which
// holds the document in memory (see tuneGC).
func heldInMemory(r io.Reader) bool {
	s, ok := r.(stdinReader)
	return ok && s.Reader != nil && s.Len() >= 0
}

// mappedLag is how far behind the first pass's reading the pages of a mapped input are let
// go: the records just read are still being counted.
const mappedLag = 4 << 20

// isRegularFile reports whether r is a regular file named as an input.
func isRegularFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isRegular(f)
}

// underlyingFile is the file r reads: a file named, or stdin redirected from a file.
func underlyingFile(r io.Reader) *os.File {
	if s, ok := r.(stdinReader); ok {
		r = s.Reader
	}
	f, _ := r.(*os.File)
	return f
}
