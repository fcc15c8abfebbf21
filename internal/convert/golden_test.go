package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt from the current code")

const goldenPath = "testdata/golden.txt"

// goldenInput is one document the golden tests convert.
type goldenInput struct {
	name string // corpus/... for the shared corpus, which may be absent
	data []byte
}

// TestGolden pins every output of Convert byte for byte: for each input and target, the
// SHA-256 of the document, the losses, the repairs and the message count, as the code
// wrote them when the golden file was made. It lets the writers be rewritten for speed
// with proof that nothing they write changed. The input's own hash is kept too, so a
// changed input (a corpus update, a change to internal/testgen) is told apart from a
// changed output; after such a change, rerun with -update from code known to be right.
func TestGolden(t *testing.T) {
	var lines []string
	for _, in := range goldenInputs(t) {
		tr, err := transcript.Parse(in.data, transcript.Options{Name: in.name})
		for _, to := range Targets {
			var out string
			if err != nil {
				out = sum([]byte("parse error: " + err.Error()))
			} else {
				out = resultSum(Convert(tr, to))
			}
			lines = append(lines, in.name+" "+string(to)+" "+sum(in.data)+" "+out)
		}
	}
	checkGolden(t, goldenPath, lines)
}

// checkGolden compares lines of NAME TARGET INPUT-SHA OUTPUT-SHA with the golden file at
// path, or rewrites it with -update. Corpus lines are skipped when the corpus is absent.
func checkGolden(t *testing.T, path string, lines []string) {
	haveCorpus := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "corpus/") })
	if *update {
		if !haveCorpus {
			t.Fatal("-update needs the shared corpus: the golden file would lose its corpus lines")
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d lines to %s", len(lines), path)
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -args -update)", err, t.Name())
	}
	got := map[string]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		got[f[0]+" "+f[1]] = f[2] + " " + f[3]
	}
	checked, mismatched := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("%s: line %q: want NAME TARGET INPUT-SHA OUTPUT-SHA", path, line)
		}
		key := f[0] + " " + f[1]
		g, ok := got[key]
		switch {
		case !ok && strings.HasPrefix(f[0], "corpus/") && !haveCorpus:
			continue
		case !ok:
			t.Errorf("%s: input gone", key)
			continue
		}
		delete(got, key)
		checked++
		gIn, gOut, _ := strings.Cut(g, " ")
		switch {
		case gIn != f[2]:
			t.Errorf("%s: the input changed (rerun -update from code known to be right)", key)
		case gOut != f[3]:
			mismatched++
			if mismatched <= 20 {
				t.Errorf("%s: output differs from %s", key, path)
			}
		}
	}
	for key := range got {
		t.Errorf("%s: not in %s (rerun -update from code known to be right)", key, path)
	}
	if mismatched > 20 {
		t.Errorf("%d outputs differ in all", mismatched)
	}
	t.Logf("%d conversions checked against %s (corpus present: %v)", checked, path, haveCorpus)
}

// resultSum hashes what Convert returned: the document, the losses and repairs it reports
// (what ctx-convert warns about), the message count, or the error.
func resultSum(res *Result, err error) string {
	h := sha256.New()
	if err != nil {
		fmt.Fprintf(h, "error: %v", err)
		return hex.EncodeToString(h.Sum(nil))
	}
	h.Write(res.Doc)
	h.Write([]byte{0})
	for _, l := range res.Losses {
		fmt.Fprintf(h, "loss %s %d %s\n", l.Kind, l.Count, l.Detail)
	}
	for _, p := range res.Repaired {
		fmt.Fprintf(h, "repaired %s\n", p)
	}
	fmt.Fprintf(h, "messages %d\n", res.Messages)
	return hex.EncodeToString(h.Sum(nil))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// goldenInputs: the shared corpus, the repository's samples, the documents of every
// txtar script, this package's fuzz corpus, and generated documents of every format;
// each of the non-corpus ones also with its string values respelled with escapes
// transcript.Quote would not write (the writers must not copy those as they are).
func goldenInputs(t *testing.T) []goldenInput {
	var ins, own []goldenInput
	for _, p := range corpusOrNone(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, rel, ok := strings.Cut(filepath.ToSlash(p), "/shared/corpus/")
		if !ok {
			t.Fatalf("%s: not under shared/corpus", p)
		}
		ins = append(ins, goldenInput{name: "corpus/" + rel, data: data})
	}
	for _, p := range invariant.Samples(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, goldenInput{name: "testdata/" + filepath.Base(p), data: data})
	}
	for _, d := range invariant.ScriptDocuments(t) {
		own = append(own, goldenInput{name: "script/" + d.Script + "/" + d.Name, data: d.Data})
	}
	fuzz, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzConvert", "*"))
	for _, p := range fuzz {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(string(data), "\n")
		lit = strings.TrimSpace(lit)
		doc, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "string("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		own = append(own, goldenInput{name: "fuzz/" + filepath.Base(p), data: []byte(doc)})
	}
	for _, format := range testgen.Formats {
		for _, o := range []testgen.Options{
			{Size: 20 << 10, Seed: 1}, {Size: 20 << 10, Seed: 2, Images: true},
			{Size: 150 << 10, Seed: 3, Images: true}, {Size: 600 << 10, Seed: 4, Images: true},
		} {
			o.Format = format
			var buf bytes.Buffer
			if err := testgen.Generate(&buf, o); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("gen/%s-%d-seed%d", format, o.Size, o.Seed)
			if o.Images {
				name += "-images"
			}
			own = append(own, goldenInput{name: name, data: buf.Bytes()})
		}
	}
	for _, in := range own {
		ins = append(ins, in,
			goldenInput{name: in.name + "+respelled", data: respell(in.data, true)},
			goldenInput{name: in.name + "+slashes", data: respell(in.data, false)})
	}
	return ins
}

