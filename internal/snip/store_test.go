package snip

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/offload"
	"github.com/ctxkit/ctxkit/internal/redact"
	"github.com/ctxkit/ctxkit/internal/store"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// storeDir is the store the placeholders of these tests name: an absolute path of a
// common length (the files themselves go to a map).
const storeDir = "/home/user/project/.ctx-store"

// memStore is a store in memory: what Plan's blobs hold, fetched as store.Get does.
type memStore map[string][]byte

func (m memStore) put(t testing.TB, blobs []offload.Blob) {
	t.Helper()
	for _, b := range blobs {
		if store.Hash([]byte(b.Data)) != b.Hash || b.RawHash != "" && store.Hash([]byte(b.RawData)) != b.RawHash {
			t.Fatalf("blob %s does not hold what its hash says", b.Hash)
		}
		m[b.Hash] = []byte(b.Data)
		if b.RawHash != "" {
			m[b.RawHash] = []byte(b.RawData)
		}
	}
}

func (m memStore) get(h string) ([]byte, error) {
	if data, ok := m[h]; ok {
		return data, nil
	}
	return nil, fmt.Errorf("%s: %w", h, store.ErrNotFound)
}

// costs add up what the placeholders of a run cost.
type costs struct {
	files, changed, placeholders, stubs int
	bytes, tokens, saved                int
}

// add counts one file's run: what it saved, and the size of each placeholder and stub.
func (sum *costs) add(edits []transcript.Edit, st Stats, c tokens.Counter) {
	sum.files++
	if len(edits) > 0 {
		sum.changed++
	}
	sum.saved -= st.TokensDelta
	for _, e := range edits {
		text := e.With
		if strings.HasPrefix(text, `"`) {
			text = gjson.Parse(text).String()
		}
		if i := strings.Index(text, Marker); i > 0 && !strings.HasPrefix(text, stubJSONStart) {
			text = text[i:] // the placeholder without the label it keeps
		}
		if strings.Contains(text, "ctx_snip") || strings.HasPrefix(text, Marker+"cleared ") {
			sum.stubs++
			continue
		}
		sum.placeholders++
		sum.bytes += len(text)
		sum.tokens += c.Count(text)
	}
}

// roundTrip clears doc with a store, checks that every placeholder names a file the plan
// gave and that Restore puts back the input byte for byte (and then finds nothing more),
// and adds up what the placeholders cost.
func roundTrip(t testing.TB, name string, in []byte, o Options, window int, sum *costs) {
	t.Helper()
	tr, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return // the invariant checks say why
	}
	if o.Counter == nil {
		o.Counter, _ = tokens.New(tokens.DefaultTokenizer(string(tr.Format)))
	}
	b, _ := tokens.Window("", window, 0)
	o.Tokens, o.Effective, o.Store = measure.Total(tr, o.Counter), b.Effective, storeDir
	edits, blobs, st := Plan(tr, o)
	if len(blobs) != st.Stored {
		t.Errorf("%s: %d blobs for %d stored texts", name, len(blobs), st.Stored)
	}
	files := memStore{}
	files.put(t, blobs)
	out, err := tr.Apply(edits)
	if err != nil {
		t.Fatalf("%s: apply: %v", name, err)
	}
	after, err := transcript.Parse(out, transcript.Options{Name: name, Format: tr.Format})
	if err != nil {
		t.Fatalf("%s: output does not parse: %v", name, err)
	}
	redo, n, err := Restore(after, files.get)
	if err != nil {
		t.Fatalf("%s: restore: %v", name, err)
	}
	if n != st.Stored {
		t.Errorf("%s: restored %d of %d stored texts", name, n, st.Stored)
	}
	back, err := after.Apply(redo)
	if err != nil {
		t.Fatalf("%s: apply the restore: %v", name, err)
	}
	if !bytes.Equal(back, in) {
		t.Fatalf("%s: restored document differs from the input at byte %d", name, firstDiff(back, in))
	}
	if sum == nil {
		return
	}
	sum.add(edits, st, o.Counter)
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// storeSettings are the settings the round trip is checked at: old results at a small
// window, everything (inputs too) after the cache went cold.
func storeSettings() map[string]Options {
	all := rules()
	all.Keep, all.MaxSearches, all.Trigger, all.Target, all.ClearInputs, all.Now = 0, 1, 0, 0, true, future
	return map[string]Options{"window20k": rules(), "all": all}
}

