package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Options steer Parse.
type Options struct {
	// Format forces a format; "" or "auto" detects it.
	Format Format
	// Path is the gjson path of the message array inside a wrapper document.
	Path string
	// Sidechains reads, in a Claude Code log that holds a subagent's lines (isSidechain)
	// beside the session's, the subagent's conversation instead of the session's (the
	// newest subagent's, when it holds several); a log without any reads as without it.
	// A subagent's own log is read as its conversation either way.
	Sidechains bool
	// Subagent, with Sidechains, names which subagent of several to read: the uuid of its
	// chain's first line (Transcript.Sidechains lists them); "" reads the newest.
	Subagent string
	// AllThreads reads a Claude Code log's conversation with every subagent line in it:
	// not a conversation any model saw, but where every marker a tool wrote into either
	// is (ctx-persist --restore).
	AllThreads bool
	// Name is the input's name (a file path). Reading does not depend on it: an input
	// reads the same from a file as from stdin.
	Name string
	// Checked says the caller has found data to be one JSON value by Valid's rules (as
	// ctx-proxy has each request it counts): Parse reads it without checking it again.
	// Data that is not must never be given so. (Reparse, reading what is new of a
	// document, checks it all the same.)
	Checked bool
}

// Error says why a document could not be read and where.
type Error struct {
	Line   int   // 1-based line of a JSONL record, 0 when not line-based
	Offset int64 // byte offset in the document, -1 when unknown
	Msg    string
	// Hint says what the user can do about it, when the reader knows ("" otherwise).
	Hint string
	// rule marks valid JSON refused on a rule of the reader's own (an element that is not
	// a message, a duplicate key), which the gjson-based reader of the tests accepted.
	rule bool
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return e.Msg
}

func errorf(offset int64, format string, a ...any) *Error {
	return &Error{Offset: offset, Msg: fmt.Sprintf(format, a...)}
}

// ParseFormat checks a format name ("auto" and "" mean detect).
func ParseFormat(name string) (Format, error) {
	if name == "" || name == "auto" {
		return "", nil
	}
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want auto, anthropic, openai, responses, claude-code, codex or cline)", name)
}

// Parse reads a document. data must not be modified while the Transcript is in use: the
// transcript refers to it without copying.
func Parse(data []byte, o Options) (t *Transcript, err error) {
	defer catchDup(&err) // a panic leaves the other results unset
	if t, err = parse(data, o); err != nil {
		return nil, err
	}
	remember(t, o)
	return t, nil
}

func parse(data []byte, o Options) (*Transcript, error) {
	doc := unsafe.String(unsafe.SliceData(data), len(data))
	if i := strings.IndexByte(doc, 0); i >= 0 {
		return nil, errorf(int64(i), "binary data (NUL byte), not a JSON document")
	}
	first := firstNonSpace(doc)
	if first < 0 {
		return parseEmpty(doc, o.Format)
	}
	if c := doc[first]; c != '{' && c != '[' {
		if !utf8.ValidString(doc[first:min(len(doc), first+64)]) {
			return nil, errorf(int64(first), "binary data, not a JSON document")
		}
		return nil, errorf(int64(first), "expected a JSON object or array, found %q", preview(doc[first:]))
	}

	if o.Checked || Valid(doc) {
		// The root runs to the end of the document, trailing white space included, as
		// gjson.Parse takes it: a bare array's Array span always has.
		root := jval{doc[first:], first}
		f := o.Format
		if f == "" && root.isObject() {
			f = recordFormat(root)
		}
		if !f.JSONL() {
			return parseJSONDocument(doc, root, f, o)
		}
		if found := recordFormat(root); o.Format != "" && found != o.Format && !(found == "" && recordShaped(root, o.Format)) {
			return nil, formatMismatch(o.Format, found)
		}
		lines := splitRecords(doc)
		if err := validateLines(doc, lines, o); err != nil {
			return nil, err
		}
		return parseJSONL(doc, lines, f, o)
	}
	lines := splitRecords(doc)
	// A document that is not one JSON value is JSONL when its first line is a whole value;
	// otherwise it is a broken JSON document and the error is about the document.
	if (o.Format == "" || o.Format.JSONL()) && len(lines) > 0 && Valid(doc[lines[0].Span.Start:lines[0].Span.End]) {
		if err := validateLines(doc, lines, o); err != nil {
			return nil, err
		}
		f := o.Format
		if f == "" {
			if f = detectJSONL(doc, lines); f == "" {
				return nil, &Error{Line: lines[0].Line, Offset: -1, Msg: "JSONL records of an unknown kind: expected Claude Code session records or Codex rollout records (use --format)"}
			}
		}
		return parseJSONL(doc, lines, f, o)
	}
	if o.Format != "" && !o.Format.JSONL() && len(lines) > 1 && Valid(doc[lines[0].Span.Start:lines[0].Span.End]) {
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("--format %s takes one JSON document, but the input is JSONL (%d records, one a line)", o.Format, len(lines))}
	}
	return nil, syntaxError(doc, 0)
}

