package count

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"

	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

var streamBudget = tokens.Budget{Model: "m", Window: 200_000, Reserve: 20_000, Effective: 180_000}

// streamReport counts a document the way ctx-count does without --pass: streamed record by
// record when it is JSONL, else read whole and measured. onRecord, if set, runs before each
// record is counted.
func streamReport(t testing.TB, r io.Reader, o transcript.Options, c tokens.Counter, onRecord func(seq int)) (Report, bool) {
	t.Helper()
	rc := &measure.Streamed{NewCounter: func(transcript.Format) (tokens.Counter, error) { return c, nil }, Count: true, Previews: true}
	notes := &Notes{}
	outline, data, err := transcript.Stream(r, o, func(seq int, rec *transcript.Transcript) error {
		if onRecord != nil {
			onRecord(seq)
		}
		notes.Add(rec, c)
		return rc.Record(seq, rec)
	})
	rc.Close()
	if err != nil {
		t.Fatalf("%s: %v", o.Name, err)
	}
	opts := Options{File: o.Name, Counter: c, Window: streamBudget}
	if outline == nil {
		tr, err := transcript.Parse(data, o)
		if err != nil {
			t.Fatalf("%s: %v", o.Name, err)
		}
		return Measure(tr, opts), false
	}
	opts.Notes, opts.Summaries = notes, summaries(&transcript.Transcript{Messages: outline.Messages})
	return summarise(rc.Tally(outline, c), opts), true
}