// TestStoreRoundTripCorpus: on every corpus file, ctx-snip with a store then Restore gives
// the input back byte for byte; with -v it logs what a placeholder costs, with and
// without the store path.
func TestStoreRoundTripCorpus(t *testing.T) {
	files := invariant.CorpusFiles(t)
	with, without := map[string]*costs{}, map[string]*costs{}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		for label, o := range storeSettings() {
			if with[label] == nil {
				with[label], without[label] = &costs{}, &costs{}
			}
			roundTrip(t, label+"/"+name, in, o, 20_000, with[label])
			if testing.Verbose() {
				noStoreCosts(t, name, in, o, 20_000, without[label])
			}
		}
	}
	if with["all"].changed < len(files)/2 {
		t.Errorf("clearing everything changed only %d of %d files", with["all"].changed, len(files))
	}
	for _, label := range []string{"window20k", "all"} {
		logCosts(t, label+" store   ", with[label])
		if testing.Verbose() {
			logCosts(t, label+" no-store", without[label])
		}
	}
}

// noStoreCosts adds up what the placeholders of a --no-store run cost.
func noStoreCosts(t testing.TB, name string, in []byte, o Options, window int, sum *costs) {
	tr, err := transcript.Parse(in, transcript.Options{Name: name})
	if err != nil {
		return
	}
	o.Counter, _ = tokens.New(tokens.DefaultTokenizer(string(tr.Format)))
	b, _ := tokens.Window("", window, 0)
	o.Tokens, o.Effective = measure.Total(tr, o.Counter), b.Effective
	edits, _, st := Plan(tr, o)
	sum.add(edits, st, o.Counter)
}

func logCosts(t *testing.T, label string, c *costs) {
	n := max(1, c.placeholders)
	t.Logf("%s: %d files, %d changed; %d placeholders, %.0f bytes and %.1f tokens each; %d input stubs; %d tokens saved",
		label, c.files, c.changed, c.placeholders, float64(c.bytes)/float64(n), float64(c.tokens)/float64(n), c.stubs, c.saved)
}

// TestStoreRoundTrip: the samples and generated sessions in every format (images, lists
// of parts, Cline's labels, inputs of every kind) come back byte for byte.
func TestStoreRoundTrip(t *testing.T) {
	for _, f := range invariant.Samples(t) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for label, o := range storeSettings() {
			for _, w := range windows {
				roundTrip(t, fmt.Sprintf("%s/%d/%s", label, w, filepath.Base(f)), in, o, w, nil)
			}
		}
	}
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 300 << 10, Seed: 5, Images: true}); err != nil {
			t.Fatal(err)
		}
		sum := &costs{}
		for label, o := range storeSettings() {
			roundTrip(t, label+"/"+format, buf.Bytes(), o, 20_000, sum)
		}
		if sum.placeholders == 0 {
			t.Errorf("%s: nothing cleared", format)
		}
	}
}

