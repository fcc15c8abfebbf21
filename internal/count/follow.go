package count

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ctxkit/ctxkit/internal/cli"
	"github.com/ctxkit/ctxkit/internal/safefile"
)

// --follow watches a live session: an agent appends to its log as the conversation goes,
// and a person in a second terminal wants the window as it fills. The file is polled
// rather than watched with inotify/kqueue: one stat every half second costs nothing, and
// works the same on every system and file system.

// pollEvery is how often the file's size is read.
const pollEvery = 500 * time.Millisecond

// settle is how long a file whose last line is partial is waited for before it is read
// anyway (a JSON document, which need not end with a newline).
const settle = 2 * time.Second

// clearScreen moves the cursor home and clears a terminal, so each picture replaces the
// one before instead of scrolling.
const clearScreen = "\x1b[H\x1b[2J"

// follow runs once (one report of the file, as ctx-count FILE makes it) now and again each
// time the file grows or is replaced (renamed over), until SIGINT, SIGTERM or
// --follow-timeout: all of them end it with
// exit 0, being how a person stops watching. A file that is not a regular file (a FIFO, a
// terminal) cannot be read twice nor its size polled: it is copied into a spool file as it
// is written (spoolStream), and the spool followed; its reading ends with the others.
func follow(ctx *cli.Context, f *Flags, once func() error) error {
	switch {
	case f.Pass || f.Vs != "" || f.Savings || f.Text || f.All:
		return cli.Usagef("--follow draws one document's report; it does not take --pass, --vs, --savings, --text or --all")
	case f.Output != "":
		return cli.Usagef("--follow writes to stdout; -o does not apply")
	case f.Latest && len(f.Files) == 0:
		// Chosen once: a new session started meanwhile is another conversation.
		name, err := ctx.LatestSession()
		if err != nil {
			return err
		}
		// (--agent did its choosing: the runs that follow read the file)
		f.Latest, f.Agent, f.Files = false, "any", []string{name}
	case len(f.Files) != 1 || f.Files[0] == "-":
		return cli.WithHint(cli.Usagef("--follow watches one file"), "name it, or use --latest")
	}
	name := f.Files[0]
	st, err := os.Stat(name)
	if err != nil {
		return cli.RuntimeError(fmt.Errorf("read %q: %w", name, errors.Unwrap(err)))
	} else if st.IsDir() {
		return cli.WithHint(cli.Usagef("--follow watches one file, not a folder (%q)", name), "name the session, or use --latest")
	}

	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if f.FollowTimeout > 0 {
		var cancelT context.CancelFunc
		stop, cancelT = context.WithTimeout(stop, f.FollowTimeout)
		defer cancelT()
	}
	var streamErr <-chan error // the spool's copying, for a file that is not regular
	if !st.Mode().IsRegular() {
		spool, failed, end, err := spoolStream(stop, name)
		if err != nil {
			return err
		}
		defer end()
		f.shownAs, f.Files, name, streamErr = name, []string{spool}, spool, failed
	}
	human := (ctx.StdoutTTY || f.Picture) && !f.JSON
	draw := func() error {
		if human {
			io.WriteString(ctx.Stdout, clearScreen)
		}
		err := once()
		// A change that does not read (a record cut short, which a partial line can look
		// like when the agent wrote no newline yet) was reported on stderr by the run
		// loop; the next change is waited for. Anything else (the file gone) ends it.
		var e *cli.Error
		if err != nil && !(errors.As(err, &e) && e.Code == cli.ExitInput) {
			return err
		}
		return ctx.Flush()
	}

	var last int64 = -1
	var changed time.Time // when the size last changed without a whole last line
	var file os.FileInfo  // the file the size is of
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		size, whole, st, err := tail(name)
		if err != nil {
			return err
		}
		// A file replaced by a rename (ctx-proxy's request as sent, an editor's save) is
		// another file, whatever its size, and a whole one: read it again at once.
		replaced := file != nil && st != nil && !os.SameFile(file, st)
		file = st
		switch {
		case replaced:
			last, changed = size, time.Time{}
			if err := draw(); err != nil {
				return err
			}
		case size == last:
			if !changed.IsZero() && time.Since(changed) >= settle {
				changed = time.Time{}
				if err := draw(); err != nil {
					return err
				}
			}
		case whole || size == 0:
			last, changed = size, time.Time{}
			if err := draw(); err != nil {
				return err
			}
		default:
			last, changed = size, time.Now()
		}
		select {
		case <-stop.Done():
			return nil
		case err := <-streamErr:
			return err
		case <-tick.C:
		}
	}
}

// spoolStream copies what is written to name, a FIFO or another file that is not regular,
// into a new temporary file, until stop, and returns that file's path; failed says why
// the copying stopped early, and end ends it and removes the file. The stream
// is opened without blocking (O_NONBLOCK: a FIFO's open(2) would wait for a writer), so
// its reads go through Go's poller and closing it wakes a read waiting for data: neither
// waits past stop. A FIFO without a writer reads as at its end: the copying waits and tries
// again, for the writer to come (or the next one: a log appended to by several runs).
func spoolStream(stop context.Context, name string) (spool string, failed <-chan error, end func(), err error) {
	in, err := safefile.OpenStream(name)
	if err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return "", nil, nil, cli.RuntimeError(fmt.Errorf("read %q: %w", name, err))
	}
	// (a new file, 0600, never a name planted there: safefile's rules)
	out, err := safefile.CreateTemp(os.TempDir(), "ctx-count-follow-", ".spool")
	if err != nil {
		in.Close()
		return "", nil, nil, cli.RuntimeError(fmt.Errorf("spool %q: %w", name, err))
	}
	spool = out.Name()
	stop, quit := context.WithCancel(stop)
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if _, werr := out.Write(buf[:n]); werr != nil {
					errc <- cli.RuntimeError(fmt.Errorf("spool %q: %w", name, werr))
					return
				}
			}
			switch {
			case err == nil:
			case errors.Is(err, io.EOF):
				// No writer (yet, or any more): wait for one.
				select {
				case <-stop.Done():
					return
				case <-time.After(pollEvery):
				}
			case errors.Is(err, os.ErrClosed) || stop.Err() != nil:
				return
			default:
				errc <- cli.RuntimeError(fmt.Errorf("read %q: %w", name, err))
				return
			}
		}
	}()
	end = func() {
		quit()
		in.Close() // (wakes a read waiting for data)
		<-done
		out.Close()
		os.Remove(spool)
	}
	return spool, errc, end, nil
}

// tail is the file's size, whether it ends with a whole line (its last byte a newline),
// and the file it opened (the path may be renamed over between two looks).
func tail(name string) (size int64, whole bool, file os.FileInfo, err error) {
	fh, err := os.Open(name)
	if err != nil {
		return 0, false, nil, cli.RuntimeError(fmt.Errorf("read %q: %w", name, errors.Unwrap(err)))
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return 0, false, nil, cli.RuntimeError(fmt.Errorf("read %q: %w", name, err))
	}
	if st.Size() == 0 {
		return 0, false, st, nil
	}
	var b [1]byte
	if _, err := fh.ReadAt(b[:], st.Size()-1); err != nil {
		return 0, false, nil, cli.RuntimeError(fmt.Errorf("read %q: %w", name, err))
	}
	return st.Size(), b[0] == '\n', st, nil
}
