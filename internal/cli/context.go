package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ctxkit/ctxkit/internal/human"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/safefile"
	"github.com/ctxkit/ctxkit/internal/sessions"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/tokens"
)

// Context is what a tool's Run sees of the outside world.
type Context struct {
	tool   *Tool
	Common *Common
	stdin  io.Reader
	// Stdout is an in-memory buffer. The runner copies it to the real
	// stdout only when Run returns nil or a CheckFailed error, so on any
	// other error nothing reaches stdout.
	Stdout    io.Writer
	Stderr    io.Writer
	stdinTTY  bool
	StdoutTTY bool
	StderrTTY bool
	Color     bool // StdoutTTY, NO_COLOR unset or empty, TERM not "dumb"
	// Columns is how wide the terminal is: COLUMNS when it is a positive number, else the
	// width of the terminal stdout (or, with stdout piped, stderr) is, else 0 (unknown).
	Columns int
	Getenv  func(string) string
	Now     func() time.Time
	version string
	// ChooseLatest, when a tool sets it, may name another document for --latest than the
	// newest session log of the directory (log, nil when there is none): ctx-count shows
	// what ctx-proxy sent instead. "" keeps the log; it says on stderr what it chose.
	ChooseLatest func(log *sessions.Session) (string, error)
	// Documents, when a tool sets it, reads the input name in place of the file (ok false:
	// the file is read): a document kept as something other than itself, such as
	// ctx-proxy's requests as sent (a log of edits) that ChooseLatest names.
	Documents func(name string) (doc []byte, ok bool, err error)
	// AllThreads reads a Claude Code log with every subagent line in its conversation
	// (transcript.Options.AllThreads): ctx-persist --restore, which must find every marker.
	AllThreads bool

	out        *heldOutput
	realStdout io.Writer // where Stdout goes once the run has succeeded (Flush)
	stdinTaken bool
	pending    []pendingFile
	readWhole  bool // every document, also a JSONL transcript (ReadingWhole)
	countsMu   sync.Mutex
	counts     map[string]*tokens.DiskCache // by tokenizer name
	given      map[string]bool              // flags the user set, by long name
	textHint   string                       // Filter.TextHint of the run
	redactor   *redact.Redactor             // Redactor's, once made
	redactErr  error
	redactOnce sync.Once
}

// Redactor is what redacts text that leaves the conversation (DESIGN §4.11): the store, a
// summary, a model backend, a log. It is nil, redacting nothing, with --no-redact; it
// holds the patterns of --secrets. A patterns file that cannot be read or holds a
// bad expression is a usage error.
func (c *Context) Redactor() (*redact.Redactor, error) {
	c.redactOnce.Do(func() {
		if c.Common == nil || c.Common.NoRedact {
			return
		}
		var ps []redact.Pattern
		if f := c.Common.Secrets; f != "" {
			if ps, c.redactErr = redact.LoadPatterns(f); c.redactErr != nil {
				c.redactErr = WithHint(Usagef("--secrets: %v", c.redactErr), "one RE2 regular expression a line; # starts a comment")
				return
			}
		}
		c.redactor = redact.New(ps...)
	})
	return c.redactor, c.redactErr
}

// Given reports whether the user set the flag called name (its long name, "store") on the
// command line or through its CTX_ variable, rather than leaving its default.
func (c *Context) Given(name string) bool { return c.given[name] }

// StateDir is where ctxkit keeps state that outlives a run and belongs to the user, not
// to a project's files (the circuit breaker's, ctx-proxy's state key, the default offload
// stores): $XDG_STATE_HOME/ctxkit, by default ~/.local/state/ctxkit (on Windows, without
// HOME, %LOCALAPPDATA%\ctxkit\state); "" when none is known.
func (c *Context) StateDir() string { return stateDir(c.Getenv) }

func stateDir(getenv func(string) string) string {
	switch {
	case getenv("XDG_STATE_HOME") != "":
		return filepath.Join(getenv("XDG_STATE_HOME"), "ctxkit")
	case getenv("HOME") != "":
		return filepath.Join(getenv("HOME"), ".local", "state", "ctxkit")
	case getenv("LOCALAPPDATA") != "":
		return filepath.Join(getenv("LOCALAPPDATA"), "ctxkit", "state")
	}
	return ""
}