func TestStorePlaceholder(t *testing.T) {
	doc := anthropicDoc(read("/repo/a.go", ""), bash("make"), read("/repo/a.go", ""), bash("make test"))
	tr, _ := transcript.Parse([]byte(doc), transcript.Options{})
	o := rules()
	o.Store = storeDir
	o.Counter = estimate()
	o.Tokens = measure.Total(tr, o.Counter)
	o.Effective = o.Tokens * 10 / 7
	edits, blobs, st := Plan(tr, o)
	if len(st.Items) != 1 || st.Items[0].Reason != Reread || len(blobs) != 1 || st.Stored != 1 {
		t.Fatalf("items %+v, %d blobs", st.Items, len(blobs))
	}
	text := big("contents of /repo/a.go")
	h := store.Hash([]byte(text))
	if blobs[0].Hash != h || blobs[0].Data != text || blobs[0].RawHash != "" {
		t.Errorf("blob %s %.40q raw %q", blobs[0].Hash, blobs[0].Data, blobs[0].RawHash)
	}
	m := blobs[0].Meta
	if m.Tool != "Read" || m.ToolCallID != "toolu_00" || m.Bytes != len(text) || m.Lines != 1 || m.Tokens != st.Items[0].Tokens || m.Input {
		t.Errorf("index entry %+v", m)
	}
	want := fmt.Sprintf(`[ctx-snip: result of Read("/repo/a.go") cleared (%s tokens); the file was read again later — re-run the call or read it with: ctx-recall --read %s/%s/%s]`,
		humanThousands(st.Items[0].Tokens), storeDir, h[:2], h)
	if got := gjson.Parse(edits[0].With).String(); got != want {
		t.Errorf("placeholder\n got %s\nwant %s", got, want)
	}
	// ctx-count reads what the placeholder stands for.
	out, _ := tr.Apply(edits)
	after, _ := transcript.Parse(out, transcript.Options{})
	if was := measure.Of(after, o.Counter, false).Messages[st.Items[0].Message].Blocks[0].Was; was != st.Items[0].Tokens {
		t.Errorf("Block.Was = %d, want %d", was, st.Items[0].Tokens)
	}
}

func humanThousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestStoreListContent: a list of parts is stored as its texts, to read, and as the list
// itself, which the placeholder names and Restore puts back.
func TestStoreListContent(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	list := `[{"type":"text","text":` + q(big("caption")) + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"second"}]`
	b := keep(nil, list, "", false)
	if b.Data != big("caption")+"\nsecond" || b.RawData != list || b.RawHash != store.Hash([]byte(list)) {
		t.Errorf("kept %.60q raw %.60q", b.Data, b.RawData)
	}
	doc := `{"messages":[` +
		`{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"/shot.png"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":` + list + `}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Read","input":{"file_path":"/shot.png"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"new"}]},` +
		`{"role":"assistant","content":"done"},{"role":"user","content":"ok"}]}`
	o := rules()
	o.Store = storeDir
	out, st := snipAt(t, doc, 0.7, o)
	if st.Stored != 1 || !strings.Contains(out, rawNote+b.RawHash+`]"`) {
		t.Errorf("stored %d; %s", st.Stored, out)
	}
	roundTrip(t, "list", []byte(doc), o, 2_000, nil)
}

// TestKeepSpelling: a text spelled as offload.Encode spells it is stored alone; one spelled
// otherwise keeps its literal too; a label stays out of the file; an input object is kept
// as written.
func TestKeepSpelling(t *testing.T) {
	for _, c := range []struct {
		raw, label, data string
		value, raw2      bool
	}{
		{`"a <b> & \"c\"\n"`, "", "a <b> & \"c\"\n", false, false},
		{`"a \u003cb>"`, "", "a <b>", false, true},
		{`"a \/ b"`, "", "a / b", false, true},
		{`"bad \ud800 surrogate"`, "", "bad \ufffd surrogate", false, true},
		{`"[read_file for 'x'] Result:\nbody"`, "[read_file for 'x'] Result:\n", "body", false, false},
		{`{"file_path": "/a"}`, "", `{"file_path": "/a"}`, true, false},
	} {
		b := keep(nil, c.raw, c.label, c.value)
		if b.Data != c.data && !strings.HasPrefix(c.raw, `"bad`) || (b.RawHash != "") != c.raw2 {
			t.Errorf("keep(nil, %s) = %q raw %q", c.raw, b.Data, b.RawData)
		}
	}
}