// respell rewrites the string values of a JSON document or JSONL (not the keys, so the
// document keeps its shape) with escapes Quote never writes: `\/`, and when all is set
// also non-ASCII characters and every 'e' as \uXXXX with uppercase hex, astral
// characters as surrogate pairs. The decoded text is the same; only its spelling
// differs: with all, nearly every literal; without, only those with a slash. Anything
// that is not valid JSON is respelled as far as the scan goes and keeps the rest.
func respell(doc []byte, all bool) []byte {
	out := make([]byte, 0, len(doc)+len(doc)/8)
	for i := 0; i < len(doc); {
		if doc[i] != '"' {
			out = append(out, doc[i])
			i++
			continue
		}
		end := i + 1
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(doc) {
			return append(out, doc[i:]...)
		}
		lit := doc[i : end+1]
		next := end + 1
		for next < len(doc) && (doc[next] == ' ' || doc[next] == '\t' || doc[next] == '\r' || doc[next] == '\n') {
			next++
		}
		if next < len(doc) && doc[next] == ':' {
			out = append(out, lit...) // a key
		} else {
			out = respellLiteral(out, lit, all)
		}
		i = end + 1
	}
	return out
}

func respellLiteral(out, lit []byte, all bool) []byte {
	const hexDigits = "0123456789ABCDEF"
	u := func(out []byte, r rune) []byte {
		return append(out, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	s := lit[1 : len(lit)-1]
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			// An escape as it was (its second byte may be a quote or a backslash).
			n := 2
			if i+1 < len(s) && s[i+1] == 'u' {
				n = 6
			}
			n = min(n, len(s)-i)
			out = append(out, s[i:i+n]...)
			i += n
		case c == '/':
			out = append(out, '\\', '/')
			i++
		case !all:
			out = append(out, c)
			i++
		case c == 'e':
			out = u(out, 'e')
			i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				out = append(out, c) // invalid UTF-8 stays as it is
			case r > 0xFFFF:
				r -= 0x10000
				out = u(u(out, 0xD800+r>>10), 0xDC00+r&0x3ff)
			default:
				out = u(out, r)
			}
			i += n
		}
	}
	return append(out, '"')
}

const goldenCLIPath = "testdata/golden-cli.txt"

// TestGoldenCLI pins what ctx-convert --stats writes for every golden input and target:
// the SHA-256 of stdout, stderr (warnings and the statistics line, with the temporary
// directory's name taken out) and the exit status. It covers what Main adds to Convert.
func TestGoldenCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("converts every golden input through Main")
	}
	dir := t.TempDir()
	var lines []string
	for _, in := range goldenInputs(t) {
		ext := ".json"
		if strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(in.name, "+respelled"), "+slashes"), ".jsonl") {
			ext = ".jsonl"
		} else if strings.HasPrefix(in.name, "gen/claude-code") || strings.HasPrefix(in.name, "gen/codex") {
			ext = ".jsonl"
		}
		// Named after the input, so stderr does not depend on which inputs are present.
		path := filepath.Join(dir, sum([]byte(in.name))[:16]+ext)
		if err := os.WriteFile(path, in.data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, to := range Targets {
			var stdout, stderr bytes.Buffer
			code := Main([]string{"--to", string(to), "--stats", path}, strings.NewReader(""), &stdout, &stderr, nil)
			h := sha256.New()
			h.Write(stdout.Bytes())
			fmt.Fprintf(h, "\x00%s\x00%d", strings.ReplaceAll(stderr.String(), dir, "DIR"), code)
			lines = append(lines, in.name+" "+string(to)+" "+sum(in.data)+" "+hex.EncodeToString(h.Sum(nil)))
		}
	}
	checkGolden(t, goldenCLIPath, lines)
}
