package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
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

// TestReleaseLetsGoOfTheInput: after Doc.Release nothing the Doc keeps holds a document read
// whole, not even the model's name that the window was worked out from (a piece of the
// input's text): ctx-snip indexes what it stored after letting the document go.
func TestReleaseLetsGoOfTheInput(t *testing.T) {
	doc := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<16) + `"}]}`
	file := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(file, []byte(doc), 0o644)
	var freed atomic.Bool
	g := &struct {
		Common `embed:""`
	}{}
	tool := &Tool{Name: "ctx-fake", Grammar: g, run: func(c *Context) error {
		return c.Run(Filter{Reports: true, Plan: func(d *Doc) (*Plan, error) {
			if d.Streamed() || len(d.whole.Data) == 0 {
				t.Fatal("the document was not read whole")
			}
			if _, err := d.Measure(); err != nil {
				return nil, err
			}
			if w, _ := d.Window(); w.Model == "" {
				t.Fatal("the window names no model")
			}
			runtime.AddCleanup(&d.whole.Data[0], func(b *atomic.Bool) { b.Store(true) }, &freed)
			d.Release()
			for range 20 {
				if freed.Load() {
					break
				}
				runtime.GC()
				runtime.Gosched()
			}
			return &Plan{}, nil
		}})
	}}
	var out, errb bytes.Buffer
	if code := Main(tool, []string{file}, strings.NewReader(""), &out, &errb, nil); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if !freed.Load() {
		t.Error("the input is still held after Release")
	}
}