// defaultStore is the offload store when none is named (--store, CTX_STORE): the working
// directory's in the state directory (store.DefaultDir), never in the work tree, where
// `git add -A` would commit it; "" when there is no state directory (the tools that write
// the store then say to name one).
func defaultStore(getenv func(string) string) string {
	dir := stateDir(getenv)
	if dir == "" {
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	// One store for one folder, however it was reached.
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return store.DefaultDir(dir, wd)
}

// input is one document read whole.
type input struct {
	Name string // the file path as given, or "-" for stdin
	Data []byte
}

// IsStdin reports whether the input came from stdin.
func (in input) IsStdin() bool { return in.Name == "-" }

// Warnf prints "ctx-x: warning: ..." to stderr at once, its control characters escaped
// (a warning names files and quotes documents).
func (c *Context) Warnf(format string, a ...any) {
	fmt.Fprintf(c.Stderr, "%s: warning: %s\n", c.tool.Name, human.Safe(fmt.Sprintf(format, a...)))
}

// names lists the inputs: the file arguments, or "-" for stdin when there are none.
func (c *Context) names() ([]string, error) {
	names := c.Common.Files
	if err := c.agentAlone(); err != nil {
		return nil, err
	}
	if c.Common.Latest {
		return c.latest()
	}
	if len(names) == 0 {
		if c.stdinTTY {
			return nil, WithHint(Usagef("no input: reading a document from a terminal"),
				fmt.Sprintf("pipe a document in or name a file: %s FILE", c.tool.Name))
		}
		return []string{"-"}, nil
	}
	return names, nil
}

// sources names the inputs: the file arguments, or "-" for stdin. A terminal on stdin with
// no file argument is a usage error (exit 2), so a tool never hangs waiting for a
// document; an explicit "-" reads the terminal anyway, as cat does. Every file is checked
// now, so a file that cannot be read fails the run (exit 4: read "path": reason) before
// any document is read; but under f.KeepGoing each is found missing in its turn, and a
// directory under f.Sessions is read when its turn comes (Context.expand).
func (c *Context) sources(f *Filter) ([]string, error) {
	names, err := c.names()
	if err != nil {
		return nil, err
	}
	stdinUsed := false
	for _, name := range names {
		if name == "-" {
			if stdinUsed {
				return nil, Usagef("stdin (%q) named more than once", name)
			}
			stdinUsed = true
			continue
		}
		if f.KeepGoing && f.Reports || f.Sessions && isDir(name) {
			continue
		}
		r, err := c.open(name)
		if err != nil {
			return nil, err
		}
		r.Close()
	}
	return names, nil
}

// open opens one input for reading: a file, or stdin for "-", which can be taken once. A
// file that cannot be read is a runtime error (exit 4).
func (c *Context) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		if c.stdinTaken {
			return nil, Usagef("stdin cannot be read twice; name a file")
		}
		c.stdinTaken = true
		return stdinReader{c.stdin}, nil
	}
	if c.Documents != nil {
		if doc, ok, err := c.Documents(name); err != nil {
			return nil, RuntimeError(fmt.Errorf("read %q: %w", name, err))
		} else if ok {
			return io.NopCloser(bytes.NewReader(doc)), nil
		}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, RuntimeError(fmt.Errorf("read %q: %w", name, pathReason(err)))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, RuntimeError(fmt.Errorf("read %q: %w", name, syscall.EISDIR))
	}
	return f, nil
}

// stdinReader is stdin as an input: closing it leaves stdin open, and readWhole can still
// see the file under it (stdin redirected from a file has a size to read it in one go).
type stdinReader struct{ io.Reader }

// Len is what is left to read of stdin when it is held in memory (a stage of an
// in-process pipeline), else -1.
func (s stdinReader) Len() int {
	if l, ok := s.Reader.(interface{ Len() int }); ok {
		return l.Len()
	}
	return -1
}

func (stdinReader) Close() error { return nil }

// bigInput is the input size above which the collector is made to run more often.
const bigInput = 16 << 20

// tuneGC keeps peak memory under twice a large input instead of three times: a document
// read whole (held) stays live for the whole run, so Go's default (collect when the heap
// doubles) would let garbage grow as large as the input. Collecting at +50% costs little,
// because the input is one pointer-free block the collector does not scan.
//
// +50% of what is live still let the heap pass twice the input once the plan and its
// output were live beside it, and the pages freed on the way stayed mapped. A soft memory
// limit at 1.7 times the input (issue 21) makes the collector run earlier near the peak and
// hand freed pages back: peak RSS on 100 MB JSON fell from 2.1-2.6× to about 1.85× the
// input for 3-10% more CPU (a limit at 1.5× gave 1.65× for 15-40% more). It is soft: a run
// whose live heap must pass it (ctx-convert holds its input and its output) collects more
// often, which the runtime caps at half the CPU, and completes. The limit only grows
// (several documents in one process, an in-process pipeline), and one the user set with
// GOMEMLIMIT is left alone.
//
// A streamed document is not held: what is live is its structure and the plan, a fraction
// of the input, and the records' lines and regions read again are garbage soon after. The
// memory limit bounds its peak, so it keeps the collector's own pacing: at +50% of that
// small live heap ctx-snip on a 100 MB Codex rollout collected 37 times, about a sixth of
// its CPU, for a peak RSS no lower than the limit allowed (0.6 s less CPU at the default,
// peak RSS 183-200 MB where it was 170-192).
//
// A stage of an in-process pipeline (ctx-proxy, ctx-replay), whose stdin is held in
// memory, gets only the +50%: the process holds more than the one document there, and a
// limit set from one request's size would make the collector run without end. So does the
// read of a tool whose process holds more than its document (Filter.HoldsMore: ctx-replay
// reading the session it replays, ctx-count --savings).
func tuneGC(inputBytes int, inProcess, held bool) {
	if inputBytes <= bigInput {
		return
	}
	if held || inProcess {
		debug.SetGCPercent(50)
	}
	if inProcess || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(inputBytes)*17/10 + gcSlack
	gcLimit.Lock()
	defer gcLimit.Unlock()
	if limit > gcLimit.set {
		gcLimit.set = limit
		debug.SetMemoryLimit(limit)
	}
}

