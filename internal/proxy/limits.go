package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultMaxBody is the default --max-body: above the providers' own limit on a request
// (32 MB for the Messages API), so that the provider, not the proxy, refuses a body the
// provider would refuse.
const DefaultMaxBody = 64 << 20

// The defaults of --read-timeout, --idle-timeout and --write-timeout.
const (
	DefaultReadTimeout  = 30 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
	DefaultWriteTimeout = 5 * time.Minute
)

// bodyRate is the slowest a declared body is given time for, on top of the read timeout:
// a second per MiB, so that a body at --max-body over a slow link is not cut.
const bodyRate = 1 << 20

// HTTPServer is the net/http server that serves s, with its timeouts: headers within the
// read timeout, a connection idle between requests closed after the idle timeout. It has
// no ReadTimeout or WriteTimeout of its own: they would bound a whole request and a whole
// answer, and a stream may rightly go on for many minutes; ServeHTTP sets the body's
// deadline from its length and the answer's per write (deadlines).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: orDuration(s.ReadTimeout, DefaultReadTimeout),
		IdleTimeout:       orDuration(s.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    1 << 20,
	}
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// deadlines sets the connection's deadlines for one request: the body must arrive within
// the read timeout plus a second per MiB it declares (an undeclared length gets the read
// timeout alone), after which the deadline is lifted so that a long answer is not cut by
// it; the write deadline the connection's last answer left is lifted too (forward sets its
// own, per write).
func (s *Server) deadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	d := orDuration(s.ReadTimeout, DefaultReadTimeout)
	if r.ContentLength > 0 {
		d += time.Duration(r.ContentLength) * time.Second / bodyRate
	}
	if rc.SetReadDeadline(time.Now().Add(d)) == nil {
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
	}
}

// deadlineBody lifts the read deadline once the body has been read: net/http then reads
// on in the background to see the client go, and a deadline passing during a long answer
// would cancel the request.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (s *Server) writeTimeout() time.Duration {
	return orDuration(s.WriteTimeout, DefaultWriteTimeout)
}

func (s *Server) maxBody() int64 {
	if s.MaxBody == 0 {
		return DefaultMaxBody
	}
	return s.MaxBody
}

// limitBody refuses a request whose Content-Length is over the limit before reading any
// of it, and bounds the reading of the others (a chunked body declares no length). It
// reports whether the request goes on.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) bool {
	max := s.maxBody()
	if max < 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	if r.ContentLength > max {
		tooLarge(w, r, max)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, max)
	return true
}

// tooLarge answers 413 and closes the connection: the rest of the body is not read.
func tooLarge(w http.ResponseWriter, r *http.Request, max int64) {
	w.Header().Set("Connection", "close")
	apiError(w, r, http.StatusRequestEntityTooLarge,
		fmt.Sprintf("ctx-proxy: the request body is over %d bytes (--max-body)", max))
}

// bodyError answers a request whose body could not be read, with the status that says
// why: over the limit, or not all there.
func (s *Server) bodyError(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		tooLarge(w, r, mbe.Limit)
		return
	}
	w.Header().Set("Connection", "close")
	if errors.Is(err, os.ErrDeadlineExceeded) {
		apiError(w, r, http.StatusRequestTimeout, "ctx-proxy: the request body did not arrive within --read-timeout")
		return
	}
	apiError(w, r, http.StatusBadRequest, "ctx-proxy: reading the request: "+err.Error())
}

// readBody reads a conversation's body whole. A declared length is read into one buffer
// of that size; a body of unknown length in chunks joined at the end, so that one refused
// at the limit has cost the limit, not the twice that a doubling buffer reaches.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 {
		buf := make([]byte, n)
		_, err := io.ReadFull(r.Body, buf)
		return buf, err
	}
	var chunks [][]byte
	cur := make([]byte, 0, 32<<10)
	total := 0
	for {
		if len(cur) == cap(cur) {
			chunks = append(chunks, cur)
			cur = make([]byte, 0, min(2*cap(cur), 4<<20))
		}
		n, err := r.Body.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(chunks) == 0 {
		return cur, nil
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return append(out, cur...), nil
}

// bodyReader is a request body on its way to the upstream as it is read (a path passed
// through): it keeps why reading it failed, so that the client hears the cause (413, 400)
// rather than a 502 when the upstream request fails for it.
type bodyReader struct {
	io.ReadCloser
	mu  sync.Mutex
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *bodyReader) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