// TestKeptForIsKeepFound: what a plan names of a text (keptFor, which decodes into a reused
// buffer and keeps nothing) is what keeping it names (keptOf of keepFound), with and without
// redaction, one text after another (the buffer of a long text reused for a short one).
func TestKeptForIsKeepFound(t *testing.T) {
	key := "sk-ant-api03-" + strings.Repeat("Ab9x", 20) + "AA"
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	cases := []struct {
		raw, label string
		value      bool
	}{
		{q(big("line\tone\n")), "", false},
		{`"a <b> & \"c\"\n"`, "", false},
		{`"a \u003cb>"`, "", false},
		{`"a \/ b"`, "", false},
		{`"bad \ud800 surrogate"`, "", false},
		{`"sep \u2028 and ` + "\u2028" + ` raw"`, "", false},
		{`""`, "", false},
		{`"plain, no escape"`, "", false},
		{"\"bad \xff utf8 \xc3\"", "", false},
		{`"caf\u00e9, caf` + "\u00e9" + `"`, "", false},
		{`"[read_file for 'x'] Result:\nbody"`, "[read_file for 'x'] Result:\n", false},
		{`"[read_file for 'x'] Result:\nbody \u0041"`, "[read_file for 'x'] Result:\n", false},
		{`"no label here"`, "[read_file for 'x'] Result:\n", false},
		{q("export ANTHROPIC_API_KEY=" + key + "\n" + big("x")), "", false},
		{`"url https://h/?k=sk-ant-api03%2D` + strings.Repeat("Ab9x", 20) + `AA"`, "", false},
		{`[{"type":"text","text":` + q(big("caption")) + `},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"second"}]`, "", false},
		{`[{"type":"text","text":"token: ` + key + `"}]`, "", false},
		{`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]`, "", false},
		{`{"file_path": "/a", "key": "` + key + `"}`, "", true},
		{`{"command": "ls"}`, "", true},
	}
	secrets, rawSecrets, raws := 0, 0, 0
	for _, rd := range []*redact.Redactor{nil, redact.New()} {
		for round := 0; round < 2; round++ {
			for i, c := range cases {
				if round == 1 {
					c = cases[len(cases)-1-i] // short after long, and the other way
				}
				b, f := keepFound(rd, c.raw, c.label, c.value)
				want := keptOf(c.raw, b, f)
				got := keptFor(rd, c.raw, c.label, c.value)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("redact %v, %.80s: keptFor = %+v, want %+v", rd != nil, c.raw, got, want)
				}
				if len(got.found.text) > 0 {
					secrets++
				}
				if len(got.found.raw) > 0 {
					rawSecrets++
				}
				if got.raw != "" {
					raws++
				}
			}
		}
	}
	if secrets == 0 || rawSecrets == 0 || raws == 0 {
		t.Fatalf("the cases do not test what they should: %d texts with a secret, %d originals with one, %d kept with their JSON", secrets, rawSecrets, raws)
	}
}

// TestRestoreLeavesOthers: placeholders that name no file (--no-store, older versions) and
// texts that only look like placeholders stay as they are.
func TestRestoreLeavesOthers(t *testing.T) {
	doc := anthropicDoc(read("/repo/a.go", ""), bash("make"), read("/repo/a.go", ""), bash("make test"))
	out, st := snipAt(t, doc, 0.7, rules())
	if len(st.Items) != 1 || st.Stored != 0 {
		t.Fatalf("items %+v stored %d", st.Items, st.Stored)
	}
	tr, _ := transcript.Parse([]byte(out), transcript.Options{})
	if edits, n, err := Restore(tr, memStore{}.get); err != nil || n != 0 || len(edits) != 0 {
		t.Errorf("restore of a --no-store placeholder: %d %v", n, err)
	}
	look := anthropicDoc(step{tool: "Bash", input: `{"command":"cat x"}`, result: "[ctx-snip: cleared 5 tokens; stored in elsewhere]"}, step{tool: "Bash", input: `{"ctx_snip":"cleared 5 tokens; stored in /s/ab/cd", "x": 1}`, result: "ok"})
	tr, _ = transcript.Parse([]byte(look), transcript.Options{})
	if edits, n, err := Restore(tr, memStore{}.get); err != nil || n != 0 || len(edits) != 0 {
		t.Errorf("restore of look-alikes: %d %v", n, err)
	}
}

