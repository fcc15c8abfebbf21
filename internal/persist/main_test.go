package persist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/budget"
	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/snip"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// runMain runs ctx-persist in-process on stdin and returns its exit status and outputs.
func runMain(stdin []byte, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, bytes.NewReader(stdin), &out, &errb, nil)
	return code, out.String(), errb.String()
}

// transform is ctx-persist into store dir at a threshold, as a whole-document function.
// The document is read from a file called name, as a user would name it: an empty .jsonl
// file is an empty session, empty stdin is not a document.
func transform(dir, name, threshold string, extra ...string) invariant.Transform {
	return func(in []byte) ([]byte, error) {
		file := filepath.Join(dir+".in", filepath.Base(name))
		os.MkdirAll(filepath.Dir(file), 0o700)
		if err := os.WriteFile(file, in, 0o600); err != nil {
			return nil, err
		}
		code, out, errs := runMain(nil, append([]string{"--store", dir, "--threshold", threshold, file}, extra...)...)
		if code != 0 {
			return nil, fmt.Errorf("exit %d: %s", code, errs)
		}
		return []byte(out), nil
	}
}

var thresholds = []string{"30KB", "10KB", "1KB"}

// figures adds up what a threshold saves over a folder of documents.
type figures struct {
	files, changed            int
	bytesBefore, bytesAfter   int
	tokensBefore, tokensAfter int
}

// roundTrip persists a document at every threshold, checks the invariants and that
// --restore gives the input back byte for byte, and adds up the savings.
func roundTrip(t *testing.T, name string, in []byte, sums map[string]*figures, extra ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, th := range thresholds {
		store := filepath.Join(dir, th)
		out := invariant.Check(t, th+"/"+name, in, transform(store, name, th, extra...), invariant.Options{Lossy: true})
		if out == nil || len(in) == 0 {
			continue
		}
		code, back, errs := runMain(out, "--restore", "--store", store)
		if code != 0 || back != string(in) {
			t.Errorf("%s/%s: restore: exit %d %s; differs from the input at byte %d", th, name, code, errs, firstDiff(back, string(in)))
		}
		// Restoring the restored document changes nothing.
		if !bytes.Equal(out, in) {
			if code, again, _ := runMain([]byte(back), "--restore", "--store", store); code != 0 || again != back {
				t.Errorf("%s/%s: restore is not idempotent", th, name)
			}
		}
		if sums == nil {
			continue
		}
		f := sums[th]
		if f == nil {
			f = &figures{}
			sums[th] = f
		}
		before, err := transcript.Parse(in, transcript.Options{Name: name})
		if err != nil {
			continue
		}
		after, _ := transcript.Parse(out, transcript.Options{Name: name})
		c, _ := tokens.New(tokens.DefaultTokenizer(string(before.Format)))

		f.files++
		if !bytes.Equal(in, out) {
			f.changed++
		}
		f.bytesBefore += len(in)
		f.bytesAfter += len(out)
		if testing.Verbose() { // the figures are for people; exact counts cost time
			f.tokensBefore += measure.Total(before, c)
			f.tokensAfter += measure.Total(after, c)
		}
	}
}

func logFigures(t *testing.T, folder string, sums map[string]*figures) {
	for _, th := range thresholds {
		f := sums[th]
		if f == nil {
			continue
		}
		t.Logf("%-12s threshold %-5s %3d files, %3d changed; bytes %d -> %d (-%d); tokens %d -> %d (-%d, %.1f%%)",
			folder, th, f.files, f.changed, f.bytesBefore, f.bytesAfter, f.bytesBefore-f.bytesAfter,
			f.tokensBefore, f.tokensAfter, f.tokensBefore-f.tokensAfter, 100*float64(f.tokensBefore-f.tokensAfter)/float64(max(1, f.tokensBefore)))
	}
}

// TestCorpus is the round trip over every corpus file at 30 KB, 10 KB and 1 KB (over 30
// of them, spread over every folder, in the quick loop: all with CTXKIT_LONG=1); with -v it
// logs the savings per corpus folder.
func TestCorpus(t *testing.T) {
	files := invariant.Quick(invariant.CorpusFiles(t), 30)
	byFolder := map[string]map[string]*figures{}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		folder := invariant.Folder(f)
		if byFolder[folder] == nil {
			byFolder[folder] = map[string]*figures{}
		}
		name, _ := filepath.Rel(filepath.Dir(filepath.Dir(f)), f)
		roundTrip(t, name, in, byFolder[folder])
	}
	var folders []string
	for k := range byFolder {
		folders = append(folders, k)
	}
	sort.Strings(folders)
	changed := 0
	for _, k := range folders {
		logFigures(t, k, byFolder[k])
		changed += byFolder[k]["1KB"].changed
	}
	// The checks must have seen offloads, not only identities.
	if changed < len(files)/10 {
		t.Errorf("a 1 KB threshold changed only %d of %d files", changed, len(files))
	}
}