// gcSlack is what the runtime and the parse of a small document hold besides the input,
// added to tuneGC's limit so that it never bites on a document near bigInput.
const gcSlack = 8 << 20

// gcLimit is the memory limit tuneGC last set, so that it only raises it.
var gcLimit struct {
	sync.Mutex
	set int64
}

// pathReason drops the op and path that *fs.PathError repeats, because the
// caller already quotes the path.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeDocument emits the transformed bytes out for the input in:
//
//   - with --in-place it replaces the file in.Name (a usage error for
//     stdin); when out is byte-identical to in.Data the file is not touched,
//     so its mtime stays;
//   - with -o FILE it writes FILE;
//   - else it writes to Stdout, indented by [prettyJSON] when stdout is a
//     terminal (piped output stays byte-exact).
//
// File writes are atomic: the bytes go to a synced temp file beside the
// target now, and the runner renames it over the target only after Run
// succeeds (or fails a check); otherwise the temp file is removed. A new
// file gets mode 0644, an existing one keeps its mode, and a symlink
// target is written through (the link stays).
func (c *Context) writeDocument(in input, out []byte) error {
	switch {
	case c.Common.InPlace:
		if in.IsStdin() {
			return Usagef("--in-place cannot edit stdin")
		}
		if bytes.Equal(out, in.Data) {
			return nil
		}
		return c.stage(in.Name, out)
	case c.Common.Output != "":
		return c.stage(c.Common.Output, out)
	}
	if c.StdoutTTY {
		out = prettyJSON(out)
	}
	if h, ok := c.Stdout.(*heldOutput); ok {
		h.hold(out) // by reference: a 100 MB document is not copied again
		return nil
	}
	if _, err := c.Stdout.Write(out); err != nil {
		return RuntimeError(fmt.Errorf("write stdout: %w", err))
	}
	return nil
}

// heldOutput keeps what a tool writes to stdout until the run is known to have succeeded
// (on an error nothing reaches stdout). Writes are copied, as io.Writer requires, into a
// spool (memory, then a temp file, so a streamed document is not held in memory); a whole
// document handed over by writeDocument is kept by reference, so a filter's output is not
// held twice.
type heldOutput struct {
	parts []heldPart
	// hint is the input's size when known (an in-process stage's stdin says its length):
	// a filter's output is about that size, so the first spool starts with room for it
	// instead of growing by doubling, which copied a 3.7 MB session about three times over
	// in each stage of ctx-replay's pipeline (BenchmarkDefaultPipe).
	hint int
}

// heldPart is a document held by reference, or a spool of writes.
type heldPart struct {
	doc    []byte
	writes *spool
	kept   bool // writes is a spool given whole (keep): later writes go to a new one
}

// Write implements io.Writer.
func (h *heldOutput) Write(p []byte) (int, error) {
	if n := len(h.parts); n == 0 || h.parts[n-1].writes == nil || h.parts[n-1].kept {
		s := &spool{limit: pipeMemory}
		if h.hint > 0 {
			s.limit = spoolMemory
			s.reserve(min(h.hint+h.hint/16+4096, spoolMemory))
			h.hint = 0 // once: a later part (ctx-count's report) is small
		}
		h.parts = append(h.parts, heldPart{writes: s})
	}
	return h.parts[len(h.parts)-1].writes.Write(p)
}

// hold keeps p, which the caller no longer changes.
func (h *heldOutput) hold(p []byte) {
	h.parts = append(h.parts, heldPart{doc: p})
}

// keep holds what s holds, which the caller no longer writes to; close frees s.
func (h *heldOutput) keep(s *spool) {
	h.parts = append(h.parts, heldPart{writes: s, kept: true})
}

