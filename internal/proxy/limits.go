package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// DefaultMaxBody is the default --max-body: above the providers' own limit on a request
// (32 MB for the Messages API), so that the provider, not the proxy, refuses a body the
// provider would refuse.
const DefaultMaxBody = 64 << 20

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