func TestSamples(t *testing.T) {
	for _, f := range invariant.Samples(t) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, filepath.Base(f), in, nil)
		// Below the default threshold: the input itself, and no store.
		dir := filepath.Join(t.TempDir(), "store")
		invariant.Identity(t, filepath.Base(f), in, transform(dir, f, "30KB"))
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: a run that offloaded nothing created the store", f)
		}
	}
}

// TestGenerated runs over generated sessions with 50-200 KB results in every format, with
// images, and with subagent lines offloaded too.
func TestGenerated(t *testing.T) {
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 600 << 10, Seed: 4, Images: true}); err != nil {
			t.Fatal(err)
		}
		sums := map[string]*figures{}
		roundTrip(t, format, buf.Bytes(), sums)
		if f := sums["30KB"]; f == nil || f.changed == 0 {
			t.Errorf("%s: nothing offloaded from a document with 50-200 KB results", format)
		}
		if format == "claude-code" {
			roundTrip(t, format+"/sidechains", buf.Bytes(), nil, "--sidechains")
		}
	}
}

// TestConcurrent has 8 runs persist documents into one store at once, half of them the
// same document: every reference resolves and the index lines are whole.
func TestConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var docs [][]byte
	for i := 0; i < 4; i++ {
		docs = append(docs, []byte(anthropicDoc(big(fmt.Sprint("doc", i), 800), big("shared", 900), "last")))
	}
	outs := make([]string, 8)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errs := runMain(docs[w%4], "--store", dir)
			if code != 0 {
				t.Errorf("writer %d: exit %d: %s", w, code, errs)
			}
			outs[w] = out
		}()
	}
	wg.Wait()
	for w, out := range outs {
		code, back, errs := runMain([]byte(out), "--restore", "--store", dir)
		if code != 0 || back != string(docs[w%4]) {
			t.Errorf("writer %d: restore exit %d %s", w, code, errs)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, store.IndexName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	// 5 distinct texts; a text some other writer stored first gets no second line.
	if len(lines) != 5 {
		t.Errorf("%d index lines, want one per distinct file (5):\n%s", len(lines), raw)
	}
	for i, l := range lines {
		var e store.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || !store.ValidHash(e.Hash) || e.Tool != "Read" || e.Source != "-" {
			t.Errorf("index line %d: %v %+v", i+1, err, e)
		}
	}
}

// TestStoreFailure: when the store cannot be written, nothing is emitted and the exit
// status is 4.
func TestStoreFailure(t *testing.T) {
	doc := []byte(anthropicDoc(big("x", 800), "last"))
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	code, out, errs := runMain(doc, "--store", filepath.Join(file, "store"))
	if code != 4 || out != "" || !strings.Contains(errs, "ctx-persist: error: create store") || !strings.Contains(errs, "not a directory") || !strings.Contains(errs, "hint: the document was not changed") {
		t.Errorf("store below a file: exit %d, stdout %d bytes, stderr %q", code, len(out), errs)
	}
	// -o is not written either.
	target := filepath.Join(t.TempDir(), "out.json")
	if code, _, _ := runMain(doc, "--store", filepath.Join(file, "store"), "-o", target); code != 4 {
		t.Errorf("exit %d", code)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("-o file written after a store failure")
	}

	if os.Geteuid() == 0 {
		t.Skip("running as root: a read-only directory does not stop writes")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(ro, 0o700)
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	code, out, errs = runMain(doc, "--store", ro)
	if code != 4 || out != "" || !strings.Contains(errs, "permission denied") {
		t.Errorf("read-only store: exit %d, stdout %d bytes, stderr %q", code, len(out), errs)
	}
}

// TestRestoreFailures: a missing store, a missing, altered or linked file, or a crafted
// reference: exit 4 and nothing on stdout.
func TestRestoreFailures(t *testing.T) {
	text := big("x", 800)
	doc := []byte(anthropicDoc(text, "last"))
	dir := filepath.Join(t.TempDir(), "store")
	code, persisted, _ := runMain(doc, "--store", dir)
	if code != 0 {
		t.Fatal(code)
	}
	h := store.Hash([]byte(text))
	path := filepath.Join(dir, h[:2], h)
	fail := func(name, doc string, want string, args ...string) {
		t.Helper()
		code, out, errs := runMain([]byte(doc), append([]string{"--restore", "--store", dir}, args...)...)
		if code != 4 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q (want %q)", name, code, len(out), errs, want)
		}
	}
	fail("no store", persisted, "no store here", "--store", filepath.Join(t.TempDir(), "none"))
	fail("traversal", strings.Replace(persisted, path, "../../../../etc/passwd", 1), "malformed ctx-persist reference")
	fail("absolute", strings.Replace(persisted, path, "/etc/passwd", 1), "malformed ctx-persist reference")
	fail("short hash", strings.Replace(persisted, path, path[:len(path)-2], 1), "malformed ctx-persist reference")

	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte("line 9:"), []byte("line 9;"), 1), 0o600)
	fail("tampered", persisted, "altered or damaged")
	os.Remove(path)
	fail("missing", persisted, "not in the store")
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(text), 0o600)
	os.Symlink(secret, path)
	fail("symlink", persisted, "symbolic links are refused")
}

