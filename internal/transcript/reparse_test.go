package transcript_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/replay"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/tokens"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// reparseCounter counts from the text (not from its length alone), as tiers do for Claude.
var reparseCounter = tokens.Claude("claude-sonnet-4-5")

// reuses reports whether Reparse is expected to reuse the document before for a document
// of the format (Cline's results read by the call before them: never).
func reuses(f transcript.Format) bool { return f != transcript.Cline }

// sameReparse checks Reparse(prev, raw) against Parse(raw), and OfNext against Of, and
// returns them for the next turn. wantReuse asks that the reuse was taken (not Parse).
func sameReparse(t *testing.T, name string, prev *transcript.Transcript, prevTally *measure.Tally, raw []byte, o transcript.Options, wantReuse bool) (*transcript.Transcript, *measure.Tally) {
	t.Helper()
	want, werr := transcript.Parse(raw, o)
	reused := transcript.Reused(prev, raw, o)
	got, gerr := transcript.Reparse(prev, raw, o)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%s: Reparse error %v, Parse error %v", name, gerr, werr)
	}
	if werr != nil {
		if reused {
			t.Fatalf("%s: reuse taken on a document Parse refuses (%v)", name, werr)
		}
		return nil, nil
	}
	if wantReuse && !reused {
		t.Fatalf("%s: Reparse read the document whole", name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Reparse differs from Parse: %s", name, firstDifference(got, want))
	}
	// (a request appended in place after the one before is the same memory: nothing more
	// is kept of it)
	inPlace := len(raw) > 0 && unsafe.StringData(prev.Doc) == unsafe.SliceData(raw)
	if s := transcript.Shared(got, prev.Doc); s != "" && !inPlace {
		t.Fatalf("%s: the reparsed transcript keeps a string of the document before: %q", name, s)
	}
	wantTally := measure.Of(want, reparseCounter, false)
	gotTally := measure.OfNext(prev, prevTally, got, reparseCounter)
	if !reflect.DeepEqual(gotTally, wantTally) {
		t.Fatalf("%s: OfNext differs from Of: %s", name, tallyDifference(gotTally, wantTally))
	}
	return got, gotTally
}

// firstDifference names the first message or field in which two transcripts differ.
func firstDifference(got, want *transcript.Transcript) string {
	for i := range min(len(got.Messages), len(want.Messages)) {
		if !reflect.DeepEqual(got.Messages[i], want.Messages[i]) {
			return fmt.Sprintf("message %d\n got %+v\nwant %+v", i, got.Messages[i], want.Messages[i])
		}
	}
	if len(got.Messages) != len(want.Messages) {
		return fmt.Sprintf("%d messages, want %d", len(got.Messages), len(want.Messages))
	}
	g, w := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := range g.NumField() {
		if !g.Type().Field(i).IsExported() {
			continue // (Interface panics on them)
		}
		if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			return fmt.Sprintf("field %s", g.Type().Field(i).Name)
		}
	}
	return "what Reparse keeps for the next (reuse)"
}

func tallyDifference(got, want *measure.Tally) string {
	for i := range min(len(got.Messages), len(want.Messages)) {
		if !reflect.DeepEqual(got.Messages[i], want.Messages[i]) {
			return fmt.Sprintf("message %d\n got %+v\nwant %+v", i, got.Messages[i], want.Messages[i])
		}
	}
	g, w := *got, *want
	g.Messages, w.Messages = nil, nil
	return fmt.Sprintf("\n got %+v\nwant %+v", g, w)
}

// requests are the requests ctx-replay sends for a session, turn by turn, as it builds
// them before any pipeline (replay.SessionPoints, Point.Request), each a copy of its own.
func requests(t testing.TB, name string, doc []byte) ([][]byte, transcript.Format) {
	return lastRequests(t, name, doc, -1)
}