// WriteTo writes everything held, in order.
func (h *heldOutput) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range h.parts {
		if p.writes == nil {
			if len(p.doc) == 0 {
				continue
			}
			m, err := w.Write(p.doc)
			n += int64(m)
			if err != nil {
				return n, err
			}
			continue
		}
		r, err := p.writes.reader()
		if err != nil {
			return n, err
		}
		m, err := io.Copy(w, r)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// close frees the spools.
func (h *heldOutput) close() {
	for _, p := range h.parts {
		if p.writes != nil {
			p.writes.close()
		}
	}
	h.parts = nil
}

// Flush writes what the run has written to Stdout so far to the real stdout now, for a run
// that goes on writing until it is stopped (ctx-count --follow): each part it flushes is
// whole, so holding output back until the run succeeds still means no half report.
func (c *Context) Flush() error {
	if c.out == nil || c.realStdout == nil {
		return nil
	}
	_, err := c.out.WriteTo(c.realStdout)
	c.out.close()
	if err != nil {
		return RuntimeError(fmt.Errorf("write stdout: %w", err))
	}
	return nil
}

type pendingFile struct{ tmp, target string }

// stage writes data to a temp file in target's directory and queues the
// rename for commit (stageStream with the whole document at hand).
func (c *Context) stage(target string, data []byte) error {
	return c.stageStream(target, func(w io.Writer) (int, error) {
		_, err := w.Write(data)
		return 1, err // the caller decided there is something to write
	})
}

// commit renames every staged file over its target, in order.
func (c *Context) commit() error {
	for len(c.pending) > 0 {
		p := c.pending[0]
		// Checked again: a link planted since stageStream would be replaced by the rename,
		// not followed, but the user asked for a file there and should hear of it.
		if err := safefile.CheckTarget(p.target); err != nil {
			return writeError(p.target, err)
		}
		if err := os.Rename(p.tmp, p.target); err != nil {
			return RuntimeError(fmt.Errorf("write %q: %w", p.target, errors.Unwrap(err)))
		}
		c.pending = c.pending[1:]
		syncDir(filepath.Dir(p.target))
	}
	return nil
}

// discard removes staged temp files that were not committed.
func (c *Context) discard() {
	for _, p := range c.pending {
		os.Remove(p.tmp)
	}
	c.pending = nil
}

// syncDir makes a rename durable; best effort, since not every file
// system can sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// prettyJSON indents a JSON document for a human reader. A JSONL document
// (one value a line) has each line indented on its own. Lines that are not
// valid JSON, and an input that is neither, are left as they are. String
// contents are not re-escaped.
func prettyJSON(b []byte) []byte {
	if json.Valid(b) {
		var buf bytes.Buffer
		json.Indent(&buf, b, "", "  ") // cannot fail: b is valid
		return ensureNewline(buf.Bytes())
	}
	var buf bytes.Buffer
	buf.Grow(len(b) * 2)
	rest := b
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) > 0 && json.Valid(body) {
			json.Indent(&buf, body, "", "  ") // cannot fail: body is valid
			buf.Write(line[len(body):])
			if len(line) == len(body) {
				buf.WriteByte('\n')
			}
			continue
		}
		buf.Write(line)
	}
	return buf.Bytes()
}

func ensureNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return b
}

// CommonEnv is the shared reading and measuring flags the user set (on the command line or
// through their CTX_ variables), as the CTX_ variables that set them: what a tool passes on
// to the ctxkit tools it runs, so they read and measure the document as it does.
func (c *Context) CommonEnv() map[string]string {
	f := c.Common
	env := map[string]string{}
	set := func(flag, name, value string) {
		if c.Given(flag) {
			env[name] = value
		}
	}
	set("format", "CTX_FORMAT", f.Format)
	set("path", "CTX_PATH", f.Path)
	set("sidechains", "CTX_SIDECHAINS", strconv.FormatBool(f.Sidechains))
	set("tokenizer", "CTX_TOKENIZER", f.Tokenizer)
	set("model", "CTX_MODEL", f.Model)
	set("window", "CTX_WINDOW", f.Window.String())
	if f.Reserve != nil {
		set("reserve", "CTX_RESERVE", f.Reserve.String())
	}
	set("overhead", "CTX_OVERHEAD", f.Overhead.String())
	set("store", "CTX_STORE", f.Store)
	// What the stages keep out of the store and their summaries is the user's choice too;
	// --redact is not passed on: it would change what the stages give back.
	set("no-redact", "CTX_NO_REDACT", strconv.FormatBool(f.NoRedact))
	set("secrets", "CTX_SECRETS", f.Secrets)
	return env
}
