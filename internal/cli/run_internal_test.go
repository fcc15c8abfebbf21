package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocWholeClosesTheStream: once Doc.Whole has read a streamed document again, the
// file the first pass read (or the spool that kept stdin) is closed, not left open for
// the rest of the run: an --in-place run over many files would hold one descriptor each.
func TestDocWholeClosesTheStream(t *testing.T) {
	session := `{"type":"user","uuid":"a","message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m","role":"assistant","content":"y"}}` + "\n"
	file := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(file, []byte(session), 0o644)
	for _, args := range [][]string{{file}, nil} {
		var streams []*document
		g := &struct {
			Common `embed:""`
		}{}
		tool := &Tool{
			Name:    "ctx-fake",
			Grammar: g,
			run: func(c *Context) error {
				return c.Run(Filter{Plan: func(d *Doc) (*Plan, error) {
					streams = append(streams, d.stream)
					if err := d.Whole(); err != nil {
						return nil, err
					}
					return &Plan{}, nil
				}})
			},
		}
		var out, errb bytes.Buffer
		if code := Main(tool, args, strings.NewReader(session), &out, &errb, nil); code != 0 || out.String() != session {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
		if len(streams) != 1 || streams[0] == nil {
			t.Fatalf("%q: the document was not streamed", args)
		}
		if d := streams[0]; d.file != nil || d.spool != nil {
			t.Errorf("%q: after Whole the first pass's input is still held (file %v, spool %v)", args, d.file != nil, d.spool != nil)
		}
	}
}
