package cli

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// whole reads a streamed document again, whole, and parses it as readDocument parses a
// document it reads whole, for a tool that learns from the first pass that it needs the
// text of the whole document after all (ctx-repair fixing a broken transcript). The input
// is what the first pass read: the spool, or the file's first bytes, which must not have
// changed since (as rewrite checks). The document becomes one read whole (Input and
// Transcript set, Outline nil): write it with writeDocument, not rewrite. A Document read
// whole is returned as it is.
func (d *document) whole() (input, *transcript.Transcript, error) {
	if d.Transcript != nil {
		return d.Input, d.Transcript, nil
	}
	if d.Outline == nil {
		return input{}, nil, errors.New("internal: Whole of a document that was not read")
	}
	r, check, err := d.reread()
	if err != nil {
		return input{}, nil, RuntimeError(fmt.Errorf("read %s again: %w", displayName(d.Name), err))
	}
	buf := bytes.NewBuffer(make([]byte, 0, d.length()+bytes.MinRead))
	_, err = buf.ReadFrom(&readErrors{r: r, what: "read " + displayName(d.Name) + " again"})
	if err == nil {
		err = check()
	}
	if err != nil {
		return input{}, nil, d.rereadError(err)
	}
	tuneGC(buf.Len(), true, true) // the first pass set any memory limit, from the same size
	in := input{Name: d.Name, Data: buf.Bytes()}
	t, err := d.c.parse(in)
	if err != nil {
		return input{}, nil, err
	}
	d.Input, d.Transcript, d.Outline = in, t, nil
	return in, t, nil
}