// TestRestoreErrors: a placeholder whose file is missing, or whose path names no stored
// file, fails the restore (ErrRestore) rather than being left half done.
func TestRestoreErrors(t *testing.T) {
	doc := anthropicDoc(read("/repo/a.go", ""), bash("make"), read("/repo/a.go", ""), bash("make test"))
	o := rules()
	o.Store = storeDir
	out, _ := snipAt(t, doc, 0.7, o)
	tr, _ := transcript.Parse([]byte(out), transcript.Options{})
	if _, _, err := Restore(tr, memStore{}.get); !errors.Is(err, ErrRestore) || !errors.Is(err, store.ErrNotFound) || !strings.HasPrefix(err.Error(), "message 3: cannot restore: ") {
		t.Errorf("missing file: %v", err)
	}
	bad := strings.Replace(out, storeDir+"/", "/etc/passwd#", 1)
	tr, _ = transcript.Parse([]byte(bad), transcript.Options{})
	if _, _, err := Restore(tr, memStore{}.get); !errors.Is(err, errMalformed) || !errors.Is(err, offload.ErrNotStored) {
		t.Errorf("bad path: %v", err)
	}
}

// TestKeepRedacts: what a placeholder or stub keeps in the store holds markers, not keys
// (issue 40): a result's string, its list of parts (kept as written too), and a call's
// input object, which stays valid JSON.
func TestKeepRedacts(t *testing.T) {
	const key = "ghp_Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0AcQwEr"
	rd := redact.New()
	for _, c := range []struct {
		name, raw string
		value     bool
	}{
		{"string", `"token ` + key + ` used"`, false},
		{"parts", `[{"type":"text","text":"token ` + key + `"},{"type":"text","text":"done"}]`, false},
		{"input", `{"command":"git clone https://x:` + key + `@github.com/a/b"}`, true},
	} {
		b := keep(rd, c.raw, "", c.value)
		for _, data := range []string{b.Data, b.RawData} {
			if strings.Contains(data, "Zx9Qm2") {
				t.Errorf("%s: the store would keep the key: %q", c.name, data)
			}
		}
		if !strings.Contains(b.Data, "[redacted: github-token]") {
			t.Errorf("%s: no marker: %q", c.name, b.Data)
		}
		if b.RawData != "" && !json.Valid([]byte(b.RawData)) || c.value && !json.Valid([]byte(b.Data)) {
			t.Errorf("%s: redacted JSON is not valid: %q %q", c.name, b.Data, b.RawData)
		}
		if plain := keep(nil, c.raw, "", c.value); !strings.Contains(plain.Data+plain.RawData, key) {
			t.Errorf("%s: without a redactor the text changed: %q", c.name, plain.Data)
		}
	}
}

// TestBlobReusesPlan: the files a cleared text is written to are made with what the plan
// found in its bytes (the secrets, the spelling, the hashes), not found again: a change
// whose redactor is taken away still writes the redacted files its placeholder names. Bytes
// other than the plan read are worked out again and refused.
func TestBlobReusesPlan(t *testing.T) {
	const key = "ghp_Zx9Qm2Lp7Rt4Vw8Ny3Kb6Hs1Jd5Fg0AcQwEr"
	doc := anthropicDoc(
		step{tool: "Bash", input: `{"command":"curl -H 'Authorization: token ` + key + `' ` + big("https://api.github.com/x") + `"}`, result: big("GITHUB_TOKEN=" + key)},
		step{tool: "Bash", input: `{"command":"ls"}`, result: big("a.go\tb.go")},
		bash("make"), bash("make test"), bash("make lint"),
	)
	// A literal spelled otherwise than offload.Encode spells it keeps its original JSON.
	doc = strings.Replace(doc, `a.go\tb.go`, `a.go\u0009b.go`, 1)
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := rules()
	o.Store, o.Redact, o.ClearInputs, o.Keep = storeDir, redact.New(), true, 1
	o.Counter = estimate()
	o.Tokens = measure.Total(tr, o.Counter)
	o.Effective = o.Tokens / 10 // far above the trigger: every old result goes
	changes, _ := plan(tr, o, func(b *transcript.Block) facts { return factsOf(tr, b, o, o.Counter) })
	var secret, raw, input int
	for i := range changes {
		ch := changes[i]
		if ch.kept.hash == "" {
			continue
		}
		text := tr.Slice(ch.edit.Span)
		want := keep(o.Redact, text, ch.label, ch.value)
		ch.rd = nil // found nothing, were it asked
		got, err := ch.blob(text, srcSum(text))
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		if got.Hash != want.Hash || got.Data != want.Data || got.RawHash != want.RawHash || got.RawData != want.RawData {
			t.Errorf("change %d: blob %s %q raw %s, want %s %q raw %s", i, got.Hash, got.Data, got.RawHash, want.Hash, want.Data, want.RawHash)
		}
		if got.Meta.Hash != want.Hash || got.Meta.Bytes != len(want.Data) || got.Meta.Lines != want.Meta.Lines || got.Meta.Raw != want.RawHash {
			t.Errorf("change %d: index line %+v", i, got.Meta)
		}
		if strings.Contains(got.Data+got.RawData, key) {
			t.Errorf("change %d keeps the key", i)
		}
		if len(ch.kept.found.text) > 0 {
			secret++
		}
		if got.RawHash != "" {
			raw++
		}
		if ch.meta.Input {
			input++
		}
		other := strings.Replace(text, "b.go", "c.go", 1)
		if other != text {
			if _, err := ch.blob(other, srcSum(other)); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
				t.Errorf("change %d: other bytes: %v", i, err)
			}
		}
	}
	if secret < 2 || raw == 0 || input == 0 {
		t.Fatalf("the document does not test what it should: %d texts with a secret, %d with their JSON, %d inputs", secret, raw, input)
	}
}

