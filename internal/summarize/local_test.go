package summarize

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/invariant"
	"github.com/ctxkit/ctxkit/internal/measure"
	"github.com/ctxkit/ctxkit/internal/testgen"
	"github.com/ctxkit/ctxkit/internal/transcript"
)

// localDoc is a parsed document the extraction tests run on.
type localDoc struct {
	name string
	t    *transcript.Transcript
}

// localDocs are the samples, every corpus file when the corpus is there, and generated
// documents of every format.
func localDocs(t *testing.T) []localDoc {
	t.Helper()
	files := invariant.Samples(t)
	if _, err := os.Stat(corpusDir); err == nil {
		files = append(files, invariant.CorpusFiles(t)...)
	}
	var docs []localDoc
	add := func(name string, in []byte) {
		tr, err := transcript.Parse(in, transcript.Options{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs = append(docs, localDoc{name, tr})
	}
	for _, path := range files {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		add(path, in)
	}
	for _, format := range testgen.Formats {
		for seed, size := range []int{20 << 10, 300 << 10, 1 << 20} {
			var buf bytes.Buffer
			o := testgen.Options{Format: format, Size: size, Seed: int64(seed + 1), Images: seed == 1}
			if err := testgen.Generate(&buf, o); err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("testgen %s %d seed %d", format, size, o.Seed), buf.Bytes())
		}
	}
	return docs
}

var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus")

// messageLists are the lists of messages Local is tried on: all of them; what the tier
// summarizes when it acts at the document's size; prefixes, which cut calls from their
// results; and every other message, which leaves calls without results and results
// without calls.
func messageLists(t *transcript.Transcript) map[string][]int {
	n := len(t.Messages)
	all := make([]int, n)
	var odd []int
	for i := range all {
		all[i] = i
		if i%2 == 1 {
			odd = append(odd, i)
		}
	}
	o := Defaults()
	o.Counter = estimate()
	o.Tokens, o.PerMessage = measure.PerMessage(t, o.Counter)
	o.Effective = o.Tokens
	return map[string][]int{
		"all":         all,
		"summarized":  newOnly(t, Choose(t, o)),
		"first third": all[:n/3],
		"first half":  all[:n/2],
		"odd":         odd,
	}
}

// TestLocalMatchesReference: Local gives what the summarizer gave before it became
// incremental, on every document and list of messages.
func TestLocalMatchesReference(t *testing.T) {
	docs := localDocs(t)
	compared, reused, differ := 0, 0, 0
	for _, d := range docs {
		for list, msgs := range messageLists(d.t) {
			got, want := pairedSections(Local(d.t, msgs)), pairedSections(localReference(d.t, msgs))
			// The one change: where ids are reused, each call gets its own result, not the
			// last one with its id.
			if reusedIDs(d.t, msgs) {
				reused++
				if paired := pairedSections(localReferencePaired(d.t, msgs)); !reflect.DeepEqual(paired, want) {
					differ++
					want = paired
				}
			}
			if !reflect.DeepEqual(got, want) {
				meta := Meta{Messages: len(msgs), Backend: "local"}
				t.Errorf("%s, %s messages: Local differs from the reference\ngot:\n%s\nwant:\n%s", d.name, list, Render(got, meta), Render(want, meta))
			}
			compared++
		}
	}
	t.Logf("%d documents, %d message lists compared; %d reuse call ids, %d of them summarized differently than before", len(docs), compared, reused, differ)
}

// pairedSections is what of a summary the pairing of calls with results decides: the
// files read and changed, the commands run (without their outcome, which issue 17 reads
// anew: a search that found nothing, a traceback).
func pairedSections(s Sections) Sections {
	out := Sections{"Files read": s["Files read"], "Files changed": s["Files changed"]}
	for _, c := range s["Commands and tests"] {
		cmd, _, _ := strings.Cut(c, " → ")
		out["Commands and tests"] = append(out["Commands and tests"], cmd)
	}
	return out
}

// reusedIDs reports whether two calls or two results among the messages have the same id.
func reusedIDs(t *transcript.Transcript, msgs []int) bool {
	calls, results := map[string]bool{}, map[string]bool{}
	for _, mi := range msgs {
		for _, b := range t.Messages[mi].Blocks {
			seen, ids := calls, []string{b.ToolID}
			switch {
			case b.Kind == transcript.ToolResult:
				seen = results
				if len(b.ToolIDs) > 0 {
					ids = b.ToolIDs
				}
			case b.Kind != transcript.ToolCall:
				continue
			}
			for _, id := range ids {
				if seen[id] {
					return true
				}
				seen[id] = true
			}
		}
	}
	return false
}

// TestExtractorPairing: results answer their calls whatever order they come in, the
// sections keep call order, and Sections does not end the extraction.
func TestExtractorPairing(t *testing.T) {
	call := func(id, name, input string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}`
	}
	result := func(id, text string, isError bool) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + text + `","is_error":` + fmt.Sprint(isError) + `}]}`
	}
	bash := func(id, cmd string) string { return call(id, "Bash", `{"command":"`+cmd+`"}`) }
	read := func(id, path string) string { return call(id, "Read", `{"file_path":"`+path+`"}`) }
	msgs := []string{
		`{"role":"user","content":"fix the build"}`,
		result("early", "exit code 2", true), // before its call
		read("r1", "/a.go"),                  // answered late, after r2
		read("r2", "/b.go"),
		result("r2", "package b", false),
		bash("early", "make"),
		bash("t", "go test"), // the id is reused: each call has its own result
		result("t", "FAIL x", true),
		bash("t", "go test"),
		result("t", "ok x", false),
		bash("u", "ls"), // two calls wait with one id: first come, first answered
		bash("u", "pwd"),
		result("u", "no such file", true),
		result("u", "/r", false),
		bash("lost", "go vet"), // never answered
		result("r1", "no such file", true),
	}
	tr, err := transcript.Parse([]byte(`{"messages":[`+strings.Join(msgs, ",")+`]}`), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s Sections, heading string, want ...string) {
		t.Helper()
		if !slices.Equal(s[heading], want) {
			t.Errorf("%s:\n%q\nwant\n%q", heading, s[heading], want)
		}
	}
	x := NewExtractor()
	for mi := range len(msgs) - 1 {
		x.Add(tr, mi)
	}
	// /a.go has no result yet: read, for now.
	check(x.Sections(), "Files read", "/a.go", "/b.go")
	x.Add(tr, len(msgs)-1)
	s := x.Sections()
	check(s, "Files read", "/b.go")
	check(s, "Commands and tests", "`make` → exit 2", "`go test` → failed: FAIL x: FAIL x", "`go test` → ran: ok x",
		"`ls` → failed", "`pwd` → ran", "`go vet` → no result recorded")
	check(s, "Errors", "`make`: exit code 2 [unresolved]", "`go test`: FAIL x [fixed]", "`ls`: no such file [unresolved]",
		"Read(/a.go): no such file [unresolved]")
	var all []int
	for mi := range msgs {
		all = append(all, mi)
	}
	if !reflect.DeepEqual(Local(tr, all), s) {
		t.Errorf("Local differs from the extractor fed by hand")
	}
	// Before, both runs of go test had the last result: the failure was lost.
	check(localReference(tr, all), "Commands and tests", "`make` → exit 2", "`go test` → ran: ok x", "`go test` → ran: ok x",
		"`ls` → ran", "`pwd` → ran", "`go vet` → no result recorded")
}

// Cline appends <environment_details> to user messages and labels its results: the agent's
// text, never quoted as a user request.
func TestLocalSkipsAgentText(t *testing.T) {
	doc := `[{"role":"user","content":[{"type":"text","text":"<task>\nFix the build\n</task>"},{"type":"text","text":"<environment_details>\n# VSCode Open Tabs\nmain.go\n</environment_details>"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"main.go"}}]},` +
		`{"role":"user","content":[{"type":"text","text":"[read_file for 'main.go'] Result:\npackage main"},{"type":"text","text":"<environment_details>\n# VSCode Open Tabs\nmain.go\n</environment_details>"}]},` +
		`{"role":"assistant","content":"Done."}]`
	tr, err := transcript.Parse([]byte(doc), transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != transcript.Cline {
		t.Fatalf("read as %s, want cline", tr.Format)
	}
	got := strings.Join(Local(tr, []int{0, 1, 2, 3})["Goal and user requests"], "\n")
	if strings.Contains(got, "environment_details") || !strings.Contains(got, "Fix the build") {
		t.Errorf("requests:\n%s\nwant the task only", got)
	}
}
