package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestSpool: what is written comes back whole, from memory while it fits and from a temp
// file once it does not; the file is gone once the spool is closed.
func TestSpool(t *testing.T) {
	for _, n := range []int{0, 10, 64, 65, 1000} {
		s := &spool{limit: 64}
		var want bytes.Buffer
		for i := 0; want.Len() < n; i++ {
			chunk := strings.Repeat(string(rune('a'+i%26)), min(7, n-want.Len()))
			want.WriteString(chunk)
			if _, err := s.Write([]byte(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		if spilled := s.file != nil; spilled != (n > 64) {
			t.Errorf("%d bytes: spilled to a file: %v", n, spilled)
		}
		for range 2 { // a spool is read again from the start each time
			r, err := s.reader()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%d bytes: read back %d bytes, %v", n, len(got), err)
			}
		}
		s.close()
	}
}

// TestHeldOutputSpills: writes beyond what a spool keeps in memory still come out whole
// and in order with the documents held by reference.
func TestHeldOutputSpills(t *testing.T) {
	var h heldOutput
	defer h.close()
	big := bytes.Repeat([]byte("0123456789"), spoolMemory/10+100)
	h.Write([]byte("a"))
	h.Write(big)
	h.hold([]byte("doc"))
	h.Write([]byte("z"))
	if h.parts[0].writes.file == nil {
		t.Fatal("the big write stayed in memory")
	}
	var out bytes.Buffer
	if _, err := h.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	want := "a" + string(big) + "docz"
	if out.String() != want {
		t.Fatalf("got %d bytes, want %d", out.Len(), len(want))
	}
}

// TestReadUnsized: a document of unknown size comes back whole in one allocation of its
// size (not a doubled buffer), small or past the memory limit, and also when no temp file
// can be made.
func TestReadUnsized(t *testing.T) {
	for _, tmp := range []string{"", "/nonexistent/ctxkit"} {
		if tmp != "" {
			t.Setenv("TMPDIR", tmp)
		}
		for _, n := range []int{0, 100, unsizedMemory + 1, 3*unsizedMemory + 17} {
			want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			got, err := readUnsized(struct{ io.Reader }{bytes.NewReader(want)})
			if err != nil {
				t.Fatalf("TMPDIR=%q, %d bytes: %v", tmp, n, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("TMPDIR=%q, %d bytes: read back %d bytes, not the same", tmp, n, len(got))
			}
			if tmp == "" && n > unsizedMemory && cap(got) > n+bytes.MinRead {
				t.Errorf("%d bytes read into a buffer of %d", n, cap(got))
			}
		}
	}
}

// TestSpoolNeverCopies: the bytes a spool holds in memory stay where they were first
// written (chunks are filled, never grown), no chunk is longer than lastChunk unless
// reserved so, and they read back whole at any offset, across chunk boundaries.
func TestSpoolNeverCopies(t *testing.T) {
	s := &spool{limit: 6 << 20}
	defer s.close()
	var want bytes.Buffer
	s.Write([]byte("x"))
	want.WriteString("x")
	first := &s.mem[0][0]
	for i := 0; want.Len() < 5<<20; i++ {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%70000)
		want.Write(p)
		s.Write(p)
	}
	if s.file != nil {
		t.Fatal("spilled below its limit")
	}
	if &s.mem[0][0] != first {
		t.Fatal("the first bytes written were moved")
	}
	for i, c := range s.mem {
		if cap(c) > lastChunk {
			t.Fatalf("chunk %d holds %d bytes", i, cap(c))
		}
	}
	for _, off := range []int{0, 1, firstChunk - 3, firstChunk, 3 << 20, want.Len() - 5} {
		got := make([]byte, 100)
		n, err := s.ReadAt(got, int64(off))
		end := min(off+100, want.Len())
		if n != end-off || !bytes.Equal(got[:n], want.Bytes()[off:end]) || (err != nil) != (end-off < 100) {
			t.Fatalf("ReadAt(%d): %d bytes, %v", off, n, err)
		}
	}
	r, _ := s.reader()
	if got, _ := io.ReadAll(r); !bytes.Equal(got, want.Bytes()) {
		t.Fatal("read back differs")
	}
}

// TestHeldOutputKeep: a spool given whole comes out in its place, and a write after it
// goes to a spool of its own rather than into the one kept.
func TestHeldOutputKeep(t *testing.T) {
	var h heldOutput
	defer h.close()
	in := &spool{limit: 16}
	in.Write([]byte("the input, past the memory limit"))
	h.Write([]byte("a"))
	h.keep(in)
	h.Write([]byte("z"))
	if in.size != int64(len("the input, past the memory limit")) {
		t.Fatalf("a write after keep went into the kept spool (%d bytes)", in.size)
	}
	var out bytes.Buffer
	if _, err := h.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	if want := "athe input, past the memory limitz"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
