package persist

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

func benchDoc(b *testing.B, size int) []byte {
	var buf bytes.Buffer
	if err := testgen.Generate(&buf, testgen.Options{Format: "anthropic", Size: size, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkPlan is the pure tier on a 10 MB document with many large results.
func BenchmarkPlan(b *testing.B) {
	doc := benchDoc(b, 10<<20)
	o := Defaults()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		t, err := transcript.Parse(doc, transcript.Options{})
		if err != nil {
			b.Fatal(err)
		}
		edits, _, _ := Plan(t, o)
		if _, err := t.Apply(edits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMain is the whole command, store writes included (the files exist after the
// first round, as in a pipeline run again).
func BenchmarkMain(b *testing.B) {
	doc := benchDoc(b, 10<<20)
	dir := filepath.Join(b.TempDir(), "store")
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if code, _, errs := runMain(doc, "--store", dir); code != 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkRestore puts the results of a 10 MB document back.
func BenchmarkRestore(b *testing.B) {
	doc := benchDoc(b, 10<<20)
	dir := filepath.Join(b.TempDir(), "store")
	code, out, errs := runMain(doc, "--store", dir)
	if code != 0 {
		b.Fatal(errs)
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if code, _, errs := runMain([]byte(out), "--restore", "--store", dir); code != 0 {
			b.Fatal(errs)
		}
	}
}