// parseEmpty reads an input that holds nothing but white space. Claude Code creates a
// session file before its first record, and a pipeline over such a session hands the next
// tool the same nothing on stdin: an empty input is a conversation with no messages, read
// as an empty JSONL log (the format that is nothing but its records), from a file and from
// stdin alike. Only a format that must be one JSON value refuses it.
func parseEmpty(doc string, f Format) (*Transcript, error) {
	switch {
	case f == "":
		f = ClaudeCode
	case !f.JSONL():
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("empty input: --format %s takes one JSON document", f)}
	}
	return &Transcript{Format: f, Doc: doc}, nil
}

func parseJSONDocument(doc string, root jval, f Format, o Options) (*Transcript, error) {
	rf := readRoot(root)
	arr, path, err := locateArray(doc, root, &rf, o.Path)
	if err != nil {
		return nil, err
	}
	if f == "" {
		f = detectJSON(root, &rf, arr)
	}
	t := &Transcript{Format: f, Doc: doc, ArrayPath: path, Array: arr.span()}
	if root.isObject() {
		if rf.tools.isArray() {
			t.Tools = rf.tools.span()
		}
		t.Model = rf.model.str()
	}
	switch f {
	case Anthropic, Cline:
		if sys := rf.system; sys.exists() && !sys.isNull() {
			t.Messages = append(t.Messages, headerMessage(sys))
		}
		err = readElements(f, arr, path, t, anthropicMessage)
		if err == nil && f == Cline {
			markCline(t)
		}
	case OpenAI:
		err = readElements(f, arr, path, t, openaiMessage)
	case Responses:
		if ins := rf.instructions; ins.isString() {
			t.Messages = append(t.Messages, headerMessage(ins))
		}
		if arr.isString() {
			// "input" may be a bare string: one user message.
			t.Messages = append(t.Messages, Message{Role: "user", Span: arr.span(), Blocks: []Block{textBlock(arr, "input_text")}})
			break
		}
		err = readElements(f, arr, path, t, responsesElement)
	default:
		return nil, &Error{Offset: -1, Msg: fmt.Sprintf("a %s document is JSONL, one record a line, but the input is a single JSON value", f)}
	}
	if err != nil {
		return nil, err
	}
	markPinnedMessages(t)
	markSummaries(t)
	return t, nil
}

// readElements reads each element of the message array with the format's reader, and
// refuses the document at the first element that is not a message (checkElement). A
// Responses "input" string read under another --format is read as it always was, one
// message.
func readElements(f Format, arr jval, path string, t *Transcript, read func(jval) (Message, jval)) error {
	if !arr.isArray() {
		m, _ := read(arr)
		t.Messages = append(t.Messages, m)
		return nil
	}
	var bad *Error
	i := 0
	arr.each(func(v jval) bool {
		m, content := read(v)
		if bad = checkElement(f, i, v, &m, content); bad != nil {
			bad.Hint = conversationsHint(path, i, v)
			return false
		}
		t.Messages = append(t.Messages, m)
		i++
		return true
	})
	if bad != nil {
		return bad
	}
	return nil
}

// recordShaped reports whether a lone JSON object that names no format has the shape of a
// record of f (a type and a message, or a type and a payload): what --format f is trusted
// on, as it is for JSONL records that name no format.
func recordShaped(obj jval, f Format) bool {
	if !obj.get("type").exists() {
		return false
	}
	switch f {
	case ClaudeCode:
		return obj.get("message").exists()
	case Codex:
		return obj.get("payload").exists()
	}
	return false
}

func formatMismatch(want, found Format) *Error {
	what := "something else"
	if found != "" {
		what = string(found) + " records"
	}
	return &Error{Offset: -1, Msg: fmt.Sprintf("--format %s, but the input holds %s", want, what)}
}

