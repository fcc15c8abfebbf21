package cli

import (
	"errors"
	"fmt"
)

// Exit statuses (DESIGN §6). They are documented in every man page.
const (
	ExitOK      = 0 // done
	ExitCheck   = 1 // a check fired (ctx-repair --check, ctx-count --fail-over)
	ExitUsage   = 2 // bad command line or nothing to read
	ExitInput   = 3 // the input is not a valid document
	ExitRuntime = 4 // a runtime failure: I/O, store, backend
)

// Error carries its exit status and an optional hint line. Run may return
// it directly or wrapped with %w; the runner finds it with errors.As and
// prints the outermost error's text. Errors that carry no *Error exit with
// [ExitRuntime].
type Error struct {
	Code int    // one of the Exit* constants
	Err  error  // the message; nil is allowed only with ExitCheck or partial (prints nothing)
	hint string // printed as "hint: <hint>" when not empty
	// partial: the output is written whatever Code says (see partial).
	partial bool
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Usagef reports a usage error (exit 2). format follows fmt.Errorf, so %w works.
func Usagef(format string, a ...any) *Error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// InputError reports that the input is not a valid document (exit 3).
func InputError(err error) *Error { return &Error{Code: ExitInput, Err: err} }

// RuntimeError reports a runtime failure such as I/O, the store or a
// backend (exit 4).
func RuntimeError(err error) *Error { return &Error{Code: ExitRuntime, Err: err} }

// CheckFailed reports that a check fired (exit 1). Unlike every other error
// it does not discard output: stdout and -o files are still written, so a
// linter can print its findings and still fail. err may be nil when the
// findings on stdout say it all; then no error line is printed.
func CheckFailed(err error) *Error { return &Error{Code: ExitCheck, Err: err} }

// partial ends a run (Filter.KeepGoing) some of whose inputs failed, each reported on
// stderr already: the output of the others is written, as for a check, and the exit
// status is code. It prints nothing more.
func partial(code int) *Error { return &Error{Code: code, partial: true} }

// keepsOutput reports whether a run that ended with err still writes its output.
func keepsOutput(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.partial
}

// WithHint returns a copy of e with the hint line set; e is not modified.
func WithHint(e *Error, hint string) *Error {
	c := *e
	c.hint = hint
	return &c
}

// hinter is an error that carries its own hint line: safefile.UnsafeError,
// llm.RefusedError.
type hinter interface {
	error
	Hint() string
}

// classify returns the exit status and hint for an error returned by Run.
func classify(err error) (code int, hint string) {
	if err == nil {
		return ExitOK, ""
	}
	// An error from below cli that knows what the user can do about it (safefile's
	// refusal of a planted link, llm's refused connection) says so, whoever wrapped it.
	var h hinter
	if errors.As(err, &h) {
		hint = h.Hint()
	}
	var e *Error
	if errors.As(err, &e) {
		if e.hint != "" {
			hint = e.hint
		}
		if e.Code <= ExitOK || e.Code > 125 {
			return ExitRuntime, hint
		}
		return e.Code, hint
	}
	return ExitRuntime, hint
}
