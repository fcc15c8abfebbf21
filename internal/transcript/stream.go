package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"unicode/utf8"
	"unsafe"
)

// sniffBytes is how much of the input Stream reads ahead to decide whether it is a JSONL
// transcript: the records up to the first one that names its format must fit in it.
const sniffBytes = 1 << 20

// sniffRecords is how many records detection looks at, as Parse does.
const sniffRecords = 201

// Stream reads a document from r. A Claude Code or Codex JSONL transcript is read one record
// (line) at a time in memory that does not grow with the size of its messages: for each
// record, in order, fn gets a one-record transcript — Doc is the line, Base its offset,
// Records the record, Messages the messages it carries (spans in document offsets) — and
// may keep it: Stream does not reuse it, and nothing in Messages refers to the line except
// through spans. At the end Stream returns the Outline: which records make up the live
// conversation, the same conversation Parse finds (Claude Code's live branch, Codex
// compactions), exactly.
//
// Whether the input is such a transcript is decided from its first records (up to the first
// that names its format, within the first MB), honouring o.Format. Any other input — JSON
// documents, empty or unrecognised input — is read whole and returned as data, for Parse:
// fn is not called. Bad records give Parse's errors (line numbers, truncated last line,
// binary data), though fn may have seen the records before the bad one. An error from fn
// stops the reading and is returned as it is; so is an error reading r.
func Stream(r io.Reader, o Options, fn func(seq int, rec *Transcript) error) (outline *Outline, data []byte, err error) {
	defer catchDup(&err) // a panic leaves the other results unset
	var lr lineReader
	var f Format
	if in, ok := r.(*InPlace); ok {
		head, err := in.head()
		if err != nil {
			return nil, nil, err
		}
		if err := binaryHead(head); err != nil {
			return nil, nil, err
		}
		f = sniffHead(head, o)
		if f == "" {
			data, err := io.ReadAll(in)
			return nil, data, err
		}
		lr.mem, lr.pos, lr.passed, lr.reported, lr.in = in.data, in.off, in.Passed, in.off, in
	} else {
		br := sniffReader(r)
		f, err = sniff(br, o)
		if err != nil {
			return nil, nil, err
		}
		if f == "" {
			data, err := readAll(br, r)
			return nil, data, err
		}
		lr.br = br
	}
	p := newRecordParser(f, o)
	var records []Record
	for {
		text, start, line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if i := bytes.IndexByte(text, 0); i >= 0 {
			return nil, nil, nulError(start + i)
		}
		text = bytes.TrimSuffix(text, []byte{'\r'})
		l := unsafe.String(unsafe.SliceData(text), len(text)) // text is ours and never changes
		if firstNonSpace(l) < 0 {
			continue
		}
		if e, truncated := checkLine(l, start, line); e != nil {
			return nil, nil, lr.finishBad(e, truncated)
		}
		seq := len(records)
		records = append(records, Record{Span: Span{start, start + len(l)}, Line: line, Next: lr.off, Message: -1,
			Type: intern(recordValue(l, 0).get("type").str())})
		rec := &Transcript{Format: f, Doc: l, Base: start, Records: []Record{records[seq]}}
		rec.Messages = p.record(seq, &records[seq], l)
		detach(rec.Messages)
		if cp, ok := p.(*ccParser); ok && cp.lines[seq].attached {
			l := &cp.lines[seq]
			rec.Attachments = []Attachment{{Type: l.attachType, Before: -1, Record: seq, Block: l.attachment}}
		}
		if err := fn(seq, rec); err != nil {
			return nil, nil, err
		}
	}
	return resolve(p, f, records), nil, nil
}

// sniffReader buffers r for sniff: sniffBytes, or, for a reader that knows how much it
// holds (Len, negative when it does not know; an input in memory: a stage of an in-process
// pipeline, run for every request of ctx-proxy), no more than that, so a small document
// costs no megabyte of buffer.
func sniffReader(r io.Reader) *bufio.Reader {
	size := sniffBytes
	if l, ok := r.(interface{ Len() int }); ok && l.Len() >= 0 {
		size = min(size, l.Len()+1) // (one byte more: the peek then meets the end)
	}
	return bufio.NewReaderSize(r, size)
}

// Sniff reads ahead in r and names the JSONL format Stream would stream the input as, or ""
// when Stream would read it whole; the reader it returns reads the whole input from the
// start (what was read ahead first), and Stream reads it without buffering it again. A
// caller that must decide how to hold the input (a filter that reads a streamed document
// twice keeps a copy of stdin, and of nothing else) asks first.
func Sniff(r io.Reader, o Options) (f Format, rd io.Reader, err error) {
	defer catchDup(&err)
	if in, ok := r.(*InPlace); ok {
		head, err := in.head()
		if err != nil {
			return "", nil, err
		}
		if err := binaryHead(head); err != nil {
			return "", nil, err
		}
		return sniffHead(head, o), in, nil
	}
	br := sniffReader(r)
	f, err = sniff(br, o)
	return f, br, err
}