func TestList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	doc := []byte(anthropicDoc(big("a", 800), big("b", 800), "last"))
	if code, _, errs := runMain(doc, "--store", dir); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runMain(nil, "--list", "--store", dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || errs != "" || len(lines) != 2 {
		t.Fatalf("--list: exit %d %q\n%s", code, errs, out)
	}
	for _, l := range lines {
		var e store.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Bytes < 30000 || e.Lines != 800 || e.Tool != "Read" || e.ToolCallID == "" || e.Tokens == 0 || e.Time.IsZero() || e.Tokenizer != "estimate" {
			t.Errorf("index line %s: %v", l, err)
		}
	}
	var tty ttyBuffer
	if code := Main([]string{"--list", "--store", dir}, bytes.NewReader(nil), &tty, &bytes.Buffer{}, nil); code != 0 ||
		!strings.HasPrefix(tty.String(), "TIME ") || !strings.Contains(tty.String(), "2 results stored in ") {
		t.Errorf("--list on a terminal: exit %d\n%s", code, tty.String())
	}
	if code, _, errs := runMain(nil, "--list", "--store", filepath.Join(t.TempDir(), "none")); code != 4 || !strings.Contains(errs, "no store here") {
		t.Errorf("--list of a missing store: %d %q", code, errs)
	}
	if code, _, _ := runMain(nil, "--list", "--restore"); code != 2 {
		t.Errorf("--list --restore: exit %d", code)
	}
	if code, _, _ := runMain(nil, "--list", "file.json"); code != 2 {
		t.Errorf("--list FILE: exit %d", code)
	}
}

type ttyBuffer struct{ bytes.Buffer }

func (*ttyBuffer) IsTerminal() bool { return true }

func TestInPlace(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "store")
	var names []string
	var docs []string
	for i := 0; i < 3; i++ {
		name := filepath.Join(tmp, fmt.Sprintf("d%d.json", i))
		doc := openaiDoc(big(fmt.Sprint(i), 800), "last")
		if i == 2 {
			doc = openaiDoc("small", "last")
		}
		os.WriteFile(name, []byte(doc), 0o644)
		names, docs = append(names, name), append(docs, doc)
	}
	if code, _, errs := runMain(nil, append([]string{"-i", "--store", dir}, names...)...); code != 0 {
		t.Fatal(errs)
	}
	for i, n := range names {
		got, _ := os.ReadFile(n)
		if (string(got) == docs[i]) != (i == 2) {
			t.Errorf("%s: changed %v", n, string(got) != docs[i])
		}
	}
	if code, _, errs := runMain(nil, append([]string{"-i", "--restore", "--store", dir}, names...)...); code != 0 {
		t.Fatal(errs)
	}
	for i, n := range names {
		if got, _ := os.ReadFile(n); string(got) != docs[i] {
			t.Errorf("%s: not restored", n)
		}
	}
}