// lastRequests is requests, the last n of them only (all for n < 0).
func lastRequests(t testing.TB, name string, doc []byte, n int) ([][]byte, transcript.Format) {
	t.Helper()
	parse := func(b []byte) (*transcript.Transcript, error) { return transcript.Parse(b, transcript.Options{}) }
	orig, err := parse(doc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	points, err := replay.SessionPoints(orig, parse)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if n >= 0 {
		points = points[max(0, len(points)-n):]
	}
	var out [][]byte
	for _, p := range points {
		out = append(out, bytes.Clone(p.Request(orig)))
	}
	return append(out, bytes.Clone(doc)), orig.Format
}

// replayTurns reads each request of a session by Reparse of the one before, and holds
// it to Parse.
func replayTurns(t *testing.T, name string, doc []byte) (turns, reused int) {
	t.Helper()
	reqs, f := requests(t, name, doc)
	var prev *transcript.Transcript
	var prevTally *measure.Tally
	for i, raw := range reqs {
		if prev == nil {
			var err error
			if prev, err = transcript.Parse(raw, transcript.Options{}); err != nil {
				t.Fatalf("%s turn %d: %v", name, i, err)
			}
			prevTally = measure.Of(prev, reparseCounter, false)
			continue
		}
		if transcript.Reused(prev, raw, transcript.Options{}) {
			reused++
		}
		turns++
		// A JSONL request of one record reads as a JSON value; reuse needs two.
		wantReuse := reuses(f) && (!f.JSONL() || bytes.Count(bytes.TrimSpace(raw), []byte("\n")) > 0)
		prev, prevTally = sameReparse(t, fmt.Sprintf("%s turn %d", name, i), prev, prevTally, raw, transcript.Options{}, wantReuse)
	}
	return turns, reused
}

// TestReparseAppendedInPlace reads each request of JSONL sessions by Reparse of the one
// before where each request is the one before with its new lines appended in the same
// memory, as ctx-replay builds them: the lines the two share are then known without
// being split or compared again, and the result must still be Parse's.
func TestReparseAppendedInPlace(t *testing.T) {
	for name, doc := range generated(t, 150<<10) {
		reqs, f := requests(t, name, doc)
		if !f.JSONL() {
			continue
		}
		last := len(reqs[len(reqs)-1])
		buf := make([]byte, 0, last)
		var prev *transcript.Transcript
		var prevTally *measure.Tally
		turns := 0
		for i, req := range reqs {
			if !bytes.HasPrefix(req, buf) {
				// a compaction of the client's: the history starts again
				buf, prev = append(make([]byte, 0, last), req...), nil
			} else {
				buf = append(buf, req[len(buf):]...)
			}
			if cap(buf) != last {
				t.Fatalf("%s turn %d: the buffer moved", name, i)
			}
			raw := buf[:len(buf):len(buf)]
			if prev == nil || len(raw) == len(prev.Doc) {
				var err error
				if prev, err = transcript.Parse(raw, transcript.Options{}); err != nil {
					t.Fatalf("%s turn %d: %v", name, i, err)
				}
				prevTally = measure.Of(prev, reparseCounter, false)
				continue
			}
			wantReuse := bytes.Count(bytes.TrimSpace(raw), []byte("\n")) > 0
			prev, prevTally = sameReparse(t, fmt.Sprintf("%s turn %d", name, i), prev, prevTally, raw, transcript.Options{}, wantReuse)
			turns++
		}
		if turns < 3 {
			t.Errorf("%s: %d turns read in place", name, turns)
		}
	}
}

// generated are sessions of every format testgen writes, in the shapes of the agents'
// versions it knows too.
func generated(t testing.TB, size int) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	gen := func(name string, o testgen.Options) {
		var buf bytes.Buffer
		if err := testgen.Generate(&buf, o); err != nil {
			t.Fatal(err)
		}
		docs[name] = buf.Bytes()
	}
	for _, f := range testgen.Formats {
		gen(f, testgen.Options{Format: f, Size: size, Seed: 7, Images: true, Pinned: true})
	}
	gen("claude-code 2.1", testgen.Options{Format: "claude-code", Size: size, Seed: 8, Version: "2.1", Compactions: 2, Preserve: true, Pinned: true})
	gen("codex 0.114", testgen.Options{Format: "codex", Size: size, Seed: 9, Version: "0.114", Compactions: 2, Pinned: true})
	return docs
}

func TestReparseTurnsGenerated(t *testing.T) {
	size := 150 << 10
	if invariant.IsLong() {
		size = 1 << 20
	}
	for name, doc := range generated(t, size) {
		turns, reused := replayTurns(t, name, doc)
		t.Logf("%s: %d turns, %d read by reuse", name, turns, reused)
		if turns == 0 {
			t.Errorf("%s: no turns", name)
		}
	}
}