// sniff peeks at the first records of the input and names the JSONL format to stream, or
// "" when the input should be read whole: when the first records do not all parse, when
// none of them names a JSONL format, or when it is not the one o.Format asks for. Parse
// then reads the input and says what is wrong with it, if anything; but binary data at
// its start is refused now (binaryHead), whatever o.Format says.
func sniff(br *bufio.Reader, o Options) (Format, error) {
	head, err := br.Peek(min(sniffBytes, br.Size()))
	if err != nil && err != io.EOF {
		return "", err
	}
	s := sniffed{head, err == io.EOF} // (EOF: the whole input is in head)
	if err := binaryHead(s); err != nil {
		return "", err
	}
	return sniffHead(s, o), nil
}

// binaryHead is Parse's error for binary data when the start of an input shows it (a NUL
// byte, or a first character that is neither JSON nor UTF-8), else nil: no document holds
// them, and a 1 GB image or archive given by mistake was read whole, or streamed to its
// end, before it was refused. It is refused on its first megabyte with the error Parse
// gives it (Parse names the first NUL anywhere first: a NUL in the head is that one; a
// binary start with a NUL only further on is named "binary data" here, the NUL there).
func binaryHead(s sniffed) error {
	if i := bytes.IndexByte(s.head, 0); i >= 0 {
		return nulError(i)
	}
	head := unsafe.String(unsafe.SliceData(s.head), len(s.head))
	first := firstNonSpace(head)
	if first < 0 || head[first] == '{' || head[first] == '[' || !s.complete && first+64 > len(head) {
		return nil
	}
	if !utf8.ValidString(head[first:min(len(head), first+64)]) {
		return errorf(int64(first), "binary data, not a JSON document")
	}
	return nil
}

// sniffed is the start of an input, as much as sniff looks at; complete when it is the
// whole input.
type sniffed struct {
	head     []byte
	complete bool
}

// sniffHead is sniff of the start of an input.
func sniffHead(s sniffed, o Options) Format {
	if o.Format != "" && !o.Format.JSONL() {
		return ""
	}
	head, complete := s.head, s.complete
	records := 0
	for len(head) > 0 && records < sniffRecords {
		i := bytes.IndexByte(head, '\n')
		if i < 0 && !complete {
			break // the record goes on past what was read ahead
		}
		line := head
		if i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		l := string(line)
		if firstNonSpace(l) < 0 {
			continue
		}
		records++
		if bytes.IndexByte(line, 0) >= 0 || !Valid(l) || l[firstNonSpace(l)] != '{' {
			return ""
		}
		if f := recordFormat(recordValue(l, 0)); f != "" {
			if o.Format != "" && f != o.Format {
				return ""
			}
			return f
		}
	}
	return ""
}

func nulError(offset int) *Error {
	return errorf(int64(offset), "binary data (NUL byte), not a JSON document")
}

// readAll reads the rest of the input, in one allocation when r is a file of known size.
func readAll(br *bufio.Reader, r io.Reader) ([]byte, error) {
	size := br.Buffered()
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = max(size, int(fi.Size()))
		}
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(br)
	return buf.Bytes(), err
}

// lineReader reads lines of any length, counting their offsets and numbers.
type lineReader struct {
	br  *bufio.Reader
	mem []byte // or the input in place (InPlace), from pos
	pos int
	// passed is InPlace.Passed, told of mem[reported:pos] when that is long enough
	passed   func(chunk []byte, read int)
	reported int
	in       *InPlace // whose data mem is: grown when a line goes on past its end
	off      int      // document offset of the next line
	line     int      // lines read
}

// next returns the next line without its '\n', as a new slice the caller owns (a slice of
// an input in place, which never changes), with its document offset and 1-based number;
// io.EOF after the last.
func (lr *lineReader) next() (text []byte, start, line int, err error) {
	if lr.mem != nil {
		if lr.passed != nil && (lr.pos-lr.reported >= passedChunk || lr.pos == len(lr.mem) && lr.pos > lr.reported && lr.in.more == nil) {
			lr.passed(lr.mem[lr.reported:lr.pos], lr.pos)
			lr.reported = lr.pos
		}
		// (searched: mem[pos:searched] holds no newline, a line that grows meanwhile is
		// searched once)
		searched := lr.pos
		n := 0
		for {
			if i := bytes.IndexByte(lr.mem[searched:], '\n'); i >= 0 {
				n = searched + i + 1 - lr.pos
				break
			}
			searched = len(lr.mem)
			if lr.in == nil || lr.in.more == nil {
				break
			}
			if err := lr.in.grow(); err != nil {
				return nil, 0, 0, err
			}
			lr.mem = lr.in.data
		}
		if n == 0 {
			if n = len(lr.mem) - lr.pos; n == 0 {
				return nil, 0, 0, io.EOF
			}
		}
		text = lr.mem[lr.pos : lr.pos+n : lr.pos+n]
		start = lr.off
		lr.off += n
		lr.pos += n
		lr.line++
		return bytes.TrimSuffix(text, []byte{'\n'}), start, lr.line, nil
	}
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			text = append(text, chunk...)
			continue
		}
		if err != nil && err != io.EOF {
			return nil, 0, 0, err
		}
		if err == io.EOF && len(chunk) == 0 && len(text) == 0 {
			return nil, 0, 0, io.EOF
		}
		text = append(text, chunk...)
		start = lr.off
		lr.off += len(text)
		lr.line++
		return bytes.TrimSuffix(text, []byte{'\n'}), start, lr.line, nil
	}
}