func TestStats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	doc := []byte(anthropicDoc(big("a", 800), "last"))
	code, out, errs := runMain(doc, "--store", dir, "--stats")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(errs), &st) != nil {
		t.Fatalf("exit %d, stats %q", code, errs)
	}
	if st["tool"] != "ctx-persist" || st["items"] != 1.0 || st["saved"].(float64) < 9000 || st["new_files"] != 1.0 || st["trigger"] != "tool results above 30000 bytes" {
		t.Errorf("stats %v", st)
	}
	before, _ := transcript.Parse(doc, transcript.Options{})
	after, _ := transcript.Parse([]byte(out), transcript.Options{})
	c := tokens.Claude(before.Model) // the estimate of an Anthropic document
	if int(st["tokens_before"].(float64)) != measure.Total(before, c) || int(st["tokens_after"].(float64)) != measure.Total(after, c) {
		t.Errorf("stats tokens %v/%v, counted %d/%d", st["tokens_before"], st["tokens_after"], measure.Total(before, c), measure.Total(after, c))
	}
	_, _, errs = runMain([]byte(out), "--store", dir, "--stats", "--restore")
	if json.Unmarshal([]byte(errs), &st) != nil || st["items"] != 1.0 || st["tokens_after"].(float64) != float64(measure.Total(before, c)) {
		t.Errorf("restore stats %q", errs)
	}
}

// TestRestoreSnipped: ctx-persist --restore puts back what ctx-snip cleared into the store,
// byte for byte, in every format, call inputs too; and nested markers: a result ctx-budget
// cut then ctx-snip cleared comes back as cut, a reference ctx-persist left then ctx-snip
// cleared comes back as the original.
func TestRestoreSnipped(t *testing.T) {
	snipAll := []string{"--trigger", "0", "--target", "0", "--keep", "0", "--max-searches", "1", "--clear-inputs", "--repay", "0", "--clear-at-least", "0", "--now", "2100-01-01T00:00:00Z"}
	run := func(main func([]string, io.Reader, io.Writer, io.Writer, func(string) string) int, in []byte, args ...string) []byte {
		t.Helper()
		var out, errb bytes.Buffer
		if code := main(args, bytes.NewReader(in), &out, &errb, nil); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.Bytes()
	}
	restored := func(name string, in, want []byte, dir string) {
		t.Helper()
		if code, back, errs := runMain(in, "--restore", "--store", dir); code != 0 || back != string(want) {
			t.Errorf("%s: restore: exit %d %s; differs at byte %d", name, code, errs, firstDiff(back, string(want)))
		}
	}
	var docs []string
	var names []string
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 200 << 10, Seed: 6, Images: true}); err != nil {
			t.Fatal(err)
		}
		docs, names = append(docs, buf.String()), append(names, format)
	}
	for _, f := range invariant.Samples(t) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, names = append(docs, string(in)), append(names, filepath.Base(f))
	}
	for i, doc := range docs {
		name, in := names[i], []byte(doc)
		dir := filepath.Join(t.TempDir(), "store")
		format := []string{"--store", dir}

		snipped := run(snip.Main, in, append(snipAll, format...)...)
		if bytes.Equal(snipped, in) || !bytes.Contains(snipped, []byte(dir)) {
			t.Errorf("%s: ctx-snip kept nothing in the store", name)
		}
		restored(name, snipped, in, dir)

		cut := run(budget.Main, in, "--cap", "3000")
		restored(name+"/budget", run(snip.Main, cut, append(snipAll, format...)...), cut, dir)

		persisted := run(Main, in, "--threshold", "2KB", "--preview", "500", "--store", dir)
		twice := run(snip.Main, persisted, append(snipAll, format...)...)
		if bytes.Count(twice, []byte(MarkerPrefix)) >= bytes.Count(persisted, []byte(MarkerPrefix)) {
			t.Errorf("%s: ctx-snip cleared no ctx-persist reference", name)
		}
		restored(name+"/persist", twice, in, dir)
	}
}

