package convert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current code")

const (
	// goldenPath holds a SHA-256 line for each conversion of an input too big or too
	// numerous to read: the corpus, the generated documents, the respelled inputs.
	goldenPath = "testdata/golden.txt"
	// goldenDir holds one readable archive for each of the other inputs (the samples, the
	// scripts' documents, the fuzz seeds): what each target gets, shown.
	goldenDir = "testdata/golden"
)

// goldenInput is one document the golden tests convert.
type goldenInput struct {
	name string // corpus/... for the shared corpus, which may be absent
	data []byte
	file string // its archive under goldenDir, or "" when its outputs are hashed in goldenPath
}

// TestGolden pins every output of Convert byte for byte: for each input and target, the
// document, the losses, the repairs and the message count, as the code wrote them when
// the golden files were made. It lets the writers be rewritten for speed with proof that
// nothing they write changed, and shows a reviewer what a change does change: the
// hand-made inputs have their outputs written out in testdata/golden/ (one archive per
// input), the rest a SHA-256 line in golden.txt. The input's own hash is kept too, so a
// changed input (a corpus update, a change to internal/testgen) is told apart from a
// changed output; after such a change, rerun with -update from code known to be right.
func TestGolden(t *testing.T) {
	ins := goldenInputs(t)
	refuseUpdateWithoutCorpus(t, ins)
	var lines []string
	files := map[string]bool{}
	for _, in := range ins {
		tr, err := transcript.Parse(in.data, transcript.Options{Name: in.name})
		sections := map[string]string{}
		for _, to := range Targets {
			var res *Result
			var cerr error
			if err == nil {
				res, cerr = Convert(tr, to)
			}
			switch {
			case in.file == "" && err != nil:
				lines = append(lines, in.name+" "+string(to)+" "+sum(in.data)+" "+sum([]byte("parse error: "+err.Error())))
			case in.file == "":
				lines = append(lines, in.name+" "+string(to)+" "+sum(in.data)+" "+resultSum(res, cerr))
			case err != nil:
				sections[string(to)+".report"] = "parse error: " + err.Error() + "\n"
			default:
				sections[string(to)+".report"] = report(res, cerr)
				if cerr == nil {
					sections[string(to)+".json"] = render(res.Doc)
				}
			}
		}
		if in.file != "" {
			files[in.file] = true
			checkArchive(t, in, sections)
		}
	}
	checkGolden(t, goldenPath, lines, false)
	checkNoStaleArchives(t, files)
}

// quickInputs is ins, but with CTXKIT_LONG=1, with n of its corpus inputs spread over
// their names (invariant.Quick) and its generated ones without their respelled variants.
func quickInputs(ins []goldenInput, n int) []goldenInput {
	if invariant.IsLong() {
		return ins
	}
	var names []string
	for _, in := range ins {
		if strings.HasPrefix(in.name, "corpus/") {
			names = append(names, in.name)
		}
	}
	keep := map[string]bool{}
	for _, name := range invariant.Quick(names, n) {
		keep[name] = true
	}
	return slices.DeleteFunc(ins, func(in goldenInput) bool {
		respelled := strings.HasSuffix(in.name, "+respelled") || strings.HasSuffix(in.name, "+slashes")
		return strings.HasPrefix(in.name, "corpus/") && !keep[in.name] || strings.HasPrefix(in.name, "gen/") && respelled
	})
}

// refuseUpdateWithoutCorpus: with -update and no corpus, the golden lines would lose
// their corpus lines.
func refuseUpdateWithoutCorpus(t *testing.T, ins []goldenInput) {
	if *update && !slices.ContainsFunc(ins, func(in goldenInput) bool { return strings.HasPrefix(in.name, "corpus/") }) {
		t.Fatal("-update needs the shared corpus: the golden files would lose its lines")
	}
}

// report is what Convert returned, but the document: the message count, the document's
// size and SHA-256 (the rendering beside it shortens long strings), the losses and
// repairs (what ctx-convert warns about), or the error.
func report(res *Result, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "messages %d\ndocument %d bytes, sha256 %s\n", res.Messages, len(res.Doc), sum(res.Doc))
	for _, l := range res.Losses {
		fmt.Fprintf(&b, "loss %s %d: %s\n", l.Kind, l.Count, l.Detail)
	}
	for _, p := range res.Repaired {
		fmt.Fprintf(&b, "repaired %s\n", p)
	}
	return b.String()
}

// render shows a converted document for reading: a value that fits in 100 columns stays
// on one line, a bigger object or array has a line for each member, and a string literal
// over 120 bytes is cut after its first 72 and followed by its length and the start of
// its SHA-256, so that a long tool result takes a line, not a page. The report beside it
// holds the whole document's hash; literals are shown as the document spells them.
func render(doc []byte) string {
	var c bytes.Buffer
	if err := json.Compact(&c, doc); err != nil {
		return string(doc) // not JSON (Convert writes only JSON): as it is
	}
	var out strings.Builder
	layout(&out, c.Bytes(), "", 0)
	out.WriteByte('\n')
	return out.String()
}

// layout writes the compact JSON value v, which starts in column col of a line indented
// by indent.
func layout(out *strings.Builder, v []byte, indent string, col int) {
	short := oneLine(v)
	if col+len(short) <= 100 || (v[0] != '{' && v[0] != '[') {
		out.WriteString(short)
		return
	}
	members := splitMembers(v[1 : len(v)-1])
	out.WriteByte(v[0])
	for i, m := range members {
		out.WriteString("\n" + indent + "  ")
		col := len(indent) + 2
		if v[0] == '{' {
			end := literalEnd(m, 0)
			key := oneLine(m[:end+1]) + ": "
			out.WriteString(key)
			m, col = m[end+2:], col+len(key)
		}
		layout(out, m, indent+"  ", col)
		if i < len(members)-1 {
			out.WriteByte(',')
		}
	}
	out.WriteString("\n" + indent)
	out.WriteByte(v[len(v)-1])
}