// TestReparseTurnsCorpus replays corpus sessions, each request read by Reparse of the one
// before: 40 spread over the corpus, every one (271 files, 2,898 turns, about 10 s) with
// CTXKIT_LONG=1, which .ci/run sets.
func TestReparseTurnsCorpus(t *testing.T) {
	files := invariant.Quick(invariant.CorpusFiles(t), 40)
	total, reused := 0, 0
	for _, path := range files {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, r := replayTurns(t, filepath.Base(path), doc)
		total, reused = total+n, reused+r
	}
	t.Logf("%d files, %d turns, %d read by reuse", len(files), total, reused)
}

// edit changes a document as a tier or an agent might between two requests: a message's
// text changed, messages dropped, a message copied elsewhere or added at the end, a
// message written with other white space. It returns the new bytes and what it did.
func edit(rng *rand.Rand, tr *transcript.Transcript) ([]byte, string) {
	doc := tr.Doc
	// The units edited: the message array's elements, or the lines of a JSONL document.
	var units []transcript.Span
	if tr.Format.JSONL() {
		for _, r := range tr.Records {
			units = append(units, transcript.Span{Start: r.Span.Start, End: r.Next})
		}
	} else {
		for _, m := range tr.Messages {
			if !m.Header && doc[m.Span.Start] == '{' {
				units = append(units, m.Span)
			}
		}
	}
	if len(units) == 0 {
		return []byte(doc), "nothing"
	}
	splice := func(at, end int, with string) []byte {
		return []byte(doc[:at] + with + doc[end:])
	}
	u := units[rng.IntN(len(units))]
	unit := doc[u.Start:u.End]
	sep := "," // what follows an element before the next
	if tr.Format.JSONL() {
		sep = ""
		if !strings.HasSuffix(unit, "\n") {
			unit += "\n"
		}
	}
	switch rng.IntN(6) {
	case 0: // a text changed
		var texts []transcript.Span
		for _, m := range tr.Messages {
			for _, b := range m.Blocks {
				if !b.BodyJSON && !b.Body.IsZero() && b.Body.Start >= u.Start && b.Body.End <= u.End {
					texts = append(texts, b.Body)
				}
			}
		}
		if len(texts) == 0 {
			return splice(u.Start, u.Start, ""), "nothing"
		}
		s := texts[rng.IntN(len(texts))]
		return splice(s.Start, s.End, fmt.Sprintf(`"edited %d"`, rng.IntN(1000))), "text changed"
	case 1: // messages dropped
		k := rng.IntN(len(units))
		n := 1 + rng.IntN(min(3, len(units)-k))
		end := units[k+n-1].End
		if !tr.Format.JSONL() {
			// the separator after them, or before them for the last
			if rest := strings.TrimLeft(doc[end:], " \t\r\n"); strings.HasPrefix(rest, ",") {
				end = len(doc) - len(rest) + 1
			} else if k > 0 {
				return splice(units[k-1].End, end, ""), "dropped at the end"
			}
		}
		return splice(units[k].Start, end, ""), fmt.Sprintf("%d dropped", n)
	case 2: // a message copied elsewhere
		at := units[rng.IntN(len(units))].Start
		return splice(at, at, unit+sep), "copied"
	case 3: // a message added at the end
		last := units[len(units)-1]
		if tr.Format.JSONL() {
			return splice(len(doc), len(doc), unit), "added"
		}
		return splice(last.End, last.End, ","+unit), "added"
	case 4: // white space changed inside a message
		if i := strings.Index(unit, `":`); i >= 0 {
			return splice(u.Start+i+2, u.Start+i+2, " "), "re-encoded"
		}
		return []byte(doc), "nothing"
	}
	// the first messages dropped, as ctx-trim drops them
	n := 1 + rng.IntN(min(4, len(units)))
	if tr.Format.JSONL() {
		return splice(units[0].Start, units[n-1].End, ""), "trimmed"
	}
	end := units[n-1].End
	if rest := strings.TrimLeft(doc[end:], " \t\r\n"); strings.HasPrefix(rest, ",") {
		return splice(units[0].Start, len(doc)-len(rest)+1, ""), "trimmed"
	}
	return []byte(doc), "nothing"
}