// TestSnipStoresPersistedOnce: a result ctx-persist stored is, in the document, its
// preview and reference; ctx-snip clearing it later in the pipeline keeps that reference,
// which names the file ctx-persist wrote, and never writes the stored text again (issue
// 39: what ctx-persist stored is referenced, not written again). ctx-persist's files are
// left as they were.
func TestSnipStoresPersistedOnce(t *testing.T) {
	snipAll := []string{"--trigger", "0", "--target", "0", "--keep", "0", "--repay", "0", "--clear-at-least", "0", "--now", "2100-01-01T00:00:00Z"}
	// files is the texts stored, by hash (files of their own or packed).
	files := func(dir string) map[string]string {
		t.Helper()
		m := map[string]string{}
		s, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hashes, err := s.Hashes("")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hashes {
			b, err := s.Get(h)
			if err != nil {
				t.Fatal(err)
			}
			m[h] = string(b)
		}
		return m
	}
	// copies is how many times text is written in the store's files, packs included.
	copies := func(dir, text string) (n int) {
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() && e.Name() != store.IndexName {
				b, _ := os.ReadFile(p)
				n += strings.Count(string(b), text)
			}
			return nil
		})
		return n
	}
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 200 << 10, Seed: 6}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "store")
		code, persisted, errs := runMain(buf.Bytes(), "--threshold", "2KB", "--preview", "500", "--store", dir)
		if code != 0 {
			t.Fatalf("%s: ctx-persist: exit %d: %s", format, code, errs)
		}
		before := files(dir)
		if len(before) == 0 {
			t.Fatalf("%s: ctx-persist stored nothing", format)
		}
		var out, errb bytes.Buffer
		if code := snip.Main(append(snipAll, "--store", dir), strings.NewReader(persisted), &out, &errb, nil); code != 0 {
			t.Fatalf("%s: ctx-snip: exit %d: %s", format, code, errb.String())
		}
		after := files(dir)
		references := 0
		for p, b := range after {
			if was, ok := before[p]; ok {
				if b != was {
					t.Errorf("%s: ctx-persist's %s rewritten", format, p)
				}
				continue
			}
			if strings.Contains(b, MarkerPrefix) {
				references++
			}
			for q, stored := range before {
				if len(stored) > 1000 && strings.Contains(b, stored) {
					t.Errorf("%s: ctx-snip's %s holds ctx-persist's %s again", format, p, q)
				}
			}
		}
		if references == 0 {
			t.Errorf("%s: ctx-snip cleared no ctx-persist reference (%d files before, %d after)", format, len(before), len(after))
		}
		for h, stored := range before {
			if n := copies(dir, stored); len(stored) > 1000 && n != 1 {
				t.Errorf("%s: ctx-persist's %s written %d times in the store", format, h[:12], n)
			}
		}
	}
}

// TestPersistWritesFiles: ctx-persist's reference says "cat PATH", so every text it
// stores is a file of its own at that path, however many a run stores (a store Batch of
// more than 8 new texts would pack them), and also when ctx-snip packed the same texts
// into the store before.
func TestPersistWritesFiles(t *testing.T) {
	snipAll := []string{"--trigger", "0", "--target", "0", "--keep", "0", "--repay", "0", "--clear-at-least", "0", "--now", "2100-01-01T00:00:00Z"}
	catPath := regexp.MustCompile(`Read it all with a file tool or: cat ([^ "\\]+/[0-9a-f]{2}/([0-9a-f]{64}))`)
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 200 << 10, Seed: 6}); err != nil {
			t.Fatal(err)
		}
		for _, snipFirst := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), "store")
			if snipFirst {
				var out, errb bytes.Buffer
				if code := snip.Main(append(snipAll, "--store", dir), bytes.NewReader(buf.Bytes()), &out, &errb, nil); code != 0 {
					t.Fatalf("%s: ctx-snip: exit %d: %s", format, code, errb.String())
				}
				if ents, _ := os.ReadDir(filepath.Join(dir, store.PacksDir)); len(ents) == 0 {
					t.Fatalf("%s: ctx-snip packed nothing: the case is not tested", format)
				}
			}
			code, out, errs := runMain(buf.Bytes(), "--threshold", "2KB", "--preview", "500", "--store", dir)
			if code != 0 {
				t.Fatalf("%s: ctx-persist: exit %d: %s", format, code, errs)
			}
			refs := catPath.FindAllStringSubmatch(out, -1)
			if len(refs) <= 8 {
				t.Fatalf("%s: %d references, want more than 8 (a batch that would pack)", format, len(refs))
			}
			for _, m := range refs {
				data, err := os.ReadFile(m[1])
				if err != nil || store.Hash(data) != m[2] {
					t.Errorf("%s (ctx-snip first: %v): the reference's file %s cannot be read with cat: %v", format, snipFirst, m[2][:12], err)
				}
			}
			if !snipFirst {
				if _, err := os.Stat(filepath.Join(dir, store.PacksDir)); err == nil {
					t.Errorf("%s: ctx-persist wrote a pack", format)
				}
			}
		}
	}
}