// finishBad reads the rest of the input after the first bad record: a NUL byte anywhere
// is reported instead, as Parse does, and the bad record is a truncated one only if it is
// the last.
func (lr *lineReader) finishBad(e *Error, truncated bool) error {
	last := true
	for {
		text, start, _, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(text, 0); i >= 0 {
			return nulError(start + i)
		}
		if firstNonSpace(string(bytes.TrimSuffix(text, []byte{'\r'}))) >= 0 {
			last = false
		}
	}
	if truncated && last {
		markTruncated(e)
	}
	return e
}

// HeadModel is the newest model that the records Sniff read ahead name (a Claude Code
// assistant record's, a Codex turn context's), "" when they name none or rd is not the
// reader Sniff returned. A counter priced per model is chosen by it before a streamed
// document's records are counted; the model the whole document ends on (Outline.Model)
// is known only once they have been.
func HeadModel(rd io.Reader) string {
	var head []byte
	switch r := rd.(type) {
	case *bufio.Reader:
		head, _ = r.Peek(r.Buffered())
	case *InPlace:
		h, _ := r.head()
		head = h.head
	default:
		return ""
	}
	// A key of a string inside a record is written \"model\", so the key as written,
	// unescaped, is one of the record's own objects.
	const key = `"model":"`
	for len(head) > 0 {
		i := bytes.LastIndex(head, []byte(key))
		if i < 0 {
			return ""
		}
		v := head[i+len(key):]
		if j := bytes.IndexByte(v, '"'); j > 0 && j <= 100 && bytes.IndexByte(v[:j], '\\') < 0 {
			return string(v[:j])
		}
		head = head[:i]
	}
	return ""
}

// InPlace is an input held in memory that nothing changes while it is read (a file mapped
// read-only): Sniff and Stream read it without buffering it, and the lines of Stream's
// records are slices of it rather than a copy each. Copying every line of a 10 MB rollout
// into fresh memory cost each stage thousands of page faults, more than its parsing.
type InPlace struct {
	data []byte
	off  int
	more func() ([]byte, error)
	// Passed, when set, gets the input in order as Stream's reading passes it, in chunks
	// of passedChunk or more (the last may be shorter), with the offset in data that the
	// reading has reached: a caller hashes what was read, and lets go of the memory behind.
	Passed func(chunk []byte, read int)
}

const passedChunk = 1 << 20

// NewInPlace reads data in place; data must not change while anything read from it is in
// use.
func NewInPlace(data []byte) *InPlace { return &InPlace{data: data} }

// NewGrowingInPlace reads in place an input that arrives as it is read (a pipe kept in a
// mapped file): more returns data grown by what came next, the same bytes first, or io.EOF
// (or another error) when nothing more comes.
func NewGrowingInPlace(data []byte, more func() ([]byte, error)) *InPlace {
	return &InPlace{data: data, more: more}
}

// Read implements io.Reader.
func (in *InPlace) Read(p []byte) (int, error) {
	for in.off >= len(in.data) {
		if in.more == nil {
			return 0, io.EOF
		}
		if err := in.grow(); err != nil {
			return 0, err
		}
	}
	n := copy(p, in.data[in.off:])
	in.off += n
	return n, nil
}

// grow asks more for what comes next; more is nil once it has said io.EOF.
func (in *InPlace) grow() error {
	data, err := in.more()
	if err == io.EOF {
		in.more = nil
		return nil
	}
	if err != nil {
		return err
	}
	in.data = data
	return nil
}

// head is what sniff looks at of the rest, after waiting for it to arrive.
func (in *InPlace) head() (sniffed, error) {
	for in.more != nil && len(in.data)-in.off <= sniffBytes {
		if err := in.grow(); err != nil {
			return sniffed{}, err
		}
	}
	rest := in.data[in.off:]
	return sniffed{rest[:min(len(rest), sniffBytes)], len(rest) <= sniffBytes}, nil
}