// locateArray finds the message array: --path (a gjson path, so any path gjson reads
// works), the document itself when it is an array, or a known wrapper's field ("messages",
// "input", "history", in that order).
func locateArray(doc string, root jval, rf *rootFields, path string) (jval, string, error) {
	if path != "" {
		arr := gjson.Get(root.raw, path)
		if !arr.Exists() {
			return jval{}, path, &Error{Offset: -1, Msg: fmt.Sprintf("--path %q matches nothing in the document", path)}
		}
		if !arr.IsArray() {
			return jval{}, path, &Error{Offset: int64(root.at + arr.Index), Msg: fmt.Sprintf("--path %q is a %s, not an array of messages", path, typeName(arr))}
		}
		// Modifiers, literals and queries compute new JSON; edits need the document's own bytes.
		if raw := root.raw; arr.Index < 0 || arr.Index+len(arr.Raw) > len(raw) || raw[arr.Index:arr.Index+len(arr.Raw)] != arr.Raw {
			return jval{}, path, &Error{Offset: -1, Msg: fmt.Sprintf("--path %q computes a value instead of naming one in the document (modifiers, literals and queries are not supported)", path)}
		}
		return jval{arr.Raw, root.at + arr.Index}, path, nil
	}
	if root.isArray() {
		return root, "", nil
	}
	for _, w := range []struct {
		path string
		v    jval
	}{{"messages", rf.messages}, {"input", rf.input}, {"history", rf.history}} {
		if w.v.isArray() || (w.path == "input" && w.v.isString()) {
			return w.v, w.path, nil
		}
	}
	return jval{}, "", &Error{Offset: 0, Msg: "expected a conversation: an array of messages, or an object with \"messages\", \"input\" or \"history\"; use --path to name where the messages are"}
}

// recordValue is the JSON value a validated text holds (a record line, or a whole
// document), base being the text's document offset: white space around it is not part of
// it. Valid text is one value between white space, so the value ends where the white
// space after it starts: found from the end, not by walking the value (valueEnd walked
// every record line once more, twice for a streamed Codex or Claude Code record).
//
// On a text that is not valid the value may take in what follows it; its members are
// the same (members stops at the bracket that closes the object, where valueEnd did).
func recordValue(text string, base int) jval {
	i := firstNonSpace(text)
	if i < 0 {
		return jval{}
	}
	j := len(text)
	for j > i && isSpace(text[j-1]) {
		j--
	}
	return jval{text[i:j], base + i}
}

// isSpace tells the JSON white space skipSpace passes over.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// splitRecords cuts the document into its non-blank lines.
func splitRecords(doc string) []Record {
	lines := make([]Record, 0, strings.Count(doc, "\n")+1)
	n := 0
	for start := 0; start < len(doc); {
		end := strings.IndexByte(doc[start:], '\n')
		next := len(doc)
		if end < 0 {
			end = len(doc)
		} else {
			end += start
			next = end + 1
		}
		n++
		s, e := start, end
		if e > s && doc[e-1] == '\r' {
			e--
		}
		if firstNonSpace(doc[s:e]) >= 0 {
			lines = append(lines, Record{Span: Span{s, e}, Line: n, Next: next, Message: -1})
		}
		start = next
	}
	return lines
}

// validateLines checks every record line and returns the error of the first that is not a
// JSON object. Before that error it reads the records above the bad line, as a stream
// would have read them before meeting it, so that a refusal of theirs (a duplicate key:
// catchDup turns the panic into Parse's error) comes first, as it does streamed.
func validateLines(doc string, lines []Record, o Options) error {
	for i := range lines {
		l := doc[lines[i].Span.Start:lines[i].Span.End]
		if e, truncated := checkLine(l, lines[i].Span.Start, lines[i].Line); e != nil {
			if truncated && i == len(lines)-1 {
				markTruncated(e)
			}
			f := o.Format
			if f == "" && i > 0 {
				f = detectJSONL(doc, lines[:i])
			}
			if f.JSONL() && i > 0 {
				parseJSONL(doc, lines[:i], f, o)
			}
			return e
		}
		lines[i].Type = recordValue(l, 0).get("type").str()
	}
	return nil
}

// syntaxError explains why text is not valid JSON, with the byte offset (relative to the
// whole document) where it goes wrong. Only the error path pays for encoding/json.
func syntaxError(text string, base int) *Error {
	dec := json.NewDecoder(strings.NewReader(text))
	var v json.RawMessage
	err := dec.Decode(&v)
	if err == nil {
		// A valid value followed by something else.
		off := dec.InputOffset()
		rest := text[off:]
		skip := firstNonSpace(rest)
		if skip < 0 {
			skip = 0
		}
		return errorf(int64(base)+off+int64(skip), "invalid JSON: unexpected %q after the end of the value", preview(rest[skip:]))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// encoding/json counts the offending byte as read.
		return errorf(int64(base)+max(se.Offset-1, 0), "invalid JSON: %s", strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errorf(int64(base+len(text)), "invalid JSON: the document ends before its value does (truncated?)")
	}
	return errorf(int64(base), "invalid JSON: %v", err)
}

func firstNonSpace(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

func preview(s string) string {
	const n = 24
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		return s + "..."
	}
	return s
}

func typeName(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.Null:
		return "null"
	}
	if r.IsArray() {
		return "array"
	}
	if r.IsObject() {
		return "object"
	}
	return "nothing"
}