// oneLine is the compact JSON value v with a space after each colon and comma and its
// long string literals cut.
func oneLine(v []byte) string {
	var out strings.Builder
	for i := 0; i < len(v); {
		if v[i] != '"' {
			out.WriteByte(v[i])
			if v[i] == ':' || v[i] == ',' {
				out.WriteByte(' ')
			}
			i++
			continue
		}
		end := literalEnd(v, i)
		lit := v[i : end+1]
		if len(lit) <= 120 {
			out.Write(lit)
		} else {
			cut := i + 1 // after the last whole character or escape within 72 bytes
			for j := i + 1; j < end; {
				n := 1
				if v[j] == '\\' {
					n = 2
					if v[j+1] == 'u' {
						n = 6
					}
				} else if _, size := utf8.DecodeRune(v[j:]); size > 1 {
					n = size
				}
				if j+n-i-1 > 72 {
					break
				}
				j += n
				cut = j
			}
			fmt.Fprintf(&out, "%s…[%d bytes, sha256 %s]\"", v[i:cut], len(lit), sum(lit)[:12])
		}
		i = end + 1
	}
	return out.String()
}

// literalEnd is the index of the quote that ends the string literal starting at v[i].
func literalEnd(v []byte, i int) int {
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(v) - 1
}

// splitMembers splits the inside of a compact JSON object or array at its top-level
// commas.
func splitMembers(v []byte) [][]byte {
	var out [][]byte
	depth, start := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			i = literalEnd(v, i)
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	if start < len(v) {
		out = append(out, v[start:])
	}
	return out
}

// checkArchive compares in's archive with sections (TARGET.report, TARGET.json), or with
// -update rewrites it. Its comment names the input and its hash, so a changed input is
// told apart from a changed output.
func checkArchive(t *testing.T, in goldenInput, sections map[string]string) {
	t.Helper()
	comment := fmt.Sprintf("What ctx-convert makes of %s (sha256 %s), for each target.\n"+
		"Strings over 120 bytes are cut; the report has the whole document's hash.\n"+
		"go test ./internal/convert -update rewrites this file.\n", in.name, sum(in.data))
	var names []string
	for _, to := range Targets {
		for _, kind := range []string{".report", ".json"} {
			if _, ok := sections[string(to)+kind]; ok {
				names = append(names, string(to)+kind)
			}
		}
	}
	path := filepath.FromSlash(in.file)
	if *update {
		a := &txtar.Archive{Comment: []byte(comment)}
		for _, name := range names {
			a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(sections[name])})
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Errorf("%s: %v (rerun -update from code known to be right)", in.name, err)
		return
	}
	if string(a.Comment) != comment {
		t.Errorf("%s: the input changed since %s was written (rerun -update from code known to be right)", in.name, path)
		return
	}
	have := map[string]string{}
	for _, f := range a.Files {
		have[f.Name] = string(f.Data)
	}
	for _, name := range names {
		h, ok := have[name]
		delete(have, name)
		switch {
		case !ok:
			t.Errorf("%s: %s: not in %s", in.name, name, path)
		case h != sections[name]:
			t.Errorf("%s: %s differs from %s: %s", in.name, name, path, firstLineDiff(sections[name], h))
		}
	}
	for name := range have {
		t.Errorf("%s: %s: in %s but no longer made", in.name, name, path)
	}
}

// firstLineDiff names the first line where got and want differ.
func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, gl, wl)
		}
	}
	return "same lines"
}

// checkNoStaleArchives: every archive under goldenDir belongs to an input; with -update
// the others are removed.
func checkNoStaleArchives(t *testing.T, files map[string]bool) {
	err := filepath.WalkDir(goldenDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || files[filepath.ToSlash(path)] {
			return err
		}
		if *update {
			return os.Remove(path)
		}
		t.Errorf("%s: no input makes it (rerun -update from code known to be right)", path)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// checkGolden compares lines of NAME TARGET INPUT-SHA OUTPUT-SHA with the golden file at
// path, or rewrites it with -update. Corpus lines are skipped when the corpus is absent,
// and the lines of inputs the run left out when partial (quickInputs).
func checkGolden(t *testing.T, path string, lines []string, partial bool) {
	haveCorpus := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "corpus/") })
	if *update {
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
		case !ok && (partial || strings.HasPrefix(f[0], "corpus/") && !haveCorpus):
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
	// The hand-made inputs get a readable archive each, but for a document that an earlier
	// one already is (scripts share some); the generated ones are too big to read.
	seen := map[string]bool{}
	for _, in := range own {
		if h := sum(in.data); !seen[h] && !strings.HasPrefix(in.name, "gen/") {
			seen[h] = true
			in.file = goldenDir + "/" + strings.Replace(in.name, ".txtar/", "/", 1) + ".txtar"
		}
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
// Its stdout is the document TestGolden shows and its warnings the losses shown beside
// it, so golden-cli.txt keeps hashes only, for every input. The quick loop converts 24
// of the corpus inputs and the generated ones as generated only (quickInputs: what Main
// adds does not depend on how the JSON is spelled, which TestGolden covers), CTXKIT_LONG=1
// and -update every one.
func TestGoldenCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("converts every golden input through Main")
	}
	ins := goldenInputs(t)
	refuseUpdateWithoutCorpus(t, ins)
	all := len(ins)
	if !*update {
		ins = quickInputs(ins, 24)
	}
	dir := t.TempDir()
	var lines []string
	for _, in := range ins {
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
	checkGolden(t, goldenCLIPath, lines, len(ins) < all)
}
