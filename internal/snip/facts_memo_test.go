package snip

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// The facts a tier takes from its memo for a block at the same offset as in the document
// planned before are the facts read afresh, request after request: documents that grow,
// results replaced at the same offset (another text, a placeholder), messages dropped
// (everything after them moved), white space changed, in every format.
func TestFactsMemoIsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2))
	c := estimate()
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 120 << 10, Seed: 3, Images: true}); err != nil {
			t.Fatal(err)
		}
		o := rules()
		o.Store, o.Redact, o.Kept = t.TempDir(), redact.New(), &KeptMemo{}
		fresh := o
		fresh.Kept = nil
		docs := versions(t, rng, buf.Bytes())
		reused, read := 0, 0
		for n, doc := range docs {
			tr, err := transcript.Parse(doc, transcript.Options{})
			if err != nil {
				t.Fatalf("%s version %d: %v", format, n, err)
			}
			for mi := range tr.Messages {
				for bi := range tr.Messages[mi].Blocks {
					b := &tr.Messages[mi].Blocks[bi]
					if b.Kind != transcript.ToolCall && b.Kind != transcript.ToolResult {
						continue
					}
					called := false
					got := o.Kept.facts(tr, b, o, func() facts { called = true; return readFacts(tr, b, o, c) })
					want := readFacts(tr, b, fresh, c)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s version %d, message %d block %d (memo: %v):\n got %+v\nwant %+v", format, n, mi, bi, !called, got, want)
					}
					if called {
						read++
					} else {
						reused++
					}
				}
			}
		}
		t.Logf("%s: %d versions, %d facts reused, %d read", format, len(docs), reused, read)
		if reused == 0 || read == 0 {
			t.Errorf("%s: %d facts reused, %d read: the test does not reach both", format, reused, read)
		}
	}
}

// versions are successive documents as a tier sees them in a conversation: the document
// cut short and growing (a JSONL log line by line; a JSON request read whole), and edits
// of the one before: a result's text replaced by another of another length or of the
// same (at the same offset), a message dropped, white space added before a message.
func versions(t *testing.T, rng *rand.Rand, doc []byte) [][]byte {
	tr, err := transcript.Parse(doc, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	if tr.Format.JSONL() {
		for k := len(tr.Records) / 2; k < len(tr.Records); k += max(1, len(tr.Records)/8) {
			out = append(out, bytes.Clone(doc[:tr.Records[k].Next]))
		}
	}
	out = append(out, doc)
	for round := range 18 {
		prev := out[len(out)-1]
		pt, err := transcript.Parse(prev, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var results []*transcript.Block
		for mi := range pt.Messages {
			for bi := range pt.Messages[mi].Blocks {
				if b := &pt.Messages[mi].Blocks[bi]; b.Kind == transcript.ToolResult && !b.BodyJSON && len(b.Parts) == 0 && b.Body.Len() > 2 {
					results = append(results, b)
				}
			}
		}
		var e transcript.Edit
		switch {
		case round%3 == 0 && len(results) > 0:
			b := results[rng.IntN(len(results))]
			with := transcript.Quote(fmt.Sprintf("replaced %d", round))
			switch round % 9 {
			case 3: // the same length: only the bytes tell it
				with = `"` + strings.Repeat("z", b.Body.Len()-2) + `"`
			case 6:
				with = transcript.Quote(Marker + " (same offset)")
			}
			e = transcript.Edit{Span: b.Body, With: with}
		case round%3 == 1 && len(pt.Messages) > 4:
			// a message dropped: for JSONL its line, else the element and its comma
			m := pt.Messages[1+rng.IntN(len(pt.Messages)-3)]
			if m.Header {
				continue
			}
			if pt.Format.JSONL() {
				r := pt.Records[0]
				for _, rec := range pt.Records {
					if rec.Span.Start <= m.Span.Start && m.Span.Start < rec.Next {
						r = rec
					}
				}
				e = transcript.Edit{Span: transcript.Span{Start: r.Span.Start, End: r.Next}}
			} else {
				end := m.Span.End
				for end < len(prev) && prev[end] != ',' && prev[end] != ']' {
					end++
				}
				if end >= len(prev) || prev[end] != ',' {
					continue
				}
				e = transcript.Edit{Span: transcript.Span{Start: m.Span.Start, End: end + 1}}
			}
		default:
			m := pt.Messages[len(pt.Messages)/2]
			if m.Header {
				continue
			}
			e = transcript.Edit{Span: transcript.Span{Start: m.Span.Start, End: m.Span.Start}, With: " "}
			if pt.Format.JSONL() {
				e.With = "\n"
			}
		}
		next, err := pt.Apply([]transcript.Edit{e})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := transcript.Parse(next, transcript.Options{}); err != nil {
			continue // an edit this format does not read (a record its log needs)
		}
		out = append(out, next)
	}
	return out
}

// sameBlock compares every field of a Block: a field added to Block and not to
// blockFields would let the memo take a block read otherwise for the same one.
func TestSameBlockFields(t *testing.T) {
	base := transcript.Block{Kind: transcript.ToolResult, Type: "tool_result", Span: transcript.Span{Start: 1, End: 9}}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		changed := base
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int8, reflect.Uint8:
			if f.CanInt() {
				f.SetInt(f.Int() + 7)
			} else {
				f.SetUint(f.Uint() + 7)
			}
		case reflect.Struct: // a Span
			f.Field(0).SetInt(f.Field(0).Int() + 3)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and sameBlock) to change it", typ.Field(i).Name, f.Kind())
		}
		if sameBlock(&base, &changed) {
			t.Errorf("sameBlock does not see field %s change", typ.Field(i).Name)
		}
	}
	if !sameBlock(&base, &base) {
		t.Error("a block is not the same as itself")
	}
}