// sameReport fails unless the streamed report of doc equals Measure's of the parsed one.
func sameReport(t *testing.T, name string, doc []byte, o transcript.Options, c tokens.Counter) {
	t.Helper()
	o.Name = name
	tr, err := transcript.Parse(doc, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := Measure(tr, Options{File: name, Counter: c, Window: streamBudget})
	got, streamed := streamReport(t, iotest.HalfReader(bytes.NewReader(doc)), o, c, nil)
	if !streamed && tr.Format.JSONL() && len(bytes.TrimSpace(doc)) > 0 {
		t.Errorf("%s: a %s document was not streamed", name, tr.Format)
	}
	if !reflect.DeepEqual(got, want) {
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		i := 0
		for i < min(len(wj), len(gj)) && wj[i] == gj[i] {
			i++
		}
		t.Errorf("%s (%s, sidechains %v): streamed report differs from Measure at byte %d:\nstreamed: %s\nmeasured: %s",
			name, c.Name(), o.Sidechains, i, clipAround(gj, i), clipAround(wj, i))
	}

	// What a tier takes from the count, streamed, is what it takes from the parsed document.
	if !tr.Format.JSONL() {
		return
	}
	s := &measure.Streamed{NewCounter: func(transcript.Format) (tokens.Counter, error) { return c, nil }, Count: true}
	outline, _, err := transcript.Stream(bytes.NewReader(doc), o, s.Record)
	s.Close()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if outline == nil {
		return // an empty log, read whole
	}
	if got, want := s.Tally(outline, c).Counts(), measure.CountsOf(tr, c); !reflect.DeepEqual(got, want) {
		t.Errorf("%s (%s): streamed counts %d %v, parsed %d %v", name, c.Name(), got.Total, got.Blocks, want.Total, want.Blocks)
	}
	if total := measure.Total(tr, c); total != measure.CountsOf(tr, c).Total {
		t.Errorf("%s (%s): CountsOf total %d, Total %d", name, c.Name(), measure.CountsOf(tr, c).Total, total)
	}
}

func clipAround(b []byte, i int) string {
	return string(b[max(0, i-120):min(len(b), i+120)])
}

func generate(t testing.TB, format string, size int, seed int64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := testgen.Generate(&b, testgen.Options{Format: format, Size: size, Seed: seed, Images: true}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withBranches adds to a Claude Code log what a long real session gathers: rewound branches
// (a dead answer with its own tool call and result), lines of a live turn hung off another
// parent, subagent chains, and a subagent line last of all.
func withBranches(doc []byte) []byte {
	var out bytes.Buffer
	n := 0
	line := func(typ, uuid, parent string, side bool, msg string) {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		fmt.Fprintf(&out, `{"parentUuid":%s,"isSidechain":%v,"type":%q,"message":%s,"uuid":%q,"timestamp":"2026-03-02T10:00:%02dZ"}`+"\n",
			p, side, typ, msg, uuid, n%60)
	}
	for _, l := range bytes.SplitAfter(doc, []byte("\n")) {
		out.Write(l)
		r := gjson.ParseBytes(l)
		uuid, typ := r.Get("uuid").String(), r.Get("type").String()
		if uuid == "" || (typ != "user" && typ != "assistant") {
			continue
		}
		if n++; n%7 != 0 {
			continue
		}
		id := fmt.Sprint(n)
		switch n % 4 {
		case 0: // a rewound answer: a call and its result on a dead branch
			line("assistant", "dead-a"+id, uuid, false, `{"id":"msg_dead`+id+`","role":"assistant","content":[{"type":"tool_use","id":"toolu_dead`+id+`","name":"Bash","input":{"command":"rm -rf /tmp/x`+id+`"}}]}`)
			line("user", "dead-u"+id, "dead-a"+id, false, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_dead`+id+`","content":"removed `+id+`"}]}`)
		case 1: // a rewound prompt
			line("user", "dead-p"+id, uuid, false, `{"role":"user","content":"never mind, try again `+id+`"}`)
		case 2: // a subagent's chain
			line("user", "side-u"+id, "", true, `{"role":"user","content":"subagent task `+id+`"}`)
			line("assistant", "side-a"+id, "side-u"+id, true, `{"id":"msg_side`+id+`","role":"assistant","content":[{"type":"tool_use","id":"toolu_side`+id+`","name":"Grep","input":{"pattern":"x"}}]}`)
			line("user", "side-r"+id, "side-a"+id, true, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_side`+id+`","content":"found `+id+`"}]}`)
		case 3: // one more line of a live assistant turn, hung off the turn's parent
			if msgID := r.Get("message.id").String(); typ == "assistant" && msgID != "" {
				line("assistant", "extra"+id, r.Get("parentUuid").String(), false, `{"id":"`+msgID+`","role":"assistant","content":[{"type":"text","text":"and one more thing `+id+`"}]}`)
			}
		}
	}
	line("user", "side-last", "", true, `{"role":"user","content":"a subagent line last of all"}`)
	return out.Bytes()
}

// TestStreamedReportMatchesMeasure is the differential test of the streaming path: for every
// JSONL input, the report counted record by record equals Measure's of the whole transcript.
func TestStreamedReportMatchesMeasure(t *testing.T) {
	type input struct {
		name string
		doc  []byte
	}
	var small, large []input
	add := func(name string, doc []byte) {
		if len(doc) <= 300<<10 {
			small = append(small, input{name, doc})
		} else {
			large = append(large, input{name, doc})
		}
	}
	samples, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.jsonl"))
	for _, f := range samples {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		add(f, doc)
	}
	cc := generate(t, "claude-code", 200<<10, 3)
	add("generated claude-code", cc)
	add("generated claude-code with branches", withBranches(cc))
	add("generated codex", generate(t, "codex", 200<<10, 3))
	for _, v := range []testgen.Options{{Format: "claude-code", Version: "2.1"}, {Format: "codex", Version: "0.114"}} {
		// Thinking stored empty, attachments, compactions (the newer with a preserved
		// segment), repeated token counts: and a cut right after the compaction, where
		// the hidden part is carried across it.
		for seed := int64(1); seed <= 2; seed++ {
			v.Size, v.Seed = 400<<10, seed
			var b bytes.Buffer
			if err := testgen.Generate(&b, v); err != nil {
				t.Fatal(err)
			}
			doc := b.Bytes()
			name := fmt.Sprintf("generated %s %s seed %d", v.Format, v.Version, seed)
			add(name, doc)
			for _, mark := range []string{`"isCompactSummary":true`, `"type":"compacted"`} {
				if i := bytes.Index(doc, []byte(mark)); i >= 0 {
					end := i + bytes.IndexByte(doc[i:], '\n') + 1
					add(name+", cut after the compaction", doc[:end])
				}
			}
		}
	}
	if !testing.Short() {
		codex := generate(t, "codex", 6<<20, 4)
		if !bytes.Contains(codex, []byte(`"type":"compacted"`)) {
			t.Fatal("the generated codex document has no compacted record")
		}
		add("generated codex, compacted", codex)
		add("generated claude-code 3MB with branches", withBranches(generate(t, "claude-code", 3<<20, 5)))
	}
	root := filepath.Join("..", "..", "..", "shared", "corpus", "claude-code")
	if _, err := os.Stat(root); err != nil {
		t.Logf("corpus not found at %s: only generated documents and samples", root)
	} else {
		filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.HasSuffix(p, ".jsonl") {
				doc, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				add(p, doc)
			}
			return nil
		})
	}

	estimate, _ := tokens.New("estimate")
	o200k, err := tokens.New("o200k")
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []bool{false, true} {
		o := transcript.Options{Sidechains: side}
		for _, in := range append(small, large...) {
			sameReport(t, in.name, in.doc, o, estimate)
		}
		if testing.Short() {
			continue
		}
		for _, in := range small {
			sameReport(t, in.name, in.doc, o, o200k)
		}
	}
}

// TestStreamingMemory streams a 50 MB Claude Code session, generated on the fly so the
// document is never in memory, and checks that the live heap stays far below its size.
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and counts 50 MB")
	}
	const size, limit = 50 << 20, 20 << 20
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(testgen.Generate(pw, testgen.Options{Format: "claude-code", Size: size, Seed: 11, Images: true}))
	}()
	// Measured from what the process holds already (an o200k vocabulary loaded by another
	// test is some 40 MB); the generator's own state counts against the limit.
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	sample := func() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
	}
	estimate, _ := tokens.New("estimate")
	r, streamed := streamReport(t, pr, transcript.Options{}, estimate, func(seq int) {
		if seq%250 == 0 {
			sample()
		}
	})
	sample()
	if !streamed {
		t.Fatal("the document was not streamed")
	}
	if len(r.Messages) < 1000 || r.Tokens < size/16 {
		t.Fatalf("counted %d messages, %d tokens: not the whole document", len(r.Messages), r.Tokens)
	}
	t.Logf("50 MB, %d messages: live heap grew by %.1f MB at most", len(r.Messages), float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("live heap reached %.1f MB streaming a 50 MB document; want under %d MB", float64(peak)/(1<<20), limit>>20)
	}
}
