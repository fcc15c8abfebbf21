package count

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// filled is a stdin of n bytes, head then fill over and over, that counts what was read
// of it.
type filled struct {
	head    string
	fill    byte
	n, read int
}

func (z *filled) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	k := min(len(p), z.n-z.read)
	for i := range p[:k] {
		if at := z.read + i; at < len(z.head) {
			p[i] = z.head[at]
		} else {
			p[i] = z.fill
		}
	}
	z.read += k
	return k, nil
}

// TestBinaryRefusedAtOnce: an input whose first bytes are binary (a disk image, an
// archive) is refused with exit 3 on its first block: a 1.1 GB file with a NUL at byte 0
// was read whole before the NUL was found. A file is not read into memory; of stdin, no
// more than the first megabyte or so is read.
func TestBinaryRefusedAtOnce(t *testing.T) {
	const size = 256 << 20
	path := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // (sparse: no disk used)
		t.Fatal(err)
	}
	f.Close()
	var out, errs bytes.Buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code := Main([]string{path}, nil, &out, &errs, nil)
	runtime.ReadMemStats(&after)
	if code != 3 || !strings.Contains(errs.String(), "byte 0: binary data (NUL byte), not a JSON document") {
		t.Errorf("a file: exit %d, stderr %q", code, errs.String())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("a file of %d MB: %d MB allocated to refuse it", size>>20, alloc>>20)
	}

	for _, args := range [][]string{nil, {"--format", "anthropic"}, {"--format", "claude-code"}} {
		in := &filled{n: size}
		out.Reset()
		errs.Reset()
		code := Main(args, in, &out, &errs, nil)
		if code != 3 || !strings.Contains(errs.String(), "binary data (NUL byte)") {
			t.Errorf("stdin %v: exit %d, stderr %q", args, code, errs.String())
		}
		if in.read > 4<<20 {
			t.Errorf("stdin %v: %d MB read to refuse it", args, in.read>>20)
		}
	}

	// A binary start with no NUL in its first block (an image's header), refused at once
	// too.
	img := &filled{head: "\x89PNG\r\n\x1a\n", fill: 0xff, n: size}
	out.Reset()
	errs.Reset()
	if code := Main(nil, img, &out, &errs, nil); code != 3 || !strings.Contains(errs.String(), "byte 0: binary data, not a JSON document") {
		t.Errorf("an image: exit %d, stderr %q", code, errs.String())
	}
	if img.read > 4<<20 {
		t.Errorf("an image: %d MB read to refuse it", img.read>>20)
	}
}