// TestReparseEdits holds Reparse to Parse over random edits of every format, each edit
// made to the document the edit before made (a quick property test).
func TestReparseEdits(t *testing.T) {
	steps := 60
	if invariant.IsLong() {
		steps = 400
	}
	for name, doc := range generated(t, 60<<10) {
		rng := rand.New(rand.NewPCG(1, uint64(len(doc))))
		prev, err := transcript.Parse(doc, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		prevTally := measure.Of(prev, reparseCounter, false)
		reused := 0
		for i := range steps {
			raw, what := edit(rng, prev)
			if transcript.Reused(prev, raw, transcript.Options{}) {
				reused++
			}
			again, _ := transcript.Parse([]byte(prev.Doc), transcript.Options{})
			next, nextTally := sameReparse(t, fmt.Sprintf("%s edit %d (%s)", name, i, what), prev, prevTally, raw, transcript.Options{}, false)
			if !reflect.DeepEqual(again, prev) {
				t.Fatalf("%s edit %d: Reparse changed the transcript it reused", name, i)
			}
			if next == nil || len(next.Messages) < 4 {
				// refused, or too little left to edit: start again
				next, _ = transcript.Parse(doc, transcript.Options{})
				nextTally = measure.Of(next, reparseCounter, false)
			}
			prev, prevTally = next, nextTally
		}
		t.Logf("%s: %d edits, %d read by reuse", name, steps, reused)
		if f, _ := transcript.ParseFormat(strings.Fields(name)[0]); reuses(f) && reused < steps/2 {
			t.Errorf("%s: only %d of %d edits read by reuse", name, reused, steps)
		}
	}
}

// TestReparsePinsMove holds Reparse to Parse where a message becomes, or stops being, the
// first user message, whose reminders alone are pinned in Anthropic requests and Claude
// Code logs: reused as it was read in prev, it would keep or lack the marks.
func TestReparsePinsMove(t *testing.T) {
	const (
		u1 = `{"role":"user","content":[{"type":"text","text":"<system-reminder>a</system-reminder>"},{"type":"text","text":"one"}]}`
		a1 = `{"role":"assistant","content":"ok"}`
		u2 = `{"role":"user","content":[{"type":"text","text":"<system-reminder>b</system-reminder>"},{"type":"text","text":"two"}]}`
	)
	line := func(uuid, parent, typ, msg string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return fmt.Sprintf(`{"type":%q,"uuid":%q,"parentUuid":%s,"sessionId":"s","message":%s}`+"\n", typ, uuid, p, msg)
	}
	cases := []struct {
		name, before, after string
		pinned              int // the message whose first block is pinned after
	}{
		{"anthropic, first user dropped", `{"model":"claude-x","messages":[` + u1 + `,` + a1 + `,` + u2 + `]}`, `{"model":"claude-x","messages":[` + u2 + `]}`, 0},
		{"anthropic, first user added", `{"model":"claude-x","messages":[` + u2 + `]}`, `{"model":"claude-x","messages":[` + u1 + `,` + a1 + `,` + u2 + `]}`, 0},
		{"claude-code, first user dropped",
			line("1", "", "user", u1) + line("2", "1", "assistant", a1) + line("3", "2", "user", u2),
			line("2", "", "assistant", a1) + line("3", "2", "user", u2), 1},
		{"claude-code, first user added",
			line("2", "", "assistant", a1) + line("3", "2", "user", u2),
			line("1", "", "user", u1) + line("2", "1", "assistant", a1) + line("3", "2", "user", u2), 0},
	}
	for _, c := range cases {
		prev, err := transcript.Parse([]byte(c.before), transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := sameReparse(t, c.name, prev, measure.Of(prev, reparseCounter, false), []byte(c.after), transcript.Options{}, true)
		for i, m := range got.Messages {
			if pinned := len(m.Blocks) > 0 && m.Blocks[0].Pinned; pinned != (i == c.pinned) {
				t.Errorf("%s: message %d pinned %v", c.name, i, pinned)
			}
		}
	}
}

// TestReparseWrapperChanged: where the bytes around the message array change (the system
// prompt, the tools, a setting), the wrapper is read again and the messages still reused.
func TestReparseWrapperChanged(t *testing.T) {
	const (
		u = `{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"hi"}]}`
		a = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]}`
		r = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}`
	)
	cases := []struct{ name, before, after string }{
		{"the system prompt changed", `{"system":"s","messages":[` + u + `]}`, `{"system":[{"type":"text","text":"t"}],"messages":[` + u + `,` + a + `]}`},
		{"the system prompt added", `{"model":"claude-x","messages":[` + u + `,` + a + `]}`, `{"model":"claude-x","system":"s","messages":[` + u + `,` + a + `,` + r + `]}`},
		{"the system prompt dropped", `{"system":"s","messages":[` + u + `,` + a + `]}`, `{"model":"claude-x","messages":[` + u + `,` + a + `,` + r + `]}`},
		{"the tools after the array changed", `{"messages":[` + u + `],"tools":[{"name":"Read"}],"model":"claude-x"}`, `{"messages":[` + u + `,` + a + `],"tools":[{"name":"Read"},{"name":"Bash"}],"model":"claude-y"}`},
		{"white space around the array", `{"system":"s","messages":[` + u + `]}`, "{\n \"system\": \"s\",\n \"messages\": [" + u + `, ` + a + "]\n}\n"},
		{"a bare array re-indented", `[` + u + `,` + a + `]`, " [\n  " + u + ",\n  " + a + ",\n  " + r + "\n]\n"},
		{"instructions changed", `{"instructions":"a","input":[{"type":"message","role":"user","content":"hi"}]}`, `{"instructions":"b","input":[{"type":"message","role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`},
	}
	for _, c := range cases {
		prev, err := transcript.Parse([]byte(c.before), transcript.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sameReparse(t, c.name, prev, measure.Of(prev, reparseCounter, false), []byte(c.after), transcript.Options{}, true)
	}
	// Read as another format now: Parse.
	prev, _ := transcript.Parse([]byte(`{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`), transcript.Options{})
	after := []byte(`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`)
	if transcript.Reused(prev, after, transcript.Options{}) {
		t.Error("reuse taken of a request read as another format")
	}
	sameReparse(t, "another format", prev, measure.Of(prev, reparseCounter, false), after, transcript.Options{}, false)
}

// TestReparseFallback checks that Reparse reads the document whole where reuse is not
// safe, and still gives Parse's transcript.
func TestReparseFallback(t *testing.T) {
	const (
		u = `{"role":"user","content":"hi"}`
		a = `{"role":"assistant","content":"ok"}`
	)
	cline := `[{"role":"user","content":[{"type":"text","text":"<task>x</task>"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"<read_file><path>a</path></read_file>"}]},` +
		`{"role":"user","content":[{"type":"text","text":"[read_file for 'a'] Result:\nA"}]}]`
	cases := []struct {
		name, before, after string
		o                   transcript.Options
	}{
		{"cline: a result is read by the call before it", cline, strings.TrimSuffix(cline, "]") + `,` + a + `]`, transcript.Options{}},
		{"--path", `{"x":{"m":[` + u + `]}}`, `{"x":{"m":[` + u + `,` + a + `]}}`, transcript.Options{Path: "x.m"}},
		{"input is a string", `{"input":"hi"}`, `{"input":"hi there"}`, transcript.Options{}},
		{"a log of one record", `{"type":"user","uuid":"1","parentUuid":null,"message":` + u + `}` + "\n", `{"type":"user","uuid":"1","parentUuid":null,"message":` + u + `}` + "\n\n", transcript.Options{}},
		{"not a document", `[` + u + `]`, `[` + u + `,]`, transcript.Options{}},
		{"a broken line", `{"type":"user","uuid":"1","message":` + u + "}\n" + `{"type":"user","uuid":"2","message":` + u + "}\n", `{"type":"user","uuid":"1","message":` + u + "}\n" + `{"type":"user","uuid":"2","message":` + u + "\n", transcript.Options{}},
		{"a key given twice", `[` + u + `]`, `[` + u + `,{"role":"user","role":"user","content":"x"}]`, transcript.Options{}},
	}
	for _, c := range cases {
		prev, err := transcript.Parse([]byte(c.before), c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if transcript.Reused(prev, []byte(c.after), c.o) {
			t.Errorf("%s: reuse taken", c.name)
		}
		sameReparse(t, c.name, prev, measure.Of(prev, reparseCounter, false), []byte(c.after), c.o, false)
	}
	// Other options, and a transcript Parse did not make.
	prev, _ := transcript.Parse([]byte(`[`+u+`]`), transcript.Options{})
	after := []byte(`[` + u + `,` + a + `]`)
	if transcript.Reused(prev, after, transcript.Options{Format: transcript.Anthropic}) {
		t.Error("reuse taken with other options")
	}
	if !transcript.Reused(prev, after, transcript.Options{Name: "x.json"}) {
		t.Error("reuse not taken with only another name")
	}
	outline, data, err := transcript.Stream(strings.NewReader(`{"type":"user","uuid":"1","message":`+u+"}\n"+`{"type":"user","uuid":"2","message":`+u+"}\n"), transcript.Options{}, func(int, *transcript.Transcript) error { return nil })
	if err != nil || data != nil {
		t.Fatal(err)
	}
	streamed := outline.Conversation(nil)
	if transcript.Reused(streamed, []byte(`{"type":"user","uuid":"1","message":`+u+"}\n"), transcript.Options{}) {
		t.Error("reuse taken of a streamed conversation")
	}
}

// FuzzReparse holds Reparse to Parse, and OfNext to Of, on any two documents, seeded
// with the first requests of small sessions of every format (small, so that the fuzzer
// minimizes what it finds in seconds), the next request and edits of them.
func FuzzReparse(f *testing.F) {
	for name, doc := range generated(f, 8<<10) {
		reqs, _ := requests(f, name, doc)
		for i := 0; i+1 < min(3, len(reqs)); i++ {
			f.Add(reqs[i], reqs[i+1])
			prev, err := transcript.Parse(reqs[i], transcript.Options{})
			if err != nil {
				f.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(2, uint64(i)))
			next, _ := edit(rng, prev)
			f.Add(reqs[i], next)
		}
	}
	f.Fuzz(func(t *testing.T, before, after []byte) {
		// Copies: the fuzzing engine's may share memory, which the check that nothing
		// refers to the document before cannot tell from a reference.
		before, after = bytes.Clone(before), bytes.Clone(after)
		prev, err := transcript.Parse(before, transcript.Options{})
		if err != nil {
			return
		}
		sameReparse(t, "fuzz", prev, measure.Of(prev, reparseCounter, false), after, transcript.Options{}, false)
	})
}

// SameMessageBytes is MessageBytes compared, without the join: over pairs of messages of
// two reads of each generated session (the same message, its neighbours, and others).
func TestSameMessageBytes(t *testing.T) {
	for name, doc := range generated(t, 60<<10) {
		a, err := transcript.Parse(doc, transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := transcript.Parse(bytes.Clone(doc), transcript.Options{})
		if err != nil {
			t.Fatal(err)
		}
		same := 0
		for j := range a.Messages {
			for _, i := range []int{j, j + 1, j - 1, len(b.Messages) - 1 - j} {
				if i < 0 || i >= len(b.Messages) {
					continue
				}
				want := a.MessageBytes(j) == b.MessageBytes(i)
				if got := transcript.SameMessageBytes(a, j, b, i); got != want {
					t.Fatalf("%s: messages %d and %d: SameMessageBytes %v, MessageBytes equal %v", name, j, i, got, want)
				}
				if want {
					same++
				}
			}
		}
		if same < len(a.Messages) {
			t.Errorf("%s: %d pairs the same, want at least %d", name, same, len(a.Messages))
		}
	}
}

// TestParseChecked: a document its caller has found to be JSON (Options.Checked) reads as
// it does checked, and as the next one's Reparse finds it, in every JSON format.
func TestParseChecked(t *testing.T) {
	read := 0
	for name, doc := range generated(t, 60<<10) {
		f, err := transcript.ParseFormat(name)
		if err != nil || f.JSONL() {
			continue // (a log: Checked is for one JSON document)
		}
		read++
		want, err := transcript.Parse(doc, transcript.Options{Format: f})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := transcript.Parse(doc, transcript.Options{Format: f, Checked: true})
		if err != nil {
			t.Fatalf("%s: checked: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read checked, it differs: %s", name, firstDifference(got, want))
		}
		if reuses(f) && !transcript.Reused(got, doc, transcript.Options{Format: f}) {
			t.Errorf("%s: the next Reparse does not read from a document read checked", name)
		}
	}
	if read < 3 {
		t.Errorf("%d JSON formats read", read)
	}
}
