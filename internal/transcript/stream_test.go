package transcript

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/internal/testgen"
)

// streamed reads doc with Stream and rebuilds a Transcript from the outline and the records
// fn saw (Conversation), with the whole document as Doc so it can be compared with Parse's.
// data is set when Stream declined to stream.
func streamed(t *testing.T, doc []byte, o Options) (tr *Transcript, data []byte, err error) {
	return streamedFrom(t, doc, o, iotest.HalfReader(bytes.NewReader(doc)))
}

// sources are the readers Stream is held equal on: one that returns a few bytes at a time
// (lines split across reads), the input in place, and the input in place as it arrives (a
// pipe kept in a mapped file), a few bytes more each time.
func sources(doc []byte) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"reader":   func() io.Reader { return iotest.HalfReader(bytes.NewReader(doc)) },
		"in place": func() io.Reader { return NewInPlace(doc) },
		"arriving": func() io.Reader {
			n, step := 0, 0
			return NewGrowingInPlace(nil, func() ([]byte, error) {
				if n == len(doc) {
					return nil, io.EOF
				}
				step = step%37 + 1
				n = min(len(doc), n+step*step)
				return doc[:n:n], nil
			})
		},
	}
}

func streamedFrom(t *testing.T, doc []byte, o Options, r io.Reader) (tr *Transcript, data []byte, err error) {
	t.Helper()
	var recs []*Transcript
	ol, data, err := Stream(r, o, func(seq int, rec *Transcript) error {
		if seq != len(recs) {
			t.Fatalf("record %d after %d records", seq, len(recs))
		}
		if rec.Slice(rec.Records[0].Span) != rec.Doc {
			t.Fatalf("record %d: span %v does not cover its line", seq, rec.Records[0].Span)
		}
		recs = append(recs, rec)
		return nil
	})
	if err != nil || data != nil {
		if len(recs) > 0 && err == nil {
			t.Fatalf("fn called %d times, then the input was read whole", len(recs))
		}
		return nil, data, err
	}
	if len(recs) != len(ol.Records) {
		t.Fatalf("fn saw %d records, outline has %d", len(recs), len(ol.Records))
	}
	carried := make([][]Message, len(recs))
	for i, m := range ol.Messages {
		if m.Blocks != nil {
			t.Fatalf("outline message %d has blocks", i)
		}
	}
	for i, rec := range recs {
		carried[i] = rec.Messages
	}
	tr = ol.Conversation(carried)
	if tr.Doc != "" {
		t.Fatal("the conversation of a streamed document has text")
	}
	tr.Doc = string(doc)
	return tr, nil, nil
}

// sameTranscript fails unless Stream gives exactly the conversation Parse gives (or the
// input itself, to be parsed whole). It reports whether the document was streamed.
func sameTranscript(t *testing.T, name string, doc []byte, o Options) (streamedIt bool) {
	t.Helper()
	n := 0
	for how, source := range sources(doc) {
		if it := sameTranscriptFrom(t, name+" ("+how+")", doc, o, source()); it {
			n++
		}
	}
	if n != 0 && n != 3 {
		t.Fatalf("%s: streamed from %d of the 3 sources", name, n)
	}
	return n == 3
}

func sameTranscriptFrom(t *testing.T, name string, doc []byte, o Options, r io.Reader) (streamedIt bool) {
	t.Helper()
	want, werr := Parse(doc, o)
	got, data, gerr := streamedFrom(t, doc, o, r)
	if data != nil {
		if !bytes.Equal(data, doc) {
			t.Fatalf("%s: the input read whole is not the input", name)
		}
		return false
	}
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s: Parse error %v, Stream error %v", name, werr, gerr)
	}
	if werr != nil {
		return true
	}
	want.memo = nil // what Reparse reuses, which a streamed conversation does not keep
	// Blocks of the streamed records are nil where Parse's are empty; compare by content.
	for i := range want.Messages {
		if len(want.Messages[i].Blocks) == 0 {
			want.Messages[i].Blocks = nil
		}
	}
	if len(want.Messages) == 0 {
		want.Messages = nil
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: streamed conversation differs from the parsed one", name)
		if len(want.Messages) != len(got.Messages) {
			t.Errorf("%d messages, want %d", len(got.Messages), len(want.Messages))
		}
		for i := 0; i < min(len(want.Messages), len(got.Messages)); i++ {
			if !reflect.DeepEqual(want.Messages[i], got.Messages[i]) {
				t.Errorf("message %d:\n got %+v\nwant %+v", i, got.Messages[i], want.Messages[i])
				break
			}
		}
	}
	return true
}