// TestRestoreOlderWordings: placeholders and input stubs in this version's wording ("read it
// with: ctx-recall --read PATH") and in the older ones ("read PATH (or ctx-recall
// --outline/--read with that path)", "stored in PATH ...", and both without the
// parenthesis), which documents cleared before hold, are all restored byte for byte, in
// every format, original JSON hashes included.
func TestRestoreOlderWordings(t *testing.T) {
	path := `(` + regexp.QuoteMeta(storeDir) + `/[0-9a-f]{2}/[0-9a-f]{64})`
	result := regexp.MustCompile(`or read it with: ctx-recall --read ` + path)
	stub := regexp.MustCompile(`; read it with: ctx-recall --read ` + path)
	wordings := map[string]func(string) string{
		"this version": func(s string) string { return s },
		"older": func(s string) string {
			s = result.ReplaceAllString(s, `or read $1`+offload.RecallNote)
			return stub.ReplaceAllString(s, `; stored in $1`+offload.RecallNote)
		},
		"oldest": func(s string) string {
			s = result.ReplaceAllString(s, `or read $1`)
			return stub.ReplaceAllString(s, `; stored in $1`)
		},
	}
	o := storeSettings()["all"]
	o.Store = storeDir
	raws, stubs := 0, 0
	for _, format := range testgen.Formats {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, testgen.Options{Format: format, Size: 200 << 10, Seed: 7, Images: true}); err != nil {
			t.Fatal(err)
		}
		in := buf.Bytes()
		tr, err := transcript.Parse(in, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		o.Counter = estimate()
		o.Tokens = measure.Total(tr, o.Counter)
		o.Effective = o.Tokens
		edits, blobs, st := Plan(tr, o)
		files := memStore{}
		files.put(t, blobs)
		for _, b := range blobs {
			if b.RawHash != "" {
				raws++
			}
		}
		out, err := tr.Apply(edits)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(result.FindAll(out, -1)); n == 0 {
			t.Fatalf("%s: no placeholder in this version's wording", format)
		}
		stubs += len(stub.FindAll(out, -1))
		for name, reword := range wordings {
			doc := reword(string(out))
			if name != "this version" && strings.Contains(doc, recallRead) {
				t.Fatalf("%s, %s: not reworded", format, name)
			}
			after, err := transcript.Parse([]byte(doc), transcript.Options{Format: tr.Format})
			if err != nil {
				t.Fatalf("%s, %s: %v", format, name, err)
			}
			redo, n, err := Restore(after, files.get)
			if err != nil || n != st.Stored {
				t.Fatalf("%s, %s: restored %d of %d: %v", format, name, n, st.Stored, err)
			}
			back, _ := after.Apply(redo)
			if !bytes.Equal(back, in) {
				t.Errorf("%s, %s: restored document differs from the input at byte %d", format, name, firstDiff(back, in))
			}
		}
	}
	if raws == 0 || stubs == 0 {
		t.Errorf("%d original JSONs kept, %d input stubs: not all the wordings are tested", raws, stubs)
	}
}
