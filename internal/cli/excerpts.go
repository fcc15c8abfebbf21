package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/transcript"
)

// Between the two passes over a streamed document, a tool may need the text of a few
// parts of it (the lines it edits, the messages it summarizes): Visit reads them from the
// file, or from the spool of stdin, by offset, without going through the rest.

// visit reads the given spans of a streamed document and calls fn with each part's text
// and document offset, in document order. Overlapping or touching spans are read as one
// part. Each part's text is a new string, which fn may keep (see Doc.Visit). The bytes are read as
// they are now; rewrite checks afterwards that the input did not change since the first
// pass, so a plan made from changed bytes is never written.
func (d *document) visit(spans []transcript.Span, fn func(text string, base int) error) error {
	if d.Outline == nil {
		return errors.New("internal: Visit of a document that was not streamed")
	}
	r, err := d.readerAt()
	if err != nil {
		return RuntimeError(fmt.Errorf("read %s again: %w", displayName(d.Name), err))
	}
	for _, p := range transcript.MergeSpans(spans) {
		if int64(p.End) > d.length() {
			return d.rereadError(errChanged)
		}
		// Read into the string's own memory (fn may keep it), not a buffer copied after.
		buf := make([]byte, p.Len())
		if _, err := r.ReadAt(buf, int64(p.Start)); err != nil {
			if errors.Is(err, io.EOF) {
				err = errChanged
			}
			return d.rereadError(fmt.Errorf("read %s again: %w", displayName(d.Name), err))
		}
		if err := fn(unsafe.String(unsafe.SliceData(buf), len(buf)), p.Start); err != nil {
			return err
		}
	}
	return nil
}

// excerpt gives t (the document's conversation, without text) the text of the given spans
// (see transcript.AddExcerpt), read as visit reads them.
func (d *document) excerpt(t *transcript.Transcript, spans []transcript.Span) error {
	return d.visit(spans, func(text string, base int) error {
		t.AddExcerpt(base, text)
		return nil
	})
}

// rewriteEdits is rewrite with edits decided beforehand (from the conversation and its
// excerpts): the second pass copies the document and splices them in.
func (d *document) rewriteEdits(edits []transcript.Edit) error {
	sorted := slices.Clone(edits)
	slices.SortStableFunc(sorted, func(a, b transcript.Edit) int { return a.Span.Start - b.Span.Start })
	regions := make([]transcript.Span, len(sorted))
	for i, e := range sorted {
		regions[i] = e.Span
	}
	return d.rewrite(regions, transcript.RegionEdits{Decide: func(i int, _ string, _ int) ([]transcript.Edit, error) {
		return sorted[i : i+1], nil
	}})
}

// readerAt reads the input as the first pass read it, at any offset.
func (d *document) readerAt() (io.ReaderAt, error) {
	if d.spool == nil && d.file == nil {
		return nil, errReadOnce
	}
	if d.spool == nil {
		return io.NewSectionReader(d.file, d.base, d.size), nil
	}
	return d.spool.readerAt()
}

// size is how many bytes of a streamed document the first pass read.
func (d *document) length() int64 {
	if d.spool != nil {
		return d.spool.size
	}
	return d.size
}