// branchy is a Claude Code log with everything that makes the live conversation more than
// the lines in order: a rewound branch, an assistant turn over several lines with parallel
// calls whose results hang off their own lines, a compact summary, metadata records and
// subagent lines, one of them last.
func branchy() string {
	lines := []string{
		`{"type":"summary","summary":"earlier","leafUuid":"zz"}`,
		`{"type":"permission-mode","permissionMode":"default","sessionId":"s"}`,
		ccLineJSON("user", "u1", "", `{"role":"user","content":"first prompt"}`, `,"isCompactSummary":true`),
		ccLineJSON("assistant", "a2", "u1", `{"id":"m_dead","role":"assistant","content":[{"type":"tool_use","id":"tD","name":"Bash","input":{"command":"rm"}}]}`, ""),
		ccLineJSON("user", "u3", "a2", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tD","content":"dead result"}]}`, ""),
		ccLineJSON("assistant", "a4", "u1", `{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"reading"}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}`, ""),
		ccLineJSON("assistant", "a5", "a4", `{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tA","name":"Read","input":{"file_path":"/a"}}]}`, ""),
		ccLineJSON("assistant", "a6", "a5", `{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tB","name":"Read","input":{"file_path":"/b"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":40}}`, ""),
		`{"parentUuid":"a6","type":"attachment","attachment":{"type":"x"},"uuid":"x7"}`,
		ccLineJSON("user", "s8", "", `{"role":"user","content":"subagent task"}`, ""),
		ccLineJSON("user", "u8", "a6", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tB","content":"B"}]}`, ""),
		ccLineJSON("user", "u9", "a5", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tA","content":[{"type":"text","text":"A"}]}]}`, ""),
		ccLineJSON("assistant", "b1", "u9", `{"id":"m2","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"done"}]}`, ""),
		ccLineJSON("assistant", "s9", "s8", `{"id":"m_side","role":"assistant","content":"subagent answer"}`, ""),
	}
	for i, l := range lines {
		if strings.Contains(l, `"uuid":"s`) {
			lines[i] = strings.Replace(l, `"isSidechain":false`, `"isSidechain":true`, 1)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func generated(t *testing.T, format string, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := testgen.Generate(&b, testgen.Options{Format: format, Size: size, Seed: 7, Images: true}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestStreamMatchesParse(t *testing.T) {
	docs := map[string][]byte{
		"branchy":           []byte(branchy()),
		"branchy crlf":      []byte(strings.ReplaceAll(branchy(), "\n", "\r\n")),
		"branchy no eol":    []byte(strings.TrimSuffix(branchy(), "\n")),
		"blank lines":       []byte("\n\n  \n" + strings.ReplaceAll(branchy(), "\n", "\n\n")),
		"subagent log":      []byte(strings.ReplaceAll(ccLineJSON("user", "u1", "", `{"role":"user","content":"task"}`, "")+"\n", `"isSidechain":false`, `"isSidechain":true`)),
		"one record":        []byte(ccLineJSON("user", "u1", "", `{"role":"user","content":"only"}`, "")),
		"no ids":            []byte(`{"type":"user","sessionId":"s","message":{"role":"user","content":"a"}}` + "\n" + `{"type":"assistant","sessionId":"s","message":{"id":"m","role":"assistant","content":"b"}}` + "\n"),
		"late format":       []byte(strings.Repeat(`{"type":"queue"}`+"\n", 150) + branchy()),
		"claude-code small": generated(t, "claude-code", 60_000),
		"codex small":       generated(t, "codex", 60_000),
		"codex compacted":   generated(t, "codex", 6<<20),
		"json":              []byte(`{"messages":[{"role":"user","content":"hi"}]}`),
		"pretty record":     []byte("{\n\"type\":\"user\",\"uuid\":\"a\"}\n"),
	}
	samples, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json*"))
	for _, f := range samples {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(f)] = data
	}
	for name, doc := range docs {
		for _, side := range []bool{false, true} {
			jsonl := strings.HasSuffix(name, ".jsonl") || !strings.Contains(name, "json") && name != "pretty record"
			if ok := sameTranscript(t, name, doc, Options{Sidechains: side}); ok != jsonl {
				t.Errorf("%s: streamed %v, want %v", name, ok, jsonl)
			}
		}
		if name == "branchy" || name == "codex small" {
			for _, f := range Formats {
				sameTranscript(t, name+" as "+string(f), doc, Options{Format: f})
			}
		}
	}
	tr, _, err := streamed(t, []byte(branchy()), Options{})
	if err != nil || tr == nil {
		t.Fatalf("branchy: not streamed: %v", err)
	}
	if got, want := shape(tr), "user:text|assistant:text,tool_call,tool_call|user:tool_result|user:tool_result|assistant:text"; got != want {
		t.Errorf("branchy shape\n got %s\nwant %s", got, want)
	}
}

func TestStreamCorpus(t *testing.T) {
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		jsonl := len(bytes.TrimSpace(data)) > 0 && strings.HasSuffix(f, ".jsonl")
		if ok := sameTranscript(t, f, data, Options{Name: f}); ok != jsonl {
			t.Errorf("%s: streamed %v, want %v", f, ok, jsonl)
		}
		sameTranscript(t, f, data, Options{Name: f, Sidechains: true})
	}
}

// TestStreamBadInput: a streamed document fails as a parsed one does, with the same words.
func TestStreamBadInput(t *testing.T) {
	good := ccLineJSON("user", "u1", "", `{"role":"user","content":"x"}`, "")
	cases := map[string]string{
		"invalid middle line":      good + "\nnot json\n" + good + "\n",
		"truncated last line":      good + "\n" + `{"type":"assistant","uuid":"b","mess`,
		"truncated then blank":     good + "\n" + `{"type":"assistant","uuid":"b","mess` + "\n\n  \n",
		"truncated middle line":    good + "\n" + `{"type":"assistant","uuid":"b","mess` + "\n" + good + "\n",
		"array line":               good + "\n[1,2]\n",
		"scalar line":              good + "\n42\n",
		"NUL in a later line":      good + "\n" + good + "\n{\"a\":\"\x00\"}\n",
		"NUL after a bad line":     good + "\nnot json\n" + good + "\n\x00\n",
		"NUL in the first line":    "{\"type\":\"user\",\"uuid\":\"\x00\"}\n" + good + "\n",
		"unknown kind":             "{\"a\":1}\n{\"b\":2}\n",
		"bad line before format":   "{\"a\":1}\nnope\n" + good + "\n",
		"empty":                    "",
		"blank":                    " \n\t\n",
		"trailing garbage":         `[{"role":"user","content":"a"}] xyz`,
		"binary":                   "\x00\x01\x02garbage",
		"codex then claude format": `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":"x"}}` + "\n" + good + "\n",
	}
	for name, doc := range cases {
		for _, o := range []Options{{}, {Format: ClaudeCode}, {Format: Codex}, {Format: Anthropic}, {Name: "x.jsonl"}} {
			_, werr := Parse([]byte(doc), o)
			for how, source := range sources([]byte(doc)) {
				_, data, serr := streamedFrom(t, []byte(doc), o, source())
				if data != nil {
					_, serr = Parse(data, o)
				}
				if (werr == nil) != (serr == nil) || (werr != nil && werr.Error() != serr.Error()) {
					t.Errorf("%s %+v from %s:\nParse:  %v\nStream: %v", name, o, how, werr, serr)
				}
			}
		}
	}
	// The error a stream ends with names the line, as Parse's does.
	_, _, err := streamed(t, []byte(good+"\n"+`{"type":"assistant","uuid":"b","mess`), Options{})
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || !strings.Contains(e.Msg, "truncated record") {
		t.Errorf("truncated last line: %v", err)
	}
}

// TestStreamLongLines: records far larger than the read buffer, first and later.
func TestStreamLongLines(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	doc := ccLineJSON("user", "u1", "", `{"role":"user","content":"`+big+`"}`, "") + "\n" +
		ccLineJSON("assistant", "a2", "u1", `{"id":"m","role":"assistant","content":"`+big+`"}`, "") + "\n"
	// The first record does not fit in what Stream reads ahead, so it reads the input whole.
	if sameTranscript(t, "long lines", []byte(doc), Options{}) {
		t.Errorf("a first record beyond the read-ahead should be read whole")
	}
	// After a short first record, long ones stream.
	doc = `{"type":"permission-mode","permissionMode":"default","sessionId":"s"}` + "\n" + doc
	if !sameTranscript(t, "long lines after a short one", []byte(doc), Options{}) {
		t.Errorf("long records after a short one were not streamed")
	}
}

// TestStreamErrors: fn's error and a read error stop the stream and come back as they are.
func TestStreamErrors(t *testing.T) {
	doc := []byte(branchy())
	stop := errors.New("stop")
	n := 0
	_, _, err := Stream(bytes.NewReader(doc), Options{}, func(int, *Transcript) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("fn error: %v after %d records", err, n)
	}
	_, _, err = Stream(io.MultiReader(bytes.NewReader(doc), iotest.ErrReader(io.ErrClosedPipe)), Options{}, func(int, *Transcript) error { return nil })
	if err != io.ErrClosedPipe {
		t.Errorf("read error: %v", err)
	}
}
